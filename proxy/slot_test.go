package proxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
	"github.com/gopmcp/pmcp/transport/memory"
)

// countDials counts the dials of d.
func countDials(d DialFunc, n *atomic.Int32) DialFunc {
	return func(ctx context.Context, c *pmcp.Client, ds Downstream) (Conn, error) {
		n.Add(1)
		return d(ctx, c, ds)
	}
}

// TestSlotGivesUp: a child that always exits at once is started at most
// 1+MaxRestarts times however many requests come; once the slot gave up,
// every request fails at once with -32603 naming the upstream. Both eras
// (a legacy downstream session has its own slot, modern requests share
// one), both downstream transports.
func TestSlotGivesUp(t *testing.T) {
	for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
		for _, down := range []string{"stream", "http"} {
			t.Run(era.String()+"/"+down, func(t *testing.T) {
				d, err := Command(os.Args[0], nil, CommandOptions{Env: []string{childEnv + "=exit", noRaceExitSleep}})
				if err != nil {
					t.Fatal(err)
				}
				var dials atomic.Int32
				p := newProxy(t, Options{Upstreams: []Upstream{{Name: "child", Dial: countDials(d, &dials)}}, MaxRestarts: 2}, nil)
				cs := downstream(t, p, down, pmcp.ClientOptions{Era: era})
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				for i := 0; i < 12; i++ {
					_, err := cs.CallTool(ctx, "echo", nil)
					var je *jsonrpc.Error
					if !asRPC(err, &je) || je.Code != jsonrpc.CodeInternalError || !strings.Contains(je.Message, `upstream "child"`) {
						t.Fatalf("call %d: %v, want -32603 naming the upstream", i, err)
					}
				}
				if n := dials.Load(); n > 3 {
					t.Fatalf("%d dials for 12 requests, want at most 1+MaxRestarts = 3", n)
				}
			})
		}
	}
}

// switchDial dials srv over in-memory pipes, or fails while down; kill
// breaks the open sessions.
type switchDial struct {
	srv *pmcp.Server
	wg  *sync.WaitGroup

	mu   sync.Mutex
	down bool
	ends []jsonrpc.Stream
}

func (d *switchDial) setDown(down bool) {
	d.mu.Lock()
	d.down = down
	d.mu.Unlock()
}

func (d *switchDial) kill() {
	d.mu.Lock()
	ends := d.ends
	d.ends = nil
	d.mu.Unlock()
	for _, e := range ends {
		_ = e.Close()
	}
}

func (d *switchDial) dial(ctx context.Context, c *pmcp.Client, _ Downstream) (Conn, error) {
	d.mu.Lock()
	if d.down {
		d.mu.Unlock()
		return Conn{}, errors.New("connection refused")
	}
	a, b := memory.NewPipe()
	d.ends = append(d.ends, a)
	d.mu.Unlock()
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		_ = d.srv.Serve(context.Background(), a)
	}()
	s, err := c.Connect(ctx, b)
	if err != nil {
		return Conn{}, err
	}
	return Conn{Session: s}, nil
}

// TestSubscriptionsSurviveRedial: a downstream's resource subscription
// reaches an upstream that was re-dialed, whether its session broke after
// the subscription ("restart") or it was down when the downstream
// subscribed ("down-at-subscribe"), so its resource updates keep flowing.
// Both upstream eras (a legacy upstream is sent resources/subscribe, a
// modern one a subscriptions/listen), both downstream eras and transports.
func TestSubscriptionsSurviveRedial(t *testing.T) {
	for _, upEra := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
		for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
			for _, down := range []string{"stream", "http"} {
				for _, kind := range []string{"restart", "down-at-subscribe"} {
					t.Run(upEra.String()+"-upstream/"+era.String()+"-client/"+down+"/"+kind, func(t *testing.T) {
						a, _ := newUpstream(t, upEra, "a")
						b, _ := newUpstream(t, upEra, "b")
						var wg sync.WaitGroup
						bd := &switchDial{srv: b, wg: &wg}
						p := newProxy(t, Options{Upstreams: []Upstream{{Name: "a", Dial: memDial(a, &wg)}, {Name: "b", Dial: bd.dial}}}, &wg)
						updated := make(chan string, 16)
						acked := make(chan struct{}, 1)
						cs := downstream(t, p, down, pmcp.ClientOptions{Era: era, Notifications: pmcp.ClientNotificationHandlers{
							ResourceUpdated:          func(_ context.Context, u *pmcp.ResourceUpdatedParams) { updated <- u.URI },
							SubscriptionAcknowledged: func(context.Context, *pmcp.SubscriptionsAckParams) { acked <- struct{}{} },
						}})
						ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
						defer cancel()
						const uri = "test://b/r"
						if kind == "down-at-subscribe" {
							bd.setDown(true)
						}
						defer subscribeDownstream(t, ctx, cs, era, uri, acked)()
						if kind == "restart" {
							bd.kill()
						} else {
							bd.setDown(false)
						}
						// The next request to b re-dials it.
						for {
							if _, err := cs.CallTool(ctx, "b_echo", nil); err == nil {
								break
							}
							select {
							case <-ctx.Done():
								t.Fatal("b was never re-dialed")
							case <-time.After(5 * time.Millisecond):
							}
						}
						uctx, ucancel := context.WithTimeout(ctx, 3*time.Second)
						defer ucancel()
						awaitUpdate(t, uctx, b, uri, updated)
					})
				}
			}
		}
	}
}

