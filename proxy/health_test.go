package proxy

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// deadUpstreams are the ways an upstream is down: a stdio child that exits
// at once, an HTTP endpoint whose server is closed before the first
// request, and one closed after it served (the open session breaks).
var deadUpstreams = []string{"child-exits", "http-closed", "http-dies"}

// deadDial returns a dial of the dead upstream kind and a function that
// kills it ("http-dies" is alive until then; the others already dead).
func deadDial(t *testing.T, kind string) (DialFunc, func()) {
	t.Helper()
	switch kind {
	case "child-exits":
		d, err := Command(os.Args[0], nil, CommandOptions{Env: []string{childEnv + "=exit", noRaceExitSleep}})
		if err != nil {
			t.Fatal(err)
		}
		return d, func() {}
	case "http-closed":
		ts := httptest.NewServer(nil)
		ts.Close()
		return HTTP(ts.URL, pmcp.HTTPClientOptions{}), func() {}
	case "http-dies":
		srv, _ := newUpstream(t, pmcp.EraUnknown, "b")
		h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{})
		ts := httptest.NewServer(h)
		var once sync.Once
		kill := func() {
			once.Do(func() {
				_ = h.Close()
				ts.CloseClientConnections()
				ts.Close()
			})
		}
		t.Cleanup(kill)
		return HTTP(ts.URL, pmcp.HTTPClientOptions{}), kill
	}
	t.Fatalf("unknown kind %q", kind)
	return nil, nil
}

// TestAggregateDeadUpstream: with one of two upstreams down, every list
// answers with the live upstream's items, a call to the dead one fails
// naming it, a call to the live one works, and the log names the dead
// one. Both eras, both downstream transports, every way of being dead.
func TestAggregateDeadUpstream(t *testing.T) {
	for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
		for _, down := range []string{"stream", "http"} {
			for _, kind := range deadUpstreams {
				t.Run(era.String()+"/"+down+"/"+kind, func(t *testing.T) {
					a, _ := newUpstream(t, pmcp.EraUnknown, "a")
					dead, kill := deadDial(t, kind)
					logs := &syncBuffer{}
					var wg sync.WaitGroup
					p := newProxy(t, Options{
						Upstreams: []Upstream{{Name: "a", Dial: memDial(a, &wg)}, {Name: "b", Dial: dead}},
						Logger:    slog.New(slog.NewTextHandler(logs, nil)),
					}, &wg)
					cs := downstream(t, p, down, pmcp.ClientOptions{Era: era})
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					defer cancel()
					for _, st := range p.Status() {
						if st.Up || st.Err != nil || !st.Since.IsZero() {
							t.Errorf("status before any contact: %+v", st)
						}
					}
					if kind == "http-dies" {
						if _, err := cs.CallTool(ctx, "b_echo", nil); err != nil {
							t.Fatalf("b before it died: %v", err)
						}
						kill()
					}
					tools, err := cs.AllTools(ctx)
					if err != nil {
						t.Fatalf("tools/list: %v", err)
					}
					for _, tl := range tools {
						if !strings.HasPrefix(tl.Name, "a_") {
							t.Errorf("tool %q of the dead upstream", tl.Name)
						}
					}
					if len(tools) == 0 {
						t.Error("no tools of the live upstream")
					}
					if prompts, err := cs.AllPrompts(ctx); err != nil || len(prompts) != 1 || prompts[0].Name != "a_greet" {
						t.Errorf("prompts/list: %v %v", prompts, err)
					}
					if res, err := cs.AllResources(ctx); err != nil || len(res) != 1 {
						t.Errorf("resources/list: %v %v", res, err)
					}
					if tpl, err := cs.AllResourceTemplates(ctx); err != nil || len(tpl) != 1 {
						t.Errorf("resources/templates/list: %v %v", tpl, err)
					}
					cp := &pmcp.CompleteParams{Ref: pmcp.CompleteReference{Type: "ref/resource", URI: "test://a/t/{id}"}}
					cp.Argument.Name, cp.Argument.Value = "id", "1"
					if r, err := cs.Complete(ctx, cp); err != nil || len(r.Completion.Values) != 1 {
						t.Errorf("completion/complete: %v %v", r, err)
					}
					if r, err := cs.CallTool(ctx, "a_echo", nil); err != nil || resultText(t, r) != "a: echo" {
						t.Errorf("a_echo: %v", err)
					}
					_, err = cs.CallTool(ctx, "b_echo", nil)
					var je *jsonrpc.Error
					if !errorsAs(err, &je) || je.Code != jsonrpc.CodeInternalError || !strings.Contains(je.Message, `upstream "b"`) {
						t.Errorf("b_echo: %v, want -32603 naming upstream \"b\"", err)
					}
					if l := logs.String(); !strings.Contains(l, "upstream=b") || !strings.Contains(l, "level=WARN") {
						t.Errorf("the log does not name the dead upstream:\n%s", l)
					}
					checkStatus(t, "Status", p.Status())
					checkStatus(t, "Probe", p.Probe(ctx))
				})
			}
		}
	}
}

