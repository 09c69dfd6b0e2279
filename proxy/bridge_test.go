package proxy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// eraCase is one combination of the era translation matrix.
type eraCase struct {
	name       string
	clientEra  pmcp.Era // the downstream client's
	upstreamEr pmcp.Era // the only era the upstream serves
}

var translations = []eraCase{
	{"modern-client/legacy-upstream", pmcp.EraModern, pmcp.EraLegacy},
	{"legacy-client/modern-upstream", pmcp.EraLegacy, pmcp.EraModern},
	{"modern-client/modern-upstream", pmcp.EraModern, pmcp.EraModern},
	{"legacy-client/legacy-upstream", pmcp.EraLegacy, pmcp.EraLegacy},
}

// forEachBridge runs f as a subtest for every era pair (translations),
// downstream transport and upstream transport (see forEachTransport).
func forEachBridge(t *testing.T, f func(t *testing.T, tc eraCase, down string, upDial func(*pmcp.Server, *sync.WaitGroup) DialFunc)) {
	for _, tc := range translations {
		t.Run(tc.name, func(t *testing.T) {
			forEachTransport(t, func(t *testing.T, down string, upDial func(*pmcp.Server, *sync.WaitGroup) DialFunc) {
				f(t, tc, down, upDial)
			})
		})
	}
}

// forEachTransport runs f as a subtest for every downstream transport and
// upstream transport; upDial serves an upstream server over that upstream
// transport.
func forEachTransport(t *testing.T, f func(t *testing.T, down string, upDial func(*pmcp.Server, *sync.WaitGroup) DialFunc)) {
	for _, down := range []string{"stream", "http"} {
		for _, upT := range []string{"stream", "http"} {
			t.Run("down-"+down+"/up-"+upT, func(t *testing.T) {
				f(t, down, func(srv *pmcp.Server, wg *sync.WaitGroup) DialFunc {
					if upT == "http" {
						return httpDial(t, srv)
					}
					return memDial(srv, wg)
				})
			})
		}
	}
}

// TestBridgeElicitAcrossEras: a tool of an upstream that serves one era
// asks twice for input while the downstream client speaks the other: the
// questions reach the client's handler (as input_required rounds or as
// legacy requests) and the tool completes with the answers, over both
// downstream transports and both upstream transports.
func TestBridgeElicitAcrossEras(t *testing.T) {
	forEachBridge(t, func(t *testing.T, tc eraCase, down string, upDial func(*pmcp.Server, *sync.WaitGroup) DialFunc) {
		srv, _ := newUpstream(t, tc.upstreamEr, "u")
		var wg sync.WaitGroup
		dial := upDial(srv, &wg)
		p := newProxy(t, Options{Upstreams: []Upstream{{Dial: dial}}}, &wg)
		var asked []string
		var mu sync.Mutex
		cs := downstream(t, p, down, pmcp.ClientOptions{Era: tc.clientEra, Elicitation: func(ctx context.Context, ep *pmcp.ElicitParams) (*pmcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, ep.Message)
			mu.Unlock()
			return answerer(ctx, ep)
		}})
		if cs.Era() != tc.clientEra {
			t.Fatalf("downstream era %v, want %v", cs.Era(), tc.clientEra)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, "ask", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := resultText(t, res); got != "u: hello Ada (happy)" {
			t.Fatalf("result %q", got)
		}
		mu.Lock()
		defer mu.Unlock()
		if strings.Join(asked, "|") != "your name?|your mood?" {
			t.Fatalf("client was asked %q", asked)
		}
		// The upstream really served only its era.
		p.mu.Lock()
		for _, sl := range p.slots {
			if sl.live != nil && sl.live.conn.Session.Era() != tc.upstreamEr {
				t.Errorf("upstream session era %v", sl.live.conn.Session.Era())
			}
		}
		p.mu.Unlock()
	})
}

