// The TypeScript SDK client of the third-party matrix (thirdparty_test.go).
//
//   node probe.mjs REQUEST_JSON
//
// REQUEST_JSON: {"sdk": DIR (where node_modules/@modelcontextprotocol/sdk
// is), "url": URL | "command": [PROG, ARGS...], "probes": [PROBE...]}.
// Each probe is {"name", "method", "params"?, "progress"?, "task"?}: the
// request is sent exactly as given (no params member when there is none,
// the way the SDK's own list methods send it). It prints one JSON object
// on stdout: {"initialize": RESULT, NAME: {"result": R} | {"error": E} |
// {"result": R, "progress": [P...]}}. The Go test normalises and compares.
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const req = JSON.parse(process.argv[2]);
const sdk = (p) => import(pathToFileURL(path.join(req.sdk, 'node_modules', '@modelcontextprotocol', 'sdk', 'dist', 'esm', p)).href);
const { Client } = await sdk('client/index.js');
const types = await sdk('types.js');

const client = new Client({ name: 'pmcp-interop-ts', version: '1.32.2' }, { capabilities: { tasks: { list: {}, cancel: {}, requests: {} } } });
let transport;
if (req.url) {
	const { StreamableHTTPClientTransport } = await sdk('client/streamableHttp.js');
	transport = new StreamableHTTPClientTransport(new URL(req.url));
} else {
	const { StdioClientTransport } = await sdk('client/stdio.js');
	transport = new StdioClientTransport({ command: req.command[0], args: req.command.slice(1), stderr: 'inherit' });
}

// The negotiated version, from the initialize response itself (the SDK
// keeps it only on HTTP transports).
let protocolVersion = null;
const start = transport.start.bind(transport);
transport.start = async () => {
	const deliver = transport.onmessage;
	transport.onmessage = (m, extra) => {
		if (protocolVersion === null && m?.result?.protocolVersion) {
			protocolVersion = m.result.protocolVersion;
		}
		deliver?.(m, extra);
	};
	return start();
};

const out = {};
const failure = (e) => ({ error: { code: e?.code ?? null, message: String(e?.message ?? e) } });
const timeout = 20000;
try {
	await client.connect(transport, { timeout });
	out.initialize = {
		result: {
			protocolVersion,
			capabilities: client.getServerCapabilities(),
			serverInfo: client.getServerVersion(),
		},
	};
	for (const p of req.probes) {
		try {
			out[p.name] = await probe(p);
		} catch (e) {
			out[p.name] = failure(e);
		}
	}
} catch (e) {
	out.initialize = failure(e);
} finally {
	await client.close().catch(() => {});
}
process.stdout.write(JSON.stringify(out) + '\n');
process.exit(0);

async function probe(p) {
	const request = { method: p.method };
	if (p.params !== undefined) {
		request.params = p.params;
	}
	if (p.task) {
		return await taskProbe(p, request);
	}
	const progress = [];
	const options = { timeout };
	if (p.progress) {
		options.onprogress = (n) => progress.push(n.progress);
	}
	const result = await client.request(request, types.ResultSchema, options);
	return p.progress ? { result, progress } : { result };
}

// taskProbe: a task-augmented tools/call (params.task), then tasks/get
// until the task is terminal (or, with "cancel", tasks/cancel first) and
// tasks/result. The steps' results are reported in order (tasks/cancel's
// as {}: the final status is the next tasks/get's).
async function taskProbe(p, request) {
	const steps = [];
	const created = await client.request(request, types.CreateTaskResultSchema, { timeout });
	steps.push({ method: 'tools/call', result: created });
	const id = created.task.taskId;
	if (p.task === 'cancel') {
		await client.experimental.tasks.cancelTask(id, { timeout });
		steps.push({ method: 'tasks/cancel', result: {} });
	}
	let status;
	for (let i = 0; i < 200; i++) {
		status = await client.experimental.tasks.getTask(id, { timeout });
		if (['completed', 'failed', 'cancelled'].includes(status.status)) {
			break;
		}
		await new Promise((r) => setTimeout(r, Math.min(status.pollInterval ?? 50, 100)));
	}
	steps.push({ method: 'tasks/get', result: status });
	if (p.task !== 'cancel') {
		try {
			steps.push({ method: 'tasks/result', result: await client.experimental.tasks.getTaskResult(id, types.ResultSchema, { timeout }) });
		} catch (e) {
			steps.push({ method: 'tasks/result', ...failure(e) });
		}
	}
	return { result: steps };
}