// restartableHTTP serves srv on a loopback port that stays the same across
// stop and start, as a server that is restarted does.
type restartableHTTP struct {
	t    *testing.T
	era  pmcp.Era
	addr string
	hs   *http.Server
	h    *pmcp.StreamableHTTPHandler
	done chan struct{}
}

func (r *restartableHTTP) start() {
	r.t.Helper()
	addr := r.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		r.t.Fatal(err)
	}
	r.addr = ln.Addr().String()
	srv, _ := newUpstream(r.t, r.era, "u")
	r.h = pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{})
	r.hs = &http.Server{Handler: r.h}
	r.done = make(chan struct{})
	go func(hs *http.Server, done chan struct{}) {
		defer close(done)
		_ = hs.Serve(ln)
	}(r.hs, r.done)
}

func (r *restartableHTTP) stop() {
	if r.hs == nil {
		return
	}
	_ = r.h.Close()
	_ = r.hs.Close()
	<-r.done
	r.hs = nil
}

// TestHTTPUpstreamBreaks: a call to an HTTP upstream whose server went
// away fails at once (not after waiting for the end of a session that an
// HTTP session never reports) with -32603 naming the upstream, the
// upstream is down in Status, and once the server is back the next
// request re-dials it. Both upstream eras, both downstream eras and
// transports.
func TestHTTPUpstreamBreaks(t *testing.T) {
	for _, upEra := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
		for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
			for _, down := range []string{"stream", "http"} {
				t.Run(upEra.String()+"-upstream/"+era.String()+"-client/"+down, func(t *testing.T) {
					up := &restartableHTTP{t: t, era: upEra}
					up.start()
					t.Cleanup(up.stop)
					var dials atomic.Int32
					p := newProxy(t, Options{Upstreams: []Upstream{{Name: "u", Dial: countDials(HTTP("http://"+up.addr, pmcp.HTTPClientOptions{}), &dials)}}}, nil)
					cs := downstream(t, p, down, pmcp.ClientOptions{Era: era})
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					defer cancel()
					if got := callText(t, ctx, cs, "echo"); got != "u: echo" {
						t.Fatalf("echo: %q", got)
					}
					up.stop()
					start := time.Now()
					_, err := cs.CallTool(ctx, "echo", nil)
					took := time.Since(start)
					var je *jsonrpc.Error
					if !asRPC(err, &je) || je.Code != jsonrpc.CodeInternalError || !strings.Contains(je.Message, `upstream "u"`) {
						t.Fatalf("echo with the server gone: %v, want -32603 naming the upstream", err)
					}
					if took >= endGrace {
						t.Fatalf("echo with the server gone failed after %v: %v", took, err)
					}
					if st := p.Status()[0]; st.Up || st.Err == nil {
						t.Errorf("status with the server gone: %+v", st)
					}
					up.start()
					if got := callText(t, ctx, cs, "echo"); got != "u: echo" {
						t.Fatalf("echo after the server came back: %q", got)
					}
					if n := dials.Load(); n != 2 {
						t.Errorf("%d dials, want 2 (the first, and one after the server came back)", n)
					}
					if st := p.Status()[0]; !st.Up {
						t.Errorf("status after the server came back: %+v", st)
					}
				})
			}
		}
	}
}
