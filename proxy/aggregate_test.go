package proxy

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// TestBridgeAggregate: two upstreams behind one endpoint, their tools
// prefixed with their names, a deny glob hiding the secret tools from the
// list and from calls alike (answered as a tool that does not exist).
func TestBridgeAggregate(t *testing.T) {
	for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
		for _, down := range []string{"stream", "http"} {
			t.Run(era.String()+"/"+down, func(t *testing.T) {
				a, _ := newUpstream(t, pmcp.EraLegacy, "a")
				b, _ := newUpstream(t, pmcp.EraModern, "b")
				var wg sync.WaitGroup
				p := newProxy(t, Options{
					Upstreams: []Upstream{{Name: "a", Dial: memDial(a, &wg)}, {Name: "b", Dial: memDial(b, &wg)}},
					DenyTools: []string{"*_secret"},
				}, &wg)
				cs := downstream(t, p, down, pmcp.ClientOptions{Era: era, Elicitation: answerer})
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				tools, err := cs.AllTools(ctx)
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, tl := range tools {
					names = append(names, tl.Name)
				}
				slices.Sort(names)
				want := []string{"a_ask", "a_ask_then_progress", "a_block", "a_count", "a_echo", "a_env", "a_fail", "a_huge", "a_log", "a_meta", "a_pid", "a_roots", "a_roots_later", "a_sample", "b_ask", "b_ask_then_progress", "b_block", "b_count", "b_echo", "b_env", "b_fail", "b_huge", "b_log", "b_meta", "b_pid", "b_roots", "b_roots_later", "b_sample"}
				if !slices.Equal(names, want) {
					t.Fatalf("tools %v\nwant %v", names, want)
				}
				for _, c := range []struct{ tool, want string }{{"a_echo", "a: echo"}, {"b_echo", "b: echo"}, {"b_ask", "b: hello Ada (happy)"}, {"a_ask", "a: hello Ada (happy)"}} {
					res, err := cs.CallTool(ctx, c.tool, nil)
					if err != nil {
						t.Fatalf("%s: %v", c.tool, err)
					}
					if got := resultText(t, res); got != c.want {
						t.Fatalf("%s: %q, want %q", c.tool, got, c.want)
					}
				}
				// A denied tool answers as a missing one does, whether the
				// name routes to an upstream or not: nothing to probe.
				_, denied := cs.CallTool(ctx, "b_secret", nil)
				var dj *jsonrpc.Error
				if !errorsAs(denied, &dj) || dj.Code != jsonrpc.CodeInvalidParams || dj.Message != `unknown tool "b_secret"` {
					t.Fatalf("denied: %v", denied)
				}
				for _, name := range []string{"c_secret2", "b_nope", "a_secrets"} {
					_, missing := cs.CallTool(ctx, name, nil)
					var mj *jsonrpc.Error
					if !errorsAs(missing, &mj) || mj.Code != dj.Code || mj.Message != `unknown tool "`+name+`"` || len(mj.Data) != len(dj.Data) {
						t.Fatalf("missing %s: %v; want it shaped as the denied %v", name, missing, denied)
					}
				}
			})
		}
	}
}

