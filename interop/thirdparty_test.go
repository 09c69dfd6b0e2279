package interop

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp/jsonrpc"
	"github.com/mark3labs/mcp-go/mcp"
	gosdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The third-party matrix (issue 18's acceptance): the clients other people
// use — the TypeScript SDK, the Inspector CLI, go-sdk, mcp-go, and ours in
// both eras — run the same probes against `pmcp serve` directly and
// through `pmcp bridge` (stdio child or HTTP upstream, served over HTTP or
// stdio), and against the reference npm servers directly and bridged. A
// client's results through a bridge must equal its results against the
// upstream itself.
//
// The npm programs come from scripts/test.sh (scripts/conformance.sh npm):
// without them the npm clients and servers are left out locally, and the
// test fails under CI=true.
const (
	envNode           = "PMCP_NODE"                       // Node >= 22
	envClients        = "PMCP_THIRDPARTY_CLIENTS"         // @modelcontextprotocol/sdk and inspector
	envEverythingDir  = "PMCP_SERVER_EVERYTHING"          // @modelcontextprotocol/server-everything
	envFilesystemDir  = "PMCP_SERVER_FILESYSTEM"          // @modelcontextprotocol/server-filesystem
	envMatrixTargets  = "PMCP_MATRIX_TARGETS"             // a regexp: run only the targets it matches (and their baselines)
	thirdPartyWorkers = 4                                 // client runs at once
	thirdPartyTimeout = 90 * time.Second                  // one client run, every probe
	modernVersion     = "2026-07-28"                      // what the modern clients must negotiate
	legacyVersion     = "2025-11-25"                      // what the legacy clients must negotiate
	maxProcessLog     = 64 << 10                          // the tail of a process's stderr kept for failures
	inspectorMain     = "clients/launcher/build/index.js" // the package's "inspector" bin
)

// npmEnv is where the npm programs are; a zero field means "not installed".
type npmEnv struct {
	node, clients, everything, filesystem string
}

// thirdPartyNPM reads the environment. Missing programs fail the test
// under CI=true and are left out (logged) otherwise.
func thirdPartyNPM(t *testing.T) npmEnv {
	t.Helper()
	e := npmEnv{node: os.Getenv(envNode), clients: os.Getenv(envClients), everything: os.Getenv(envEverythingDir), filesystem: os.Getenv(envFilesystemDir)}
	check := func(name string, dir *string, rel string) {
		if *dir == "" || e.node == "" {
			if os.Getenv("CI") == "true" {
				t.Fatalf("CI=true but %s or %s is not set: scripts/test.sh installs the npm programs and sets them", name, envNode)
			}
			t.Logf("%s or %s not set (scripts/test.sh sets them): leaving those npm programs out", name, envNode)
			*dir = ""
			return
		}
		if _, err := os.Stat(filepath.Join(*dir, "node_modules", rel)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	check(envClients, &e.clients, "@modelcontextprotocol/sdk/package.json")
	if e.clients != "" {
		check(envClients, &e.clients, "@modelcontextprotocol/inspector/"+inspectorMain)
	}
	check(envEverythingDir, &e.everything, "@modelcontextprotocol/server-everything/dist/index.js")
	check(envFilesystemDir, &e.filesystem, "@modelcontextprotocol/server-filesystem/dist/index.js")
	return e
}

func (e npmEnv) everythingCmd() []string {
	return []string{e.node, filepath.Join(e.everything, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"), "stdio"}
}

func (e npmEnv) filesystemCmd(root string) []string {
	return []string{e.node, filepath.Join(e.filesystem, "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js"), root}
}

// ---- the pmcp binary, built once per test binary ----

var pmcpBin struct {
	once sync.Once
	dir  string // removed by TestMain
	path string
	err  error
}

// pmcpBinary builds the pmcp command (its own module, next door) once and
// returns its path; TestMain removes it.
func pmcpBinary(t *testing.T) string {
	t.Helper()
	pmcpBin.once.Do(func() {
		pmcpBin.dir, pmcpBin.err = os.MkdirTemp("", "pmcp-interop-")
		if pmcpBin.err != nil {
			return
		}
		bin := filepath.Join(pmcpBin.dir, "pmcp")
		if runtime.GOOS == "windows" {
			bin += ".exe"
		}
		cmd := exec.Command("go", "build", "-o", bin, ".")
		cmd.Dir = filepath.Join("..", "cmd", "pmcp")
		cmd.Env = append(os.Environ(), "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			pmcpBin.err = fmt.Errorf("building pmcp: %v\n%s", err, out)
			return
		}
		pmcpBin.path = bin
	})
	if pmcpBin.err != nil {
		t.Fatal(pmcpBin.err)
	}
	return pmcpBin.path
}

// removePMCPBinary is TestMain's cleanup.
func removePMCPBinary() {
	if pmcpBin.dir != "" {
		_ = os.RemoveAll(pmcpBin.dir)
	}
}

// ---- processes ----

// tailBuffer keeps the last maxProcessLog bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - maxProcessLog; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

var servingURL = regexp.MustCompile(`serving MCP over Streamable HTTP" url=(\S+)`)

// startHTTP runs `pmcp args...` (serve --http or bridge --listen, on port
// 0) until the test ends and returns its endpoint, read from its log, and
// the log's tail. It may run on any goroutine.
func startHTTP(t *testing.T, bin string, args ...string) (string, *tailBuffer, error) {
	u, logs, _, err := startHTTPStoppable(t, bin, args...)
	return u, logs, err
}

// startHTTPStoppable is startHTTP that also returns what stops the
// process early (SIGINT, then its exit awaited; also done when the test
// ends).
func startHTTPStoppable(t *testing.T, bin string, args ...string) (string, *tailBuffer, func(), error) {
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, nil, err
	}
	logs := &tailBuffer{}
	urlc := make(chan string, 1)
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			fmt.Fprintln(logs, sc.Text())
			if m := servingURL.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urlc <- m[1]:
				default:
				}
			}
		}
	}()
	exited := make(chan struct{})
	var werr error
	go func() {
		defer close(exited)
		<-read // Wait closes the pipe: read it to the end first
		werr = cmd.Wait()
	}()
	stop := sync.OnceFunc(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	t.Cleanup(stop)
	select {
	case u := <-urlc:
		return u, logs, stop, nil
	case <-exited:
		return "", nil, nil, fmt.Errorf("pmcp %q exited before serving: %v\n%s", args, werr, logs)
	case <-time.After(30 * time.Second):
		return "", nil, nil, fmt.Errorf("pmcp %q never served; log:\n%s", args, logs)
	}
}

// ---- targets ----

// A target is one way to reach an upstream: over HTTP (url) or as a
// command a client starts and speaks stdio to.
type target struct {
	name   string
	family string // the upstream: "pmcp", "everything", "filesystem" or "gosdk"
	direct bool   // the upstream itself: the family's baseline
	url    string
	cmd    []string
	logs   *tailBuffer // an HTTP target's log
	// prefix is what a gateway puts before the upstream's tool and prompt
	// names (its upstream's name and "_"); "" for none.
	prefix string
}

// startTargets starts every HTTP target (in parallel) and lists the stdio
// ones, for the families whose upstream is available.
func startTargets(t *testing.T, bin string, npm npmEnv, fsRoot string) []*target {
	t.Helper()
	quiet := []string{"--log-level", "warning"}
	serveStdio := append([]string{bin, "serve", "--stdio"}, quiet...)
	type upstream struct {
		family string
		child  []string
	}
	ups := []upstream{{"pmcp", serveStdio}}
	if npm.everything != "" {
		ups = append(ups, upstream{"everything", npm.everythingCmd()})
	}
	if npm.filesystem != "" {
		ups = append(ups, upstream{"filesystem", npm.filesystemCmd(fsRoot)})
	}

	var targets []*target
	var mu sync.Mutex
	var wg sync.WaitGroup
	add := func(tg *target) {
		mu.Lock()
		targets = append(targets, tg)
		mu.Unlock()
	}
	listen := func(name, family, prefix string, args ...string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u, logs, err := startHTTP(t, bin, args...)
			if err != nil {
				t.Error(err)
				return
			}
			add(&target{name: name, family: family, url: u, logs: logs, prefix: prefix})
		}()
	}
	serveURL, serveLogs, err := startHTTP(t, bin, "serve", "--http", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	add(&target{name: "serve-http", family: "pmcp", url: serveURL, logs: serveLogs})
	for _, up := range ups {
		add(&target{name: up.family + "-stdio", family: up.family, direct: true, cmd: up.child})
		bridge := append([]string{"bridge", "--listen", "127.0.0.1:0", "--"}, up.child...)
		listen("bridge-"+up.family+"-child-http", up.family, "", bridge...)
		listen("gateway-"+up.family+"-child-http", up.family, "up_", "gateway", "--listen", "127.0.0.1:0", "--config", gatewayConfig(t, up.child))
		add(&target{name: "bridge-" + up.family + "-child-stdio", family: up.family,
			cmd: append(append([]string{bin, "bridge"}, quiet...), append([]string{"--"}, up.child...)...)})
	}
	listen("bridge-url-http", "pmcp", "", "bridge", "--listen", "127.0.0.1:0", "--url", serveURL)
	add(&target{name: "bridge-url-stdio", family: "pmcp", cmd: append(append([]string{bin, "bridge"}, quiet...), "--url", serveURL)})
	for _, tg := range httpUpstreamTargets(t, npm, listen) {
		add(tg)
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return targets
}

// gatewayConfig writes a `pmcp gateway` configuration serving child as
// the upstream "up" and returns its path.
func gatewayConfig(t *testing.T, child []string) string {
	t.Helper()
	return writeJSONFile(t, "gateway.json", map[string]any{"mcpServers": map[string]any{"up": map[string]any{"command": child[0], "args": child[1:]}}})
}

// ---- results ----

// An outcome is what one probe got: a result or an error, and the
// progress values seen before the result.
type outcome struct {
	Result   json.RawMessage `json:"result,omitempty"`
	Error    *probeError     `json:"error,omitempty"`
	Progress []float64       `json:"progress,omitempty"`
}

type probeError struct {
	Code    *int64 `json:"code"`
	Message string `json:"message"`
}

// results maps "initialize" and each probe's name to its outcome.
type results map[string]outcome

// errOutcome is a failed probe, with the JSON-RPC error code when the
// SDK's error carries one.
func errOutcome(err error) outcome {
	pe := &probeError{Message: err.Error()}
	var ours *jsonrpc.Error
	var theirs *gosdkjsonrpc.Error
	switch {
	case errors.As(err, &ours):
		pe.Code = &ours.Code
	case errors.As(err, &theirs):
		pe.Code = &theirs.Code
	default:
		for sentinel, code := range mcpGoErrors {
			if errors.Is(err, sentinel) {
				pe.Code = &code
			}
		}
	}
	return outcome{Error: pe}
}

// mcpGoErrors are mcp-go's errors for JSON-RPC error codes.
var mcpGoErrors = map[error]int64{
	mcp.ErrParseError:       -32700,
	mcp.ErrInvalidRequest:   -32600,
	mcp.ErrMethodNotFound:   -32601,
	mcp.ErrInvalidParams:    -32602,
	mcp.ErrInternalError:    -32603,
	mcp.ErrResourceNotFound: -32002,
}

// resultOutcome marshals a typed result (any SDK's) into an outcome.
func resultOutcome(v any, err error) outcome {
	if err != nil {
		return errOutcome(err)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return errOutcome(err)
	}
	return outcome{Result: raw}
}

// ---- the matrix ----

// A client runs every probe against one target.
type client struct {
	name string
	// era is the protocol version its initialize must report.
	era string
	// baseline is the client whose direct run is compared with this
	// one's for a family (empty: itself): the modern clients cannot reach
	// the legacy-only npm servers directly, so there the legacy run of the
	// same SDK is the reference.
	baseline func(family string) string
	// tasks: it has a client task API (TestThirdPartyTasksThroughBridge).
	tasks bool
	// skip says why this client leaves a target out ("" for none).
	skip func(tg *target) string
	run  func(ctx context.Context, tg *target, probes []probe) (results, error)
}

// TestThirdPartyMatrix is issue 18's acceptance: every client, every
// target, both eras; tasks are in TestThirdPartyTasksThroughBridge.
func TestThirdPartyMatrix(t *testing.T) {
	runMatrix(t, false)
}

// runMatrix runs the clients against the targets and compares each run
// with the same client's run against the upstream itself.
func runMatrix(t *testing.T, tasks bool) {
	npm := thirdPartyNPM(t)
	bin := pmcpBinary(t)
	if npm.node != "" {
		// Node compiles each program once for all its processes here (the
		// Inspector alone starts about a hundred).
		t.Setenv("NODE_COMPILE_CACHE", filepath.Join(t.TempDir(), "node-compile-cache"))
	}
	fsRoot := t.TempDir()
	if err := os.WriteFile(filepath.Join(fsRoot, "hello.txt"), []byte("hello from the filesystem server\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The filesystem server reports the root as it resolves it.
	if r, err := filepath.EvalSymlinks(fsRoot); err == nil {
		fsRoot = r
	}
	targets := matrixTargets(t, startTargets(t, bin, npm, fsRoot))
	clients := thirdPartyClients(npm, t.TempDir())

	type job struct {
		c  *client
		tg *target
	}
	type key struct{ client, target string }
	var jobs []job
	for _, c := range clients {
		for _, tg := range targets {
			if tasks && (tg.family != "pmcp" || !c.tasks) {
				continue
			}
			if c.skip != nil && c.skip(tg) != "" {
				continue
			}
			jobs = append(jobs, job{c, tg})
		}
	}
	got := make(map[key]results)
	errs := make(map[key]error)
	took := make(map[key]time.Duration)
	var mu sync.Mutex
	work := make(chan job)
	var wg sync.WaitGroup
	for range thirdPartyWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				ctx, cancel := context.WithTimeout(context.Background(), thirdPartyTimeout)
				ps := targetProbes(j.tg, fsRoot, tasks, j.c.era)
				start := time.Now()
				r, err := j.c.run(ctx, j.tg, ps)
				cancel()
				mu.Lock()
				k := key{j.c.name, j.tg.name}
				got[k], errs[k], took[k] = r, err, time.Since(start)
				mu.Unlock()
			}
		}()
	}
	for _, j := range jobs {
		work <- j
	}
	close(work)
	wg.Wait()

	direct := make(map[string]string) // family -> its direct target
	for _, tg := range targets {
		if tg.direct {
			direct[tg.family] = tg.name
		}
	}
	for _, j := range jobs {
		c, tg := j.c, j.tg
		t.Run(c.name+"/"+tg.name, func(t *testing.T) {
			k := key{c.name, tg.name}
			t.Logf("run: %v", took[k].Round(time.Millisecond))
			if err := errs[k]; err != nil {
				t.Fatalf("%s against %s: %v%s", c.name, describe(tg), err, logTail(tg))
			}
			ps := targetProbes(tg, fsRoot, tasks, c.era)
			norm := normalizeAll(got[k], ps)
			unprefixLists(norm, tg.prefix)
			if v, _ := norm["initialize"].(map[string]any); v["protocolVersion"] != c.era {
				t.Errorf("initialize: %v, want protocol version %s", norm["initialize"], c.era)
			}
			checkExpected(t, tg.family, c.era, norm, got[k])
			base := key{c.name, direct[tg.family]}
			if c.baseline != nil && c.baseline(tg.family) != "" {
				base.client = c.baseline(tg.family)
			}
			if base == k {
				return
			}
			ref, ok := got[base]
			if !ok || errs[base] != nil {
				t.Fatalf("no baseline run %v to compare with: %v", base, errs[base])
			}
			want := normalizeAll(ref, ps)
			if missing := missingCaps(norm["initialize"], want["initialize"], tasks); len(missing) > 0 {
				t.Errorf("initialize: %s against %s lacks the upstream's capabilities %q (got %s, upstream %s)",
					c.name, describe(tg), missing, js(norm["initialize"]), js(want["initialize"]))
			}
			for _, p := range ps {
				g, w := norm[p.Name], want[p.Name]
				if !sameOutcome(p, g, w, tg.direct) {
					t.Errorf("%s: %s against %s differs from %v:\n got  %s\n want %s\n raw  %s\n want raw %s%s",
						p.Name, c.name, describe(tg), base, js(g), js(w), rawOf(got[k], p.Name), rawOf(ref, p.Name), logTail(tg))
				}
			}
		})
	}
}

// matrixTargets keeps the targets whose names match $PMCP_MATRIX_TARGETS
// (a regular expression; unset: all), and the direct targets of their
// families, which are their baselines: a developer re-runs a few cells of
// the matrix without the machine running all of it.
func matrixTargets(t *testing.T, targets []*target) []*target {
	t.Helper()
	pat := os.Getenv(envMatrixTargets)
	if pat == "" {
		return targets
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		t.Fatalf("%s: %v", envMatrixTargets, err)
	}
	families := map[string]bool{}
	for _, tg := range targets {
		if re.MatchString(tg.name) {
			families[tg.family] = true
		}
	}
	return slices.DeleteFunc(targets, func(tg *target) bool {
		return !re.MatchString(tg.name) && !(tg.direct && families[tg.family])
	})
}

func describe(tg *target) string {
	if tg.url != "" {
		return tg.name + " (" + tg.url + ")"
	}
	return fmt.Sprintf("%s (%q)", tg.name, tg.cmd)
}

func logTail(tg *target) string {
	if tg.logs == nil {
		return ""
	}
	s := tg.logs.String()
	if len(s) > 4000 {
		s = s[len(s)-4000:]
	}
	return "\n server log tail:\n" + s
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func rawOf(r results, name string) string {
	o, ok := r[name]
	if !ok {
		return "(not probed)"
	}
	b, _ := json.Marshal(o)
	if len(b) > 1500 {
		b = append(b[:1500], "…"...)
	}
	return string(b)
}
