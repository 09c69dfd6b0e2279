package redis

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
)

// The multi-process test: real `pmcp serve --redis` replicas behind a
// round-robin reverse proxy, driven by pmcp.Client in both eras.

var (
	pmcpBinOnce sync.Once
	pmcpBin     string
	pmcpBinErr  error
)

// buildPmcp builds cmd/pmcp once per test binary.
func buildPmcp(t *testing.T) string {
	t.Helper()
	pmcpBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pmcp-bin-")
		if err != nil {
			pmcpBinErr = err
			return
		}
		pmcpBin = filepath.Join(dir, "pmcp")
		cmd := exec.Command("go", "build", "-o", pmcpBin, ".")
		cmd.Dir = filepath.Join("..", "cmd", "pmcp")
		cmd.Env = append(os.Environ(), "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			pmcpBinErr = fmt.Errorf("go build cmd/pmcp: %v\n%s", err, out)
		}
	})
	if pmcpBinErr != nil {
		t.Fatal(pmcpBinErr)
	}
	return pmcpBin
}

type replicaProc struct {
	name string
	addr string
	cmd  *exec.Cmd
	done chan struct{}
}

// testStateKey is the shared requestState key ring of the test replicas.
var testStateKey = "k1:" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))

// startReplica starts one replica and waits for its "serving" log line.
func startReplica(t *testing.T, bin, name, redisAddr string, extra ...string) *replicaProc {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(bin, "serve", "--http", addr, "--redis", "redis://"+redisAddr, "--replica-id", name, "--state-key", testStateKey, "--log-level", "info")
	cmd.Args = append(cmd.Args, extra...)
	cmd.Env = append(os.Environ(), "OTEL_SDK_DISABLED=true")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &replicaProc{name: name, addr: addr, cmd: cmd, done: make(chan struct{})}
	ready := make(chan struct{})
	var logb strings.Builder
	var logMu sync.Mutex
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			if strings.Contains(line, "panic") {
				t.Errorf("replica %s: %s", name, line)
			}
			logMu.Lock()
			if logb.Len() < 64<<10 {
				logb.WriteString(line + "\n")
			}
			logMu.Unlock()
			if !signalled && strings.Contains(line, "serving MCP over Streamable HTTP") {
				signalled = true
				close(ready)
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			logMu.Lock()
			t.Logf("replica %s log:\n%s", name, logb.String())
			logMu.Unlock()
		}
	})
	select {
	case <-ready:
	case <-p.done:
		logMu.Lock()
		defer logMu.Unlock()
		t.Fatalf("replica %s exited: %s", name, logb.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("replica %s not ready in 30s", name)
	}
	return p
}

func (p *replicaProc) kill(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Kill() // SIGKILL
	<-p.done
}

func (p *replicaProc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// rrProxy is a round-robin reverse proxy over the live replicas. pick,
// when set, chooses the backend of a request instead. outBody, when set,
// wraps the request body the proxy hands its transport (a test forces a
// timing with it).
type rrProxy struct {
	srv     *httptest.Server
	mu      sync.Mutex
	reps    []*replicaProc
	next    int
	pick    func(r *http.Request) *replicaProc
	outBody func(io.ReadCloser) io.ReadCloser
	hits    map[string]int
}

func newProxy(t *testing.T, reps []*replicaProc) *rrProxy {
	p := &rrProxy{reps: reps, hits: map[string]int{}}
	rp := &httputil.ReverseProxy{
		FlushInterval: -1,
		Rewrite: func(pr *httputil.ProxyRequest) {
			b := p.choose(pr.In)
			pr.SetURL(&url.URL{Scheme: "http", Host: b.addr})
			pr.Out.Host = pr.In.Host
			p.mu.Lock()
			wrap := p.outBody
			p.mu.Unlock()
			if wrap != nil && pr.Out.Body != nil {
				pr.Out.Body = wrap(pr.Out.Body)
			}
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			w.WriteHeader(http.StatusBadGateway)
		},
		ErrorLog: log.New(io.Discard, "", 0),
	}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The transport makes a last read of the request body, to check
		// that it ended, after it sent the body: under load a replica's
		// reply arrives first. An HTTP/1 server closes the unread request
		// body as the reply's headers are written, unless the handler runs
		// full duplex; that last read then fails and the transport drops
		// the connection to the replica, cutting the reply off after its
		// headers (golang/go#40747).
		_ = http.NewResponseController(w).EnableFullDuplex()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *rrProxy) setOutBody(f func(io.ReadCloser) io.ReadCloser) {
	p.mu.Lock()
	p.outBody = f
	p.mu.Unlock()
}

func (p *rrProxy) url() string { return p.srv.URL + "/mcp" }

func (p *rrProxy) choose(r *http.Request) *replicaProc {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pick != nil {
		if b := p.pick(r); b != nil {
			p.hits[b.name]++
			return b
		}
	}
	for range len(p.reps) {
		b := p.reps[p.next%len(p.reps)]
		p.next++
		if b.alive() {
			p.hits[b.name]++
			return b
		}
	}
	return p.reps[0]
}

func (p *rrProxy) setPick(f func(r *http.Request) *replicaProc) {
	p.mu.Lock()
	p.pick = f
	p.mu.Unlock()
}

func (p *rrProxy) hitCounts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := map[string]int{}
	for k, v := range p.hits {
		m[k] = v
	}
	return m
}