// TestBridgeListChanged: a tool added upstream reaches the downstream as
// notifications/tools/list_changed (pushed to a legacy session, on the
// listen stream of a modern client), whatever the upstream's era.
func TestBridgeListChanged(t *testing.T) {
	for _, tc := range translations {
		for _, upT := range []string{"stream", "http"} {
			t.Run(tc.name+"/up-"+upT, func(t *testing.T) {
				srv, _ := newUpstream(t, tc.upstreamEr, "u")
				var wg sync.WaitGroup
				dial := memDial(srv, &wg)
				if upT == "http" {
					dial = httpDial(t, srv) // legacy: the GET stream; modern: listen
				}
				p := newProxy(t, Options{Upstreams: []Upstream{{Dial: dial}}}, &wg)
				changed := make(chan struct{}, 8)
				acked := make(chan struct{}, 1)
				cs := downstream(t, p, "http", pmcp.ClientOptions{Era: tc.clientEra, Notifications: pmcp.ClientNotificationHandlers{
					ToolsListChanged:         func(context.Context) { changed <- struct{}{} },
					SubscriptionAcknowledged: func(context.Context, *pmcp.SubscriptionsAckParams) { acked <- struct{}{} },
				}})
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if _, err := cs.ListTools(ctx, ""); err != nil { // opens the upstream session
					t.Fatal(err)
				}
				var lwg sync.WaitGroup
				if tc.clientEra == pmcp.EraModern {
					lctx, stop := context.WithCancel(ctx)
					defer func() { stop(); lwg.Wait() }()
					lwg.Add(1)
					go func() {
						defer lwg.Done()
						_ = cs.Listen(lctx, pmcp.SubscriptionFilter{ToolsListChanged: true})
					}()
					select {
					case <-acked:
					case <-ctx.Done():
						t.Fatal("listen never acknowledged")
					}
				}
				// The upstream's own subscription may still be opening: add
				// tools until one change arrives.
				for i := 0; ; i++ {
					if err := srv.AddRawTool(&pmcp.Tool{Name: "late" + string(rune('a'+i%26)), InputSchema: objectSchema}, func(context.Context, *pmcp.RequestHandlerExtra, *pmcp.CallToolParams) (*pmcp.CallToolResult, error) {
						return text("late"), nil
					}); err != nil {
						t.Fatal(err)
					}
					select {
					case <-changed:
						return
					case <-ctx.Done():
						t.Fatal("no list_changed reached the downstream")
					case <-time.After(20 * time.Millisecond):
					}
				}
			})
		}
	}
}

// TestBridgeParkingBounds: parked requests are bounded in number (the
// next one fails with -32603) and in time (a late answer finds nothing
// to resume, and the upstream call was cancelled).
func TestBridgeParkingBounds(t *testing.T) {
	srv, _ := newUpstream(t, pmcp.EraLegacy, "u")
	var wg sync.WaitGroup
	p := newProxy(t, Options{Upstreams: []Upstream{{Dial: memDial(srv, &wg)}}, MaxParked: 1, ParkTimeout: 100 * time.Millisecond, Shared: true}, &wg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	release := make(chan struct{})
	asked := make(chan struct{}, 1)
	slow := downstream(t, p, "http", pmcp.ClientOptions{Era: pmcp.EraModern, Elicitation: func(ctx context.Context, ep *pmcp.ElicitParams) (*pmcp.ElicitResult, error) {
		asked <- struct{}{}
		<-release
		return answerer(ctx, ep)
	}})
	errc := make(chan error, 1)
	go func() {
		_, err := slow.CallTool(ctx, "ask", nil)
		errc <- err
	}()
	<-asked // parked now
	other := downstream(t, p, "http", pmcp.ClientOptions{Era: pmcp.EraModern, Elicitation: answerer})
	_, err := other.CallTool(ctx, "ask", nil)
	var je *jsonrpc.Error
	if !errorsAs(err, &je) || je.Code != jsonrpc.CodeInternalError || je.Message != ErrTooManyParked.Error() {
		t.Fatalf("second parked request: %v, want -32603 %q", err, ErrTooManyParked)
	}
	// Let the first one time out, then answer.
	for {
		p.parked.mu.Lock()
		n := len(p.parked.m)
		p.parked.mu.Unlock()
		if n == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the parked request never timed out")
		case <-time.After(10 * time.Millisecond):
		}
	}
	close(release)
	err = <-errc
	if !errorsAs(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("late answer: %v, want -32602 (nothing to resume)", err)
	}
}

// TestBridgeMaxRounds: a bridged request asking for more input rounds
// than Server.MaxInputRounds fails with -32602 and cancels the upstream
// call.
func TestBridgeMaxRounds(t *testing.T) {
	srv, _ := newUpstream(t, pmcp.EraLegacy, "u")
	var wg sync.WaitGroup
	p := newProxy(t, Options{Upstreams: []Upstream{{Dial: memDial(srv, &wg)}}, Server: pmcp.ServerOptions{MaxInputRounds: 1}}, &wg)
	cs := downstream(t, p, "http", pmcp.ClientOptions{Era: pmcp.EraModern, Elicitation: answerer})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := cs.CallTool(ctx, "ask", nil) // asks twice
	var je *jsonrpc.Error
	if !errorsAs(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("error %v, want -32602 too many rounds", err)
	}
	if _, err := cs.CallTool(ctx, "echo", nil); err != nil {
		t.Fatalf("the proxy is unusable after: %v", err)
	}
}