// checkStatus wants upstream "a" up and "b" down with a reason.
func checkStatus(t *testing.T, what string, sts []UpstreamStatus) {
	t.Helper()
	if len(sts) != 2 || sts[0].Name != "a" || !sts[0].Up || sts[0].Err != nil || sts[0].Since.IsZero() ||
		sts[1].Name != "b" || sts[1].Up || sts[1].Err == nil || sts[1].Since.IsZero() {
		t.Errorf("%s: %+v, want a up and b down", what, sts)
	}
}

// TestProbe: Probe finds a dead upstream before any request reached the
// proxy, and one that came back.
func TestProbe(t *testing.T) {
	for _, kind := range []string{"child-exits", "http-closed"} {
		t.Run(kind, func(t *testing.T) {
			a, _ := newUpstream(t, pmcp.EraUnknown, "a")
			dead, _ := deadDial(t, kind)
			var wg sync.WaitGroup
			var mu sync.Mutex
			revived := false
			b, _ := newUpstream(t, pmcp.EraModern, "b")
			live := memDial(b, &wg)
			p := newProxy(t, Options{Upstreams: []Upstream{{Name: "a", Dial: memDial(a, &wg)}, {Name: "b", Dial: func(ctx context.Context, c *pmcp.Client, d Downstream) (Conn, error) {
				mu.Lock()
				r := revived
				mu.Unlock()
				if r {
					return live(ctx, c, d)
				}
				return dead(ctx, c, d)
			}}}}, &wg)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			checkStatus(t, "Probe", p.Probe(ctx))
			mu.Lock()
			revived = true
			mu.Unlock()
			if sts := p.Probe(ctx); sts[1].Up {
				t.Errorf("a probe within %v contacted the upstreams: %+v", minProbeInterval, sts)
			}
			p.probing <- struct{}{}
			p.lastProbe = time.Now().Add(-minProbeInterval) // as if a second passed
			<-p.probing
			if sts := p.Probe(ctx); !sts[0].Up || !sts[1].Up || sts[1].Err != nil {
				t.Errorf("after b came back: %+v", sts)
			}
		})
	}
}

// TestAggregateDeadUpstreamRaw: the lists of a third-party client (no
// params member, or params with members of its own) answer with the live
// upstream's items while the other is down, in both eras over both
// downstream transports.
func TestAggregateDeadUpstreamRaw(t *testing.T) {
	for _, down := range []string{"stream", "http"} {
		for _, era := range []pmcp.Era{pmcp.EraLegacy, pmcp.EraModern} {
			t.Run(era.String()+"/"+down, func(t *testing.T) {
				a, _ := newUpstream(t, pmcp.EraUnknown, "a")
				dead, _ := deadDial(t, "http-closed")
				var wg sync.WaitGroup
				p := newProxy(t, Options{Upstreams: []Upstream{{Name: "a", Dial: memDial(a, &wg)}, {Name: "b", Dial: dead}}}, &wg)
				send := rawStream(t, p)
				if down == "http" {
					send = rawHTTP(t, p)
				}
				lines := []string{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, `{"jsonrpc":"2.0","id":2,"method":"prompts/list","params":{"x-vendor":true}}`}
				if era == pmcp.EraLegacy {
					if m := send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"ts","version":"1"}}}`); m["error"] != nil {
						t.Fatalf("initialize: %s", m["error"])
					}
					send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
				} else {
					meta := `"_meta":{"` + pmcp.MetaProtocolVersion + `":"` + pmcp.Version20260728 + `","` + pmcp.MetaClientCapabilities + `":{}}`
					lines = []string{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`, `{"jsonrpc":"2.0","id":2,"method":"prompts/list","params":{"x-vendor":true,` + meta + `}}`}
				}
				for _, line := range lines {
					m := send(t, line)
					res := string(m["result"])
					if m["error"] != nil || !strings.Contains(res, `"a_`) || strings.Contains(res, `"b_`) {
						t.Errorf("%s: result %s error %s; want a's items only", line, res, m["error"])
					}
				}
			})
		}
	}
}