func ownerOf(reps []*replicaProc, sessionID string) *replicaProc {
	name, _, _ := strings.Cut(sessionID, ".")
	for _, r := range reps {
		if r.name == name {
			return r
		}
	}
	return nil
}

func elicitAnswer(context.Context, *pmcp.ElicitParams) (*pmcp.ElicitResult, error) {
	return &pmcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "username": "ada", "email": "ada@example.com"}}, nil
}

func connectVia(t *testing.T, ctx context.Context, endpoint string, era pmcp.Era, opts pmcp.ClientOptions) *pmcp.ClientSession {
	t.Helper()
	opts.Era = era
	if opts.Elicitation == nil {
		opts.Elicitation = elicitAnswer
	}
	cs, err := pmcp.NewClient(opts).ConnectHTTP(ctx, endpoint, pmcp.HTTPClientOptions{DefaultRetry: 20 * time.Millisecond})
	if err != nil {
		t.Fatalf("connect %v: %v", era, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func text(res *pmcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*pmcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// countCall runs count_slowly and returns the progress values seen.
func countCall(ctx context.Context, cs *pmcp.ClientSession, n, intervalMs int, onProgress func(int)) ([]int, *pmcp.CallToolResult, error) {
	var mu sync.Mutex
	var seen []int
	res, err := cs.CallTool(ctx, "count_slowly", map[string]any{"count": n, "intervalMs": intervalMs}, pmcp.WithProgress(func(_ context.Context, p *pmcp.ProgressParams) {
		mu.Lock()
		seen = append(seen, int(p.Progress))
		k := len(seen)
		mu.Unlock()
		if onProgress != nil {
			onProgress(k)
		}
	}))
	mu.Lock()
	defer mu.Unlock()
	return append([]int(nil), seen...), res, err
}

// serverProgressRate is pmcp's default ServerOptions.ProgressRate: the
// progress notifications per second one request may send.
const serverProgressRate = 10

// progressInterval paces count_slowly under the server's progress rate
// limit (serverProgressRate per second), which would otherwise drop
// updates on purpose.
const progressInterval = 1000/serverProgressRate + 10

// checkPrefix fails unless seen is 1, 2, …, len(seen): no event lost or
// duplicated.
func checkPrefix(t *testing.T, seen []int) {
	t.Helper()
	for i, v := range seen {
		if v != i+1 {
			t.Fatalf("progress events %v: position %d is %d (lost or duplicated events)", seen, i, v)
		}
	}
}

func TestReplicasMultiProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/pmcp and runs three processes")
	}
	if _, err := exec.LookPath("redis-server"); err != nil && redisAddr == "" {
		t.Skip("no redis-server")
	}
	// Its own redis-server: the test restarts it.
	rsrv, err := startRedis(0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { rsrv.stop() }()
	bin := buildPmcp(t)
	reps := []*replicaProc{
		startReplica(t, bin, "r0", rsrv.addr),
		startReplica(t, bin, "r1", rsrv.addr),
		startReplica(t, bin, "r2", rsrv.addr),
	}
	proxy := newProxy(t, reps)

	t.Run("LegacySessionAcrossReplicas", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		before := proxy.hitCounts()
		cs := connectVia(t, ctx, proxy.url(), pmcp.EraLegacy, pmcp.ClientOptions{})
		if cs.Era() != pmcp.EraLegacy || ownerOf(reps, cs.SessionID()) == nil {
			t.Fatalf("era %v, session id %q names no replica", cs.Era(), cs.SessionID())
		}
		for i := range 6 {
			res, err := cs.CallTool(ctx, "echo", map[string]any{"text": "hi " + strconv.Itoa(i)})
			if err != nil || !strings.Contains(text(res), "hi "+strconv.Itoa(i)) {
				t.Fatalf("echo %d: %v %v", i, res, err)
			}
		}
		res, err := cs.CallTool(ctx, "test_elicitation", map[string]any{"message": "who?"})
		if err != nil || !strings.Contains(text(res), "accept") {
			t.Fatalf("elicitation across replicas: %v %v", res, err)
		}
		res, err = cs.CallTool(ctx, "test_reconnection", nil)
		if err != nil || !strings.Contains(text(res), "Reconnection test completed") {
			t.Fatalf("resumption after a dropped stream: %v %v", res, err)
		}
		seen, res, err := countCall(ctx, cs, 12, progressInterval, nil)
		if err != nil || len(seen) != 12 {
			t.Fatalf("count_slowly: %v %v, progress %v", res, err, seen)
		}
		checkPrefix(t, seen)
		after := proxy.hitCounts()
		for _, r := range reps {
			if after[r.name] == before[r.name] {
				t.Errorf("replica %s served none of the session's requests: %v -> %v", r.name, before, after)
			}
		}
	})

	t.Run("ListChangedAcrossReplicas", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		changed := make(chan struct{}, 16)
		acked := make(chan struct{}, 1)
		listener := connectVia(t, ctx, "http://"+reps[1].addr+"/mcp", pmcp.EraModern, pmcp.ClientOptions{Notifications: pmcp.ClientNotificationHandlers{
			ToolsListChanged: func(context.Context) { changed <- struct{}{} },
			SubscriptionAcknowledged: func(context.Context, *pmcp.SubscriptionsAckParams) {
				select {
				case acked <- struct{}{}:
				default:
				}
			},
		}})
		lctx, lcancel := context.WithCancel(ctx)
		ldone := make(chan error, 1)
		go func() { ldone <- listener.Listen(lctx, pmcp.SubscriptionFilter{ToolsListChanged: true}) }()
		defer func() { lcancel(); <-ldone }()
		select {
		case <-acked:
		case err := <-ldone:
			t.Fatalf("listen ended: %v", err)
		case <-ctx.Done():
			t.Fatal("no subscription acknowledgement")
		}
		trigger := connectVia(t, ctx, "http://"+reps[0].addr+"/mcp", pmcp.EraModern, pmcp.ClientOptions{})
		if _, err := trigger.CallTool(ctx, "test_trigger_tool_change", nil); err != nil {
			t.Fatal(err)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatal("a tool added on r0 produced no list_changed on r1's listen stream")
		}
	})

	t.Run("KillForwarderMidStream", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cs := connectVia(t, ctx, proxy.url(), pmcp.EraLegacy, pmcp.ClientOptions{})
		owner := ownerOf(reps, cs.SessionID())
		var via *replicaProc
		for _, r := range reps {
			if r != owner && r.alive() {
				via = r
				break
			}
		}
		// The call's POST goes through a replica that does not own the
		// session; it is killed mid-stream and the client resumes through
		// another one.
		var picked atomic.Bool
		proxy.setPick(func(r *http.Request) *replicaProc {
			if r.Method == http.MethodPost && !picked.Load() && r.Header.Get("Mcp-Method") == "" {
				picked.Store(true)
				return via
			}
			return nil
		})
		defer proxy.setPick(nil)
		var once sync.Once
		seen, res, err := countCall(ctx, cs, 25, progressInterval, func(k int) {
			if k == 10 {
				once.Do(func() { go via.kill(t) })
			}
		})
		if err != nil || !strings.Contains(text(res), "counted to 25") {
			t.Fatalf("the call did not survive its forwarder's death: %v %v (progress %v)", res, err, seen)
		}
		if via.alive() {
			t.Fatal("the forwarder was not killed")
		}
		if len(seen) != 25 {
			t.Fatalf("progress %v: want 1..25", seen)
		}
		checkPrefix(t, seen)
	})

	t.Run("KillOwnerMidStream", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cs := connectVia(t, ctx, proxy.url(), pmcp.EraLegacy, pmcp.ClientOptions{})
		owner := ownerOf(reps, cs.SessionID())
		var once sync.Once
		seen, res, err := countCall(ctx, cs, 400, progressInterval, func(k int) {
			if k == 10 {
				once.Do(func() { go owner.kill(t) })
			}
		})
		if ctx.Err() != nil {
			t.Fatal("the call hung after its owner died")
		}
		if err == nil {
			t.Fatalf("the call completed although its handler died: %v", res)
		}
		if len(seen) < 10 {
			t.Fatalf("progress %v", seen)
		}
		checkPrefix(t, seen)
		// The session lives on: another replica adopted it.
		res, err = cs.CallTool(ctx, "echo", map[string]any{"text": "after"})
		if err != nil || !strings.Contains(text(res), "after") {
			t.Fatalf("the session did not survive its owner: %v %v", res, err)
		}
	})

	// Two replicas are left. Restart a third under r0's name for the rest.
	for i, r := range reps {
		if !r.alive() {
			reps[i] = startReplica(t, bin, r.name, rsrv.addr)
		}
	}
	proxy.mu.Lock()
	proxy.reps = reps
	proxy.mu.Unlock()

	outer := t
	t.Run("Kill9Under200Requests", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cs := connectVia(t, ctx, proxy.url(), pmcp.EraModern, pmcp.ClientOptions{})
		victim := reps[2]
		// Kill the victim once 150 calls are under way (each has had its
		// first progress notification), so that about a third of them run
		// on it.
		var running atomic.Int64
		killed := make(chan struct{})
		var ok, failed atomic.Int64
		var wg sync.WaitGroup
		for range 200 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var first sync.Once
				_, _, err := countCall(ctx, cs, 10, progressInterval, func(int) {
					first.Do(func() {
						if running.Add(1) == 150 {
							victim.kill(t)
							close(killed)
						}
					})
				})
				if err != nil {
					failed.Add(1)
				} else {
					ok.Add(1)
				}
			}()
		}
		wg.Wait()
		select {
		case <-killed:
		default:
			t.Fatalf("the replica was not killed: %d calls got under way", running.Load())
		}
		if ctx.Err() != nil {
			t.Fatalf("requests hung: %d ok, %d failed", ok.Load(), failed.Load())
		}
		if ok.Load()+failed.Load() != 200 || ok.Load() == 0 || failed.Load() == 0 {
			t.Fatalf("%d ok, %d failed", ok.Load(), failed.Load())
		}
		t.Logf("200 requests with a replica killed: %d ok, %d failed", ok.Load(), failed.Load())
		reps[2] = startReplica(outer, bin, victim.name, rsrv.addr)
	})

	t.Run("RestartRedis", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		port := rsrv.port
		rsrv.stop()
		// During the outage: legacy sessions cannot be created (their
		// record cannot be written) and say so; modern calls still work.
		_, err := pmcp.NewClient(pmcp.ClientOptions{Era: pmcp.EraLegacy}).ConnectHTTP(ctx, "http://"+reps[0].addr+"/mcp", pmcp.HTTPClientOptions{})
		if err == nil {
			t.Fatal("a legacy session opened while Redis was down")
		}
		t.Logf("initialize during the outage: %v", err)
		modern := connectVia(t, ctx, "http://"+reps[1].addr+"/mcp", pmcp.EraModern, pmcp.ClientOptions{})
		if _, err := modern.CallTool(ctx, "echo", map[string]any{"text": "x"}); err != nil {
			t.Fatalf("modern call during the outage: %v", err)
		}
		var rerr error
		rsrv, rerr = startRedis(port)
		if rerr != nil {
			t.Fatal(rerr)
		}
		for _, r := range reps {
			if !r.alive() {
				t.Fatalf("replica %s died during the Redis outage", r.name)
			}
		}
		// Recovered without restarting: a legacy session across replicas
		// works again (the first attempt may meet a stale pooled
		// connection).
		// go-redis fails fast for a moment after repeated dial errors and
		// probes the server once a second; no signal says it recovered,
		// so a client retries as any client of an unavailable service.
		var cs *pmcp.ClientSession
		deadline := time.Now().Add(20 * time.Second)
		for attempt := 1; ; attempt++ {
			cs, err = pmcp.NewClient(pmcp.ClientOptions{Era: pmcp.EraLegacy, Elicitation: elicitAnswer}).ConnectHTTP(ctx, proxy.url(), pmcp.HTTPClientOptions{})
			if err == nil {
				t.Logf("legacy session after the restart at attempt %d", attempt)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no legacy session within 20s after Redis came back: %v", err)
			}
			time.Sleep(200 * time.Millisecond)
		}
		defer cs.Close()
		start := time.Now()
		res, err := cs.CallTool(ctx, "test_elicitation", map[string]any{"message": "again"})
		if err != nil || !strings.Contains(text(res), "accept") {
			t.Fatalf("elicitation after the restart: %v %v", res, err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("elicitation after the restart took %v", d)
		}
		for i := range 4 {
			if _, err := cs.CallTool(ctx, "echo", map[string]any{"text": "y"}); err != nil {
				t.Fatalf("call %d after the restart: %v", i, err)
			}
		}
	})
}
