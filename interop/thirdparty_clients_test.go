package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/transport/command"
	mcpgoclient "github.com/mark3labs/mcp-go/client"
	mcpgotransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// thirdPartyClients lists the clients of the matrix; the npm ones only
// when installed. home is the Inspector's HOME (it keeps a catalog).
func thirdPartyClients(npm npmEnv, home string) []*client {
	legacyOnNPM := func(name string) func(string) string {
		return func(family string) string {
			if family == "pmcp" {
				return ""
			}
			return name
		}
	}
	npmDirect := func(tg *target) string {
		if tg.direct && tg.family != "pmcp" {
			return "a modern-only client cannot reach a legacy-only server directly"
		}
		return ""
	}
	cs := []*client{
		{name: "pmcp-legacy", era: legacyVersion, tasks: true, run: runPMCP(pmcp.EraLegacy)},
		{name: "pmcp-modern", era: modernVersion, tasks: true, run: runPMCP(pmcp.EraModern), skip: npmDirect, baseline: legacyOnNPM("pmcp-legacy")},
		{name: "go-sdk-legacy", era: legacyVersion, run: runGoSDK(legacyVersion)},
		{name: "go-sdk", era: modernVersion, run: runGoSDK(""), skip: npmDirect, baseline: legacyOnNPM("go-sdk-legacy")},
		{name: "mcp-go-legacy", era: legacyVersion, run: runMCPGo(legacyVersion)},
		{name: "mcp-go", era: modernVersion, run: runMCPGo(""), skip: npmDirect, baseline: legacyOnNPM("mcp-go-legacy")},
	}
	if npm.clients != "" {
		cs = append(cs,
			&client{name: "ts-sdk", era: legacyVersion, tasks: true, run: runTS(npm)},
			&client{name: "inspector-cli", era: legacyVersion, run: runInspector(npm, home)})
	}
	return cs
}

// ---- TypeScript SDK 1.32.2 (testdata/tsclient/probe.mjs) ----

func runTS(npm npmEnv) func(ctx context.Context, tg *target, ps []probe) (results, error) {
	return func(ctx context.Context, tg *target, ps []probe) (results, error) {
		req := map[string]any{"sdk": npm.clients, "probes": ps}
		if tg.url != "" {
			req["url"] = tg.url
		} else {
			req["command"] = tg.cmd
		}
		arg, err := json.Marshal(req)
		if err != nil {
			return nil, err
		}
		script, err := filepath.Abs(filepath.Join("testdata", "tsclient", "probe.mjs"))
		if err != nil {
			return nil, err
		}
		out, err := runNode(ctx, npm.node, nil, script, string(arg))
		if err != nil {
			return nil, err
		}
		var r results
		if err := json.Unmarshal(out, &r); err != nil {
			return nil, fmt.Errorf("probe.mjs printed %q: %v", out, err)
		}
		return r, nil
	}
}

// runNode runs node with args and returns its stdout; stderr goes into
// the error.
func runNode(ctx context.Context, node string, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	errb := &tailBuffer{}
	cmd.Stdout, cmd.Stderr = &out, errb
	if err := cmd.Run(); err != nil {
		return out.Bytes(), &nodeError{err: err, stderr: errb.String()}
	}
	return out.Bytes(), nil
}

type nodeError struct {
	err    error
	stderr string
}

func (e *nodeError) Error() string {
	s := e.stderr
	if len(s) > 3000 {
		s = s[len(s)-3000:]
	}
	return fmt.Sprintf("%v\n stderr:\n%s", e.err, s)
}

// ---- Inspector CLI 2.12.0: one process per method ----

// inspectorMethods are the methods its CLI mode can send.
var inspectorMethods = []string{"initialize", "tools/list", "tools/call", "prompts/list", "prompts/get", "resources/list", "resources/read", "resources/templates/list"}