// hangingDial returns a dial of an upstream that accepts connections but
// never answers, and a function that makes it start hanging: a stdio child
// that reads its requests and never answers ("child-hangs", hanging from
// the start), or an HTTP upstream whose handler blocks ("http-hangs",
// serving until hang is called, so an open session stops answering).
func hangingDial(t *testing.T, kind string) (DialFunc, func()) {
	t.Helper()
	switch kind {
	case "child-hangs":
		d, err := Command(os.Args[0], nil, CommandOptions{Env: []string{childEnv + "=hang", noRaceExitSleep}})
		if err != nil {
			t.Fatal(err)
		}
		return d, func() {}
	case "http-hangs":
		srv, _ := newUpstream(t, pmcp.EraUnknown, "b")
		h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{})
		var hanging atomic.Bool
		release := make(chan struct{})
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if hanging.Load() {
				select {
				case <-r.Context().Done():
				case <-release:
				}
				return
			}
			h.ServeHTTP(w, r)
		}))
		t.Cleanup(func() {
			close(release)
			_ = h.Close()
			ts.Close()
		})
		return HTTP(ts.URL, pmcp.HTTPClientOptions{}), func() { hanging.Store(true) }
	}
	t.Fatalf("unknown kind %q", kind)
	return nil, nil
}

// TestAggregateHangingUpstream: with one of two upstreams hanging (never
// answering), every aggregated list answers within about ListTimeout with
// the other upstream's items; the hanging one is logged and down in
// Status, named with the reason. Both eras, both downstream transports.
func TestAggregateHangingUpstream(t *testing.T) {
	const listTimeout = 300 * time.Millisecond
	for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
		for _, down := range []string{"stream", "http"} {
			for _, kind := range []string{"child-hangs", "http-hangs"} {
				t.Run(era.String()+"/"+down+"/"+kind, func(t *testing.T) {
					a, _ := newUpstream(t, pmcp.EraUnknown, "a")
					dial, hang := hangingDial(t, kind)
					logs := &syncBuffer{}
					var wg sync.WaitGroup
					p := newProxy(t, Options{
						Upstreams:   []Upstream{{Name: "a", Dial: memDial(a, &wg)}, {Name: "b", Dial: dial}},
						ListTimeout: listTimeout,
						Logger:      slog.New(slog.NewTextHandler(logs, nil)),
					}, &wg)
					cs := downstream(t, p, down, pmcp.ClientOptions{Era: era})
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					defer cancel()
					if kind == "http-hangs" {
						if _, err := cs.CallTool(ctx, "b_echo", nil); err != nil {
							t.Fatalf("b before it hung: %v", err)
						}
						hang()
					}
					lists := []func(ctx context.Context) (int, error){
						func(ctx context.Context) (int, error) { r, err := cs.AllTools(ctx); return len(r), err },
						func(ctx context.Context) (int, error) { r, err := cs.AllPrompts(ctx); return len(r), err },
						func(ctx context.Context) (int, error) { r, err := cs.AllResources(ctx); return len(r), err },
						func(ctx context.Context) (int, error) { r, err := cs.AllResourceTemplates(ctx); return len(r), err },
					}
					for i, list := range lists {
						lctx, lcancel := context.WithTimeout(ctx, 5*time.Second)
						start := time.Now()
						n, err := list(lctx)
						lcancel()
						if err != nil || n == 0 {
							t.Fatalf("list %d: %d items, %v after %v; want a's items within about %v", i, n, err, time.Since(start), listTimeout)
						}
					}
					tools, err := cs.AllTools(ctx)
					if err != nil {
						t.Fatal(err)
					}
					for _, tl := range tools {
						if !strings.HasPrefix(tl.Name, "a_") {
							t.Errorf("tool %q of the hanging upstream", tl.Name)
						}
					}
					if l := logs.String(); !strings.Contains(l, "upstream=b") || !strings.Contains(l, "no answer") {
						t.Errorf("the log does not name the hanging upstream:\n%s", l)
					}
					checkStatus(t, "Status", p.Status())
					if st := p.Status()[1]; st.Err == nil || !strings.Contains(st.Err.Error(), "no answer") {
						t.Errorf("b's status %+v, want the reason", st)
					}
				})
			}
		}
	}
}