// TestBridgeInputWithoutCapability: a downstream client that cannot
// elicit makes the upstream's elicitation fail, and the tool's failure
// comes back; nothing stays parked.
func TestBridgeInputWithoutCapability(t *testing.T) {
	for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
		t.Run(era.String(), func(t *testing.T) {
			srv, _ := newUpstream(t, pmcp.EraLegacy, "u")
			var wg sync.WaitGroup
			p := newProxy(t, Options{Upstreams: []Upstream{{Dial: memDial(srv, &wg)}}}, &wg)
			cs := downstream(t, p, "stream", pmcp.ClientOptions{Era: era})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			res, err := cs.CallTool(ctx, "ask", nil)
			if err == nil && !res.IsError {
				t.Fatalf("call succeeded without an elicitation handler: %+v", res)
			}
			p.parked.mu.Lock()
			n := len(p.parked.m)
			p.parked.mu.Unlock()
			if n != 0 {
				t.Fatalf("%d requests still parked", n)
			}
		})
	}
}

// TestBridgeProgressAndCancel: progress crosses the bridge in order, and
// cancelling the downstream call cancels the upstream handler.
func TestBridgeProgressAndCancel(t *testing.T) {
	forEachBridge(t, func(t *testing.T, tc eraCase, down string, upDial func(*pmcp.Server, *sync.WaitGroup) DialFunc) {
		srv, st := newUpstream(t, tc.upstreamEr, "u")
		var wg sync.WaitGroup
		dial := upDial(srv, &wg)
		p := newProxy(t, Options{Upstreams: []Upstream{{Dial: dial}}}, &wg)
		cs := downstream(t, p, down, pmcp.ClientOptions{Era: tc.clientEra})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		got := make(chan string, 16)
		callCtx, stop := context.WithCancel(ctx)
		errc := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(callCtx, "count", nil, pmcp.WithProgress(func(_ context.Context, pp *pmcp.ProgressParams) {
				got <- pp.Message
			}))
			errc <- err
		}()
		for i := 1; i <= 5; i++ {
			select {
			case m := <-got:
				if want := "step " + string(rune('0'+i)); m != want {
					t.Fatalf("progress %d: %q, want %q", i, m, want)
				}
			case <-ctx.Done():
				t.Fatalf("progress %d never arrived", i)
			}
		}
		stop()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("call error %v, want context.Canceled", err)
		}
		select {
		case <-st.cancelled:
		case <-ctx.Done():
			t.Fatal("the upstream handler was never cancelled")
		}
	})
}

// TestBridgeErrorsAndMeta: an upstream JSON-RPC error reaches the
// downstream unchanged, and the trace context of _meta reaches the
// upstream.
func TestBridgeErrorsAndMeta(t *testing.T) {
	for _, tc := range translations {
		for _, upT := range []string{"stream", "http"} {
			t.Run(tc.name+"/up-"+upT, func(t *testing.T) {
				srv, _ := newUpstream(t, tc.upstreamEr, "u")
				var wg sync.WaitGroup
				dial := memDial(srv, &wg)
				if upT == "http" {
					dial = httpDial(t, srv)
				}
				p := newProxy(t, Options{Upstreams: []Upstream{{Dial: dial}}}, &wg)
				cs := downstream(t, p, "http", pmcp.ClientOptions{Era: tc.clientEra})
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_, err := cs.CallTool(ctx, "fail", nil)
				var je *jsonrpc.Error
				if !errors.As(err, &je) || je.Code != -32050 || je.Message != "teapot refused" || string(je.Data) != `{"why":"short and stout"}` {
					t.Fatalf("error %#v, want the upstream's -32050 unchanged", err)
				}
				const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
				res, err := cs.CallTool(ctx, "meta", nil, pmcp.WithMeta(pmcp.Meta{"traceparent": tp}))
				if err != nil {
					t.Fatal(err)
				}
				if got := resultText(t, res); got != tp {
					t.Fatalf("upstream saw traceparent %q", got)
				}
			})
		}
	}
}

// TestBridgeProgressAfterInput: progress the upstream reports after an
// input round reaches the downstream request of the round that resumed
// the call (a modern client's retry), in every era pair.
func TestBridgeProgressAfterInput(t *testing.T) {
	for _, tc := range translations {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := newUpstream(t, tc.upstreamEr, "u")
			var wg sync.WaitGroup
			p := newProxy(t, Options{Upstreams: []Upstream{{Dial: memDial(srv, &wg)}}}, &wg)
			cs := downstream(t, p, "stream", pmcp.ClientOptions{Era: tc.clientEra, Elicitation: answerer})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for i := 0; i < 20; i++ {
				var got []string
				res, err := cs.CallTool(ctx, "ask_then_progress", nil, pmcp.WithProgress(func(_ context.Context, pp *pmcp.ProgressParams) {
					got = append(got, pp.Message)
				}))
				if err != nil {
					t.Fatal(err)
				}
				if resultText(t, res) != "u: done Ada" || len(got) != 1 || got[0] != "after Ada" {
					t.Fatalf("call %d: %q, progress %q", i, resultText(t, res), got)
				}
			}
		})
	}
}

