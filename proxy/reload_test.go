package proxy

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// recordSessions records the upstream sessions d opens.
func recordSessions(d DialFunc, mu *sync.Mutex, out *[]*pmcp.ClientSession) DialFunc {
	return func(ctx context.Context, c *pmcp.Client, ds Downstream) (Conn, error) {
		conn, err := d(ctx, c, ds)
		if err == nil {
			mu.Lock()
			*out = append(*out, conn.Session)
			mu.Unlock()
		}
		return conn, err
	}
}

// TestSetUpstreams: under a steady load of calls on an unchanged upstream,
// SetUpstreams refuses an invalid set (the old one kept), then removes one
// upstream and adds another: no call on the unchanged one fails nor is its
// session re-dialed, the removed one's call in flight finishes before its
// session closes, its tools are gone and the new one's listed, and the
// downstream is told that the lists changed. A replaced upstream (a new
// Fingerprint) is re-dialed. Both eras, both downstream transports.
func TestSetUpstreams(t *testing.T) {
	for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
		for _, down := range []string{"stream", "http"} {
			t.Run(era.String()+"/"+down, func(t *testing.T) {
				a, _ := newUpstream(t, pmcp.EraUnknown, "a")
				b, _ := newUpstream(t, pmcp.EraUnknown, "b")
				c, _ := newUpstream(t, pmcp.EraUnknown, "c")
				started, release := make(chan struct{}, 1), make(chan struct{})
				if err := b.AddRawTool(&pmcp.Tool{Name: "slow", InputSchema: objectSchema}, func(ctx context.Context, _ *pmcp.RequestHandlerExtra, _ *pmcp.CallToolParams) (*pmcp.CallToolResult, error) {
					started <- struct{}{}
					select {
					case <-release:
						return text("b: slow done"), nil
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				}); err != nil {
					t.Fatal(err)
				}
				var wg sync.WaitGroup
				var aDials atomic.Int32
				var smu sync.Mutex
				var bSessions []*pmcp.ClientSession
				ua := Upstream{Name: "a", Dial: countDials(memDial(a, &wg), &aDials), Fingerprint: "a1"}
				ub := Upstream{Name: "b", Dial: recordSessions(memDial(b, &wg), &smu, &bSessions), Fingerprint: "b1"}
				uc := Upstream{Name: "c", Dial: memDial(c, &wg), Fingerprint: "c1"}
				p := newProxy(t, Options{Upstreams: []Upstream{ua, ub}}, &wg)
				changed := make(chan struct{}, 64)
				acked := make(chan struct{}, 1)
				cs := downstream(t, p, down, pmcp.ClientOptions{Era: era, Notifications: pmcp.ClientNotificationHandlers{
					ToolsListChanged:         func(context.Context) { changed <- struct{}{} },
					SubscriptionAcknowledged: func(context.Context, *pmcp.SubscriptionsAckParams) { acked <- struct{}{} },
				}})
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if era == pmcp.EraModern {
					lctx, stop := context.WithCancel(ctx)
					var lwg sync.WaitGroup
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
				for _, name := range []string{"a_echo", "b_echo"} {
					if _, err := cs.CallTool(ctx, name, nil); err != nil {
						t.Fatalf("%s before the change: %v", name, err)
					}
				}
				dialsBefore := aDials.Load()

				// Load on a during every change.
				stop := make(chan struct{})
				var load sync.WaitGroup
				var calls, failed atomic.Int32
				var firstErr atomic.Value
				for range 4 {
					load.Add(1)
					go func() {
						defer load.Done()
						for {
							select {
							case <-stop:
								return
							default:
							}
							res, err := cs.CallTool(ctx, "a_echo", nil)
							calls.Add(1)
							if err != nil || resultText(t, res) != "a: echo" {
								failed.Add(1)
								firstErr.CompareAndSwap(nil, err)
							}
						}
					}()
				}
				slow := make(chan error, 1)
				go func() {
					res, err := cs.CallTool(ctx, "b_slow", nil)
					if err == nil && resultText(t, res) != "b: slow done" {
						err = errors.New("wrong result " + resultText(t, res))
					}
					slow <- err
				}()
				<-started

				for _, bad := range [][]Upstream{
					nil,
					{ua, {Name: "a_b", Dial: uc.Dial}},
					{ua, {Name: "a", Dial: uc.Dial}},
					{ua, {Name: "c"}},
				} {
					if err := p.SetUpstreams(bad); !errors.Is(err, ErrInvalidOptions) {
						t.Fatalf("SetUpstreams(%v): %v, want ErrInvalidOptions", bad, err)
					}
				}
				if _, err := cs.CallTool(ctx, "b_echo", nil); err != nil {
					t.Fatalf("b after a refused change: %v", err)
				}

				if err := p.SetUpstreams([]Upstream{ua, uc}); err != nil {
					t.Fatal(err)
				}
				select {
				case <-changed:
				case <-ctx.Done():
					t.Fatal("no tools list_changed after the change")
				}
				tools, err := cs.AllTools(ctx)
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, tl := range tools {
					names = append(names, tl.Name)
				}
				if !slices.Contains(names, "c_echo") || !slices.Contains(names, "a_echo") || slices.Contains(names, "b_echo") {
					t.Fatalf("tools after the change: %v", names)
				}
				if res, err := cs.CallTool(ctx, "c_echo", nil); err != nil || resultText(t, res) != "c: echo" {
					t.Fatalf("c_echo: %v %v", res, err)
				}
				var je *jsonrpc.Error
				if _, err := cs.CallTool(ctx, "b_echo", nil); !errorsAs(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
					t.Fatalf("b_echo after b was removed: %v, want unknown tool", err)
				}
				if st := p.Status(); len(st) != 2 || st[0].Name != "a" || st[1].Name != "c" {
					t.Fatalf("Status after the change: %+v", st)
				}
				smu.Lock()
				bs := slices.Clone(bSessions)
				smu.Unlock()
				for _, s := range bs {
					select {
					case <-s.Done():
						t.Fatal("b's session closed with a call in flight")
					default:
					}
				}
				close(release)
				if err := <-slow; err != nil {
					t.Fatalf("the removed upstream's call in flight: %v", err)
				}
				for _, s := range bs {
					select {
					case <-s.Done():
					case <-ctx.Done():
						t.Fatal("b's session still open after its call ended")
					}
				}
				if n := aDials.Load(); n != dialsBefore {
					t.Fatalf("a was dialed %d times during the change, want 0 (unchanged)", n-dialsBefore)
				}

				close(stop)
				load.Wait()
				if n := failed.Load(); n > 0 {
					t.Fatalf("%d of %d calls on a failed during the change, first: %v", n, calls.Load(), firstErr.Load())
				}

				// Replacing a (a new fingerprint) re-dials it.
				ua2 := ua
				ua2.Fingerprint = "a2"
				if err := p.SetUpstreams([]Upstream{ua2, uc}); err != nil {
					t.Fatal(err)
				}
				if res, err := cs.CallTool(ctx, "a_echo", nil); err != nil || resultText(t, res) != "a: echo" {
					t.Fatalf("a_echo after a was replaced: %v %v", res, err)
				}
				if aDials.Load() == dialsBefore {
					t.Fatal("a replaced but not re-dialed")
				}
			})
		}
	}
}