func runInspector(npm npmEnv, home string) func(ctx context.Context, tg *target, ps []probe) (results, error) {
	return func(ctx context.Context, tg *target, ps []probe) (results, error) {
		main := filepath.Join(npm.clients, "node_modules", "@modelcontextprotocol", "inspector", inspectorMain)
		var targetArgs []string
		if tg.url != "" {
			targetArgs = []string{"--transport", "http", "--server-url", tg.url}
		} else {
			// A config file holds the command line: its own "--" would
			// end the Inspector's options.
			cfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"target": map[string]any{"command": tg.cmd[0], "args": tg.cmd[1:]}}})
			if err != nil {
				return nil, err
			}
			f, err := os.CreateTemp(home, "inspector-*.json")
			if err != nil {
				return nil, err
			}
			defer os.Remove(f.Name())
			if _, err := f.Write(cfg); err != nil {
				f.Close()
				return nil, err
			}
			if err := f.Close(); err != nil {
				return nil, err
			}
			targetArgs = []string{"--config", f.Name(), "--server", "target"}
		}
		// Its own HOME (it keeps a catalog there) and no OS keychain.
		env := []string{"HOME=" + home, "MCP_INSPECTOR_SECRET_STORE=memory"}
		r := results{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		sem := make(chan struct{}, inspectorParallel)
		var failed error
		for _, p := range append([]probe{{Name: "initialize", Method: "initialize"}}, ps...) {
			if !slices.Contains(inspectorMethods, p.Method) || p.Progress || p.Task != "" || p.Extra {
				continue
			}
			args := append([]string{main, "--cli"}, targetArgs...)
			args = append(args, inspectorArgs(p)...)
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				out, err := runNode(ctx, npm.node, env, args...)
				var o outcome
				var ne *nodeError
				switch {
				case errors.As(err, &ne):
					o = outcome{Error: &probeError{Code: mcpErrorCode(ne.stderr), Message: ne.Error()}}
				case err != nil:
					mu.Lock()
					failed = err
					mu.Unlock()
					return
				case !json.Valid(out):
					o = outcome{Error: &probeError{Message: fmt.Sprintf("inspector %s printed %q", p.Method, out)}}
				default:
					o = outcome{Result: out}
				}
				mu.Lock()
				r[p.Name] = o
				mu.Unlock()
			}()
		}
		wg.Wait()
		if failed != nil {
			return nil, failed
		}
		return r, nil
	}
}

// inspectorParallel is how many CLI processes of one run go at once
// (each waits mostly on its server).
const inspectorParallel = 4

// inspectorArgs are the CLI's flags for one probe.
func inspectorArgs(p probe) []string {
	args := []string{"--method", p.Method}
	switch p.Method {
	case "tools/call":
		args = append(args, "--tool-name", p.Tool)
		if len(p.Args) > 0 {
			args = append(args, "--tool-arg")
			args = append(args, keyValues(p.Args)...)
		}
	case "prompts/get":
		args = append(args, "--prompt-name", p.Prompt)
		if len(p.PromptArgs) > 0 {
			args = append(args, "--prompt-args")
			for _, k := range sortedKeys(p.PromptArgs) {
				args = append(args, k+"="+p.PromptArgs[k])
			}
		}
	case "resources/read":
		args = append(args, "--uri", p.URI)
	}
	return args
}

// mcpErrorCode finds the JSON-RPC code in the CLI's error report
// ("MCP error -32601: Method not found").
func mcpErrorCode(stderr string) *int64 {
	m := mcpErrorRE.FindStringSubmatch(stderr)
	if m == nil {
		return nil
	}
	c, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return nil
	}
	return &c
}

var mcpErrorRE = regexp.MustCompile(`MCP error (-?[0-9]+)`)