// TestBridgeRootsAndServerInfo: an upstream's roots/list reaches the
// downstream client's roots handler (a legacy request or an input_required
// round) in every era pair, over both transports on each side; and the
// result names the bridge, not the upstream: no modern serverInfo _meta
// for a legacy client, the bridge's own for a modern one.
func TestBridgeRootsAndServerInfo(t *testing.T) {
	forEachBridge(t, func(t *testing.T, tc eraCase, down string, upDial func(*pmcp.Server, *sync.WaitGroup) DialFunc) {
		srv, _ := newUpstream(t, tc.upstreamEr, "u")
		var wg sync.WaitGroup
		dial := upDial(srv, &wg)
		p := newProxy(t, Options{Upstreams: []Upstream{{Dial: dial}}, Server: pmcp.ServerOptions{Name: "the-bridge"}}, &wg)
		cs := downstream(t, p, down, pmcp.ClientOptions{Era: tc.clientEra, Roots: func(context.Context) (*pmcp.ListRootsResult, error) {
			return &pmcp.ListRootsResult{Roots: []*pmcp.Root{{URI: "file:///work", Name: "work"}}}, nil
		}})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, "roots", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := resultText(t, res); got != "u: roots file:///work" {
			t.Fatalf("result %q", got)
		}
		for _, tool := range []string{"roots", "echo"} {
			if tool == "echo" {
				if res, err = cs.CallTool(ctx, "echo", nil); err != nil {
					t.Fatal(err)
				}
			}
			info, ok := res.Meta[pmcp.MetaServerInfo]
			switch {
			case tc.clientEra == pmcp.EraLegacy && ok:
				t.Errorf("%s: a legacy client got serverInfo _meta %v", tool, info)
			case tc.clientEra == pmcp.EraModern && !strings.Contains(fmt.Sprint(info), "the-bridge"):
				t.Errorf("%s: serverInfo _meta %v, want the bridge's", tool, info)
			}
		}
	})
}

// TestBridgeRootsOutsideCalls: a legacy upstream that asks for roots
// while no call is in flight (as servers do after initialize and on a
// roots list change) gets the roots of the downstream client its session
// belongs to, and, on an upstream shared by several clients (modern
// requests, Options.Shared), an empty list rather than an error: no roots
// are common to every client.
func TestBridgeRootsOutsideCalls(t *testing.T) {
	for _, era := range []pmcp.Era{pmcp.EraLegacy, pmcp.EraModern} {
		for _, down := range []string{"stream", "http"} {
			for _, shared := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s-client/down-%s/shared-%v", era, down, shared), func(t *testing.T) {
					srv, st := newUpstream(t, pmcp.EraLegacy, "u")
					var wg sync.WaitGroup
					p := newProxy(t, Options{Upstreams: []Upstream{{Dial: memDial(srv, &wg)}}, Shared: shared}, &wg)
					cs := downstream(t, p, down, pmcp.ClientOptions{Era: era, Roots: func(context.Context) (*pmcp.ListRootsResult, error) {
						return &pmcp.ListRootsResult{Roots: []*pmcp.Root{{URI: "file:///work", Name: "work"}}}, nil
					}})
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					if got := callText(t, ctx, cs, "roots_later"); got != "u: later" && got != "later" {
						t.Fatalf("result %q", got)
					}
					st.askNow <- "" // the call is over: the downstream has its result
					want := ""
					if era == pmcp.EraLegacy && !shared {
						want = "file:///work;"
					}
					select {
					case got := <-st.later:
						if got != want {
							t.Fatalf("the upstream's roots/list outside a call got %q, want %q", got, want)
						}
					case <-ctx.Done():
						t.Fatal("the upstream's roots/list was never answered")
					}
				})
			}
		}
	}
}