func keyValues(m map[string]any) []string {
	var out []string
	for _, k := range sortedKeys(m) {
		v := m[k]
		if s, ok := v.(string); ok {
			out = append(out, k+"="+s)
		} else {
			b, _ := json.Marshal(v)
			out = append(out, k+"="+string(b))
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// ---- pmcp's own client, either era ----

func runPMCP(era pmcp.Era) func(ctx context.Context, tg *target, ps []probe) (results, error) {
	return func(ctx context.Context, tg *target, ps []probe) (results, error) {
		c := pmcp.NewClient(pmcp.ClientOptions{Name: "interop", Version: "1", Era: era})
		cs, closeTransport, err := connectPMCP(ctx, c, tg)
		if err != nil {
			return nil, err
		}
		defer closeTransport()
		defer cs.Close()
		r := results{"initialize": resultOutcome(map[string]any{"protocolVersion": cs.ProtocolVersion(), "capabilities": cs.ServerCapabilities()}, nil)}
		for _, p := range ps {
			switch p.Method {
			case "ping":
				r[p.Name] = resultOutcome(struct{}{}, cs.Ping(ctx))
			case "tools/list":
				r[p.Name] = resultOutcome(cs.ListTools(ctx, ""))
			case "prompts/list":
				r[p.Name] = resultOutcome(cs.ListPrompts(ctx, ""))
			case "resources/list":
				r[p.Name] = resultOutcome(cs.ListResources(ctx, ""))
			case "resources/templates/list":
				r[p.Name] = resultOutcome(cs.ListResourceTemplates(ctx, ""))
			case "prompts/get":
				r[p.Name] = resultOutcome(cs.GetPrompt(ctx, p.Prompt, p.PromptArgs))
			case "resources/read":
				r[p.Name] = resultOutcome(cs.ReadResource(ctx, p.URI))
			case "completion/complete":
				var cp pmcp.CompleteParams
				if err := remarshal(p.params(), &cp); err != nil {
					return nil, err
				}
				r[p.Name] = resultOutcome(cs.Complete(ctx, &cp))
			case "tools/call":
				if p.Task != "" {
					r[p.Name] = pmcpTask(ctx, cs, p)
					continue
				}
				var progress progressLog
				var opts []pmcp.CallOption
				if p.Progress {
					opts = append(opts, pmcp.WithProgress(func(_ context.Context, pp *pmcp.ProgressParams) { progress.add(pp.Progress) }))
				}
				res, err := cs.CallTool(ctx, p.Tool, p.arguments(), opts...)
				var te *pmcp.ToolError
				if errors.As(err, &te) {
					res, err = te.Result, nil
				}
				r[p.Name] = progress.attach(resultOutcome(res, err))
			}
		}
		return r, nil
	}
}

// connectPMCP connects c to the target: over HTTP, or to the command it
// starts. The returned func closes what connecting started.
func connectPMCP(ctx context.Context, c *pmcp.Client, tg *target) (*pmcp.ClientSession, func(), error) {
	if tg.url != "" {
		cs, err := c.ConnectHTTP(ctx, tg.url, pmcp.HTTPClientOptions{})
		return cs, func() {}, err
	}
	tr, err := command.New(exec.Command(tg.cmd[0], tg.cmd[1:]...), command.Options{Stderr: &tailBuffer{}})
	if err != nil {
		return nil, nil, err
	}
	st, err := tr.Start()
	if err != nil {
		return nil, nil, err
	}
	cs, err := c.Connect(ctx, st)
	if err != nil {
		_ = tr.Close()
		return nil, nil, err
	}
	return cs, func() { _ = tr.Close() }, nil
}

// pmcpTask runs a task probe with pmcp's task API, reporting the steps as
// probe.mjs does.
func pmcpTask(ctx context.Context, cs *pmcp.ClientSession, p probe) outcome {
	type step struct {
		Method string      `json:"method"`
		Result any         `json:"result,omitempty"`
		Error  *probeError `json:"error,omitempty"`
	}
	var steps []step
	fail := func(method string, err error) outcome {
		steps = append(steps, step{Method: method, Error: errOutcome(err).Error})
		return resultOutcome(steps, nil)
	}
	task, err := cs.CallToolTask(ctx, p.Tool, p.arguments(), time.Minute)
	if err != nil {
		return fail("tools/call", err)
	}
	if task.ID() == "" {
		return fail("tools/call", errors.New("no task: the server answered at once"))
	}
	steps = append(steps, step{Method: "tools/call", Result: map[string]any{"task": map[string]any{"taskId": task.ID()}}})
	status := func(method string) error {
		st, err := task.Get(ctx)
		if err != nil {
			return err
		}
		steps = append(steps, step{Method: method, Result: map[string]any{"status": st.Status}})
		return nil
	}
	if p.Task == "cancel" {
		if err := task.Cancel(ctx); err != nil {
			return fail("tasks/cancel", err)
		}
		steps = append(steps, step{Method: "tasks/cancel", Result: map[string]any{}})
		// The runner may take a moment to stop: wait for the end (the
		// status, not Wait's error, is what the probe reports).
		_, _ = task.Wait(ctx, nil)
		if err := status("tasks/get"); err != nil {
			return fail("tasks/get", err)
		}
		return resultOutcome(steps, nil)
	}
	res, err := task.Wait(ctx, nil)
	var te *pmcp.ToolError
	if errors.As(err, &te) {
		res, err = te.Result, nil
	}
	if serr := status("tasks/get"); serr != nil {
		return fail("tasks/get", serr)
	}
	if err != nil {
		return fail("tasks/result", err)
	}
	steps = append(steps, step{Method: "tasks/result", Result: res})
	return resultOutcome(steps, nil)
}

// progressLog collects the progress values a client's handler sees (on
// the SDK's goroutines) for the call in flight.
type progressLog struct {
	mu     sync.Mutex
	values []float64
	seen   chan struct{} // signalled by add (made by awaitFirst)
}

func (l *progressLog) add(v float64) {
	l.mu.Lock()
	l.values = append(l.values, v)
	seen := l.seen
	l.mu.Unlock()
	if seen != nil {
		select {
		case seen <- struct{}{}:
		default:
		}
	}
}

// progressGrace bounds how long a client whose SDK hands notifications to
// its handler asynchronously (go-sdk) waits, after a call's result, for the
// progress that preceded it on the wire.
const progressGrace = 2 * time.Second

// awaitFirst waits until a value was added since the last attach, or for
// progressGrace: go-sdk delivers a result to its caller and notifications
// to their handler on different goroutines, so a fast server's progress
// can reach the handler after the result reached the probe.
func (l *progressLog) awaitFirst(ctx context.Context) {
	l.mu.Lock()
	if l.seen == nil {
		l.seen = make(chan struct{}, 1)
	}
	n, seen := len(l.values), l.seen
	if n == 0 {
		select { // a signal for values an earlier attach took
		case <-seen:
		default:
		}
	}
	l.mu.Unlock()
	if n > 0 {
		return
	}
	timer := time.NewTimer(progressGrace)
	defer timer.Stop()
	select {
	case <-seen:
	case <-timer.C:
	case <-ctx.Done():
	}
}

// attach moves the values seen so far into o.
func (l *progressLog) attach(o outcome) outcome {
	l.mu.Lock()
	o.Progress, l.values = l.values, nil
	l.mu.Unlock()
	return o
}

func remarshal(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}

// ---- go-sdk v1.8.0 (version "": its default, the modern era) ----

func runGoSDK(version string) func(ctx context.Context, tg *target, ps []probe) (results, error) {
	return func(ctx context.Context, tg *target, ps []probe) (results, error) {
		var progress progressLog
		c := gosdk.NewClient(&gosdk.Implementation{Name: "interop-go-sdk", Version: "1.8.0"}, &gosdk.ClientOptions{
			ProgressNotificationHandler: func(_ context.Context, req *gosdk.ProgressNotificationClientRequest) {
				progress.add(req.Params.Progress)
			},
		})
		var tr gosdk.Transport
		if tg.url != "" {
			tr = &gosdk.StreamableClientTransport{Endpoint: tg.url, HTTPClient: &http.Client{}, MaxRetries: -1}
		} else {
			cmd := exec.Command(tg.cmd[0], tg.cmd[1:]...)
			cmd.Stderr = &tailBuffer{}
			tr = &gosdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
		}
		cs, err := c.Connect(ctx, tr, &gosdk.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			return nil, err
		}
		defer cs.Close()
		ir := cs.InitializeResult()
		r := results{"initialize": resultOutcome(map[string]any{"protocolVersion": ir.ProtocolVersion, "capabilities": ir.Capabilities}, nil)}
		for _, p := range ps {
			switch p.Method {
			case "ping":
				r[p.Name] = resultOutcome(struct{}{}, cs.Ping(ctx, nil))
			case "tools/list":
				r[p.Name] = resultOutcome(cs.ListTools(ctx, nil))
			case "prompts/list":
				r[p.Name] = resultOutcome(cs.ListPrompts(ctx, nil))
			case "resources/list":
				r[p.Name] = resultOutcome(cs.ListResources(ctx, nil))
			case "resources/templates/list":
				r[p.Name] = resultOutcome(cs.ListResourceTemplates(ctx, nil))
			case "prompts/get":
				r[p.Name] = resultOutcome(cs.GetPrompt(ctx, &gosdk.GetPromptParams{Name: p.Prompt, Arguments: p.PromptArgs}))
			case "resources/read":
				r[p.Name] = resultOutcome(cs.ReadResource(ctx, &gosdk.ReadResourceParams{URI: p.URI}))
			case "completion/complete":
				var cp gosdk.CompleteParams
				if err := remarshal(p.params(), &cp); err != nil {
					return nil, err
				}
				r[p.Name] = resultOutcome(cs.Complete(ctx, &cp))
			case "tools/call":
				if p.Task != "" {
					continue // go-sdk has no client task API
				}
				params := &gosdk.CallToolParams{Name: p.Tool, Arguments: p.arguments()}
				if p.Progress {
					params.Meta = gosdk.Meta{"progressToken": "go-sdk-progress"}
				}
				o := resultOutcome(cs.CallTool(ctx, params))
				if p.Progress && o.Error == nil {
					progress.awaitFirst(ctx)
				}
				r[p.Name] = progress.attach(o)
			}
		}
		return r, nil
	}
}

// ---- mcp-go v1.2.1 (version "": its default, the modern era) ----

func runMCPGo(version string) func(ctx context.Context, tg *target, ps []probe) (results, error) {
	return func(ctx context.Context, tg *target, ps []probe) (results, error) {
		var opts []mcpgoclient.ClientOption
		if version != "" {
			opts = append(opts, mcpgoclient.WithProtocolVersion(version))
		}
		var tr mcpgotransport.Interface
		if tg.url != "" {
			h, err := mcpgotransport.NewStreamableHTTP(tg.url)
			if err != nil {
				return nil, err
			}
			tr = h
		} else {
			tr = mcpgotransport.NewStdio(tg.cmd[0], nil, tg.cmd[1:]...)
		}
		c := mcpgoclient.NewClient(tr, opts...)
		if err := c.Start(ctx); err != nil {
			return nil, err
		}
		defer c.Close()
		var progress progressLog
		c.OnNotification(func(n mcp.JSONRPCNotification) {
			if v, ok := n.Params.AdditionalFields["progress"].(float64); ok && n.Method == "notifications/progress" {
				progress.add(v)
			}
		})
		init := mcp.InitializeRequest{}
		init.Params.ProtocolVersion = version
		init.Params.ClientInfo = mcp.Implementation{Name: "interop-mcp-go", Version: "1.2.1"}
		ir, err := c.Initialize(ctx, init)
		if err != nil {
			return nil, err
		}
		r := results{"initialize": resultOutcome(map[string]any{"protocolVersion": ir.ProtocolVersion, "capabilities": ir.Capabilities}, nil)}
		for _, p := range ps {
			switch p.Method {
			case "ping":
				r[p.Name] = resultOutcome(struct{}{}, c.Ping(ctx))
			case "tools/list":
				r[p.Name] = resultOutcome(c.ListTools(ctx, mcp.ListToolsRequest{}))
			case "prompts/list":
				r[p.Name] = resultOutcome(c.ListPrompts(ctx, mcp.ListPromptsRequest{}))
			case "resources/list":
				r[p.Name] = resultOutcome(c.ListResources(ctx, mcp.ListResourcesRequest{}))
			case "resources/templates/list":
				r[p.Name] = resultOutcome(c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{}))
			case "prompts/get":
				req := mcp.GetPromptRequest{}
				req.Params.Name, req.Params.Arguments = p.Prompt, p.PromptArgs
				r[p.Name] = resultOutcome(c.GetPrompt(ctx, req))
			case "resources/read":
				req := mcp.ReadResourceRequest{}
				req.Params.URI = p.URI
				r[p.Name] = resultOutcome(c.ReadResource(ctx, req))
			case "completion/complete":
				req := mcp.CompleteRequest{}
				if err := remarshal(p.params(), &req.Params); err != nil {
					return nil, err
				}
				r[p.Name] = resultOutcome(c.Complete(ctx, req))
			case "tools/call":
				if p.Task != "" {
					continue // mcp-go has no client task API
				}
				req := mcp.CallToolRequest{}
				req.Params.Name = p.Tool
				req.Params.Arguments = p.arguments()
				if p.Progress {
					req.Params.Meta = &mcp.Meta{ProgressToken: "mcp-go-progress"}
				}
				r[p.Name] = progress.attach(resultOutcome(c.CallTool(ctx, req)))
			}
		}
		return r, nil
	}
}
