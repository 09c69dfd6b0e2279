package proxy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// stallableHTTP is an HTTP upstream whose handler can be made to stall
// (never answer until the request ends) and to recover; requests counts
// the requests it got.
type stallableHTTP struct {
	url      string
	stalled  atomic.Bool
	requests atomic.Int32
}

func newStallableHTTP(t *testing.T) *stallableHTTP {
	t.Helper()
	srv, _ := newUpstream(t, pmcp.EraUnknown, "b")
	h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{})
	s := &stallableHTTP{}
	release := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		if s.stalled.Load() && r.Method == http.MethodPost {
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
	s.url = ts.URL
	return s
}

// waitBreaker waits (bounded) until upstream i's breaker is in state want.
func waitBreaker(t *testing.T, p *Proxy, i int, want BreakerState) UpstreamStatus {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := p.Status()[i]
		if st.Breaker == want {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("breaker of %q is %q, want %q: %+v", st.Name, st.Breaker, want, st)
		}
		time.Sleep(10 * time.Millisecond) // the cool-down is a clock, not an event
	}
}

func wantInternal(t *testing.T, what string, err error, contains string) {
	t.Helper()
	var je *jsonrpc.Error
	if !errorsAs(err, &je) || je.Code != jsonrpc.CodeInternalError || !strings.Contains(je.Message, `upstream "b"`) || !strings.Contains(je.Message, contains) {
		t.Fatalf("%s: %v, want -32603 naming upstream \"b\" and %q", what, err, contains)
	}
}

// TestBreakerHangingUpstream: an upstream that stops answering has each
// call cut at its CallTimeout (-32603 naming it); after Breaker.Failures
// such calls its breaker opens and calls fail at once without reaching
// it, while the other upstream still answers; after the cool-down one
// trial call reaches it and, answered, closes the breaker. Both eras,
// both downstream transports.
func TestBreakerHangingUpstream(t *testing.T) {
	const timeout = 200 * time.Millisecond
	for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
		for _, down := range []string{"stream", "http"} {
			t.Run(era.String()+"/"+down, func(t *testing.T) {
				a, _ := newUpstream(t, pmcp.EraUnknown, "a")
				b := newStallableHTTP(t)
				var wg sync.WaitGroup
				p := newProxy(t, Options{Upstreams: []Upstream{
					{Name: "a", Dial: memDial(a, &wg)},
					{Name: "b", Dial: HTTP(b.url, pmcp.HTTPClientOptions{}), CallTimeout: timeout, Breaker: Breaker{Failures: 2, Cooldown: 400 * time.Millisecond}},
				}}, &wg)
				cs := downstream(t, p, down, pmcp.ClientOptions{Era: era})
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				if _, err := cs.CallTool(ctx, "b_echo", nil); err != nil {
					t.Fatalf("b before it stalled: %v", err)
				}
				if st := p.Status()[1]; st.Breaker != BreakerClosed || !st.Up {
					t.Fatalf("b's status %+v, want up, breaker closed", st)
				}
				b.stalled.Store(true)
				for i := range 2 {
					start := time.Now()
					_, err := cs.CallTool(ctx, "b_echo", nil)
					wantInternal(t, "a stalled call", err, "no answer within 200ms")
					if d := time.Since(start); d > timeout+2*time.Second {
						t.Fatalf("call %d took %v with a %v timeout", i, d, timeout)
					}
				}
				st := waitBreaker(t, p, 1, BreakerOpen)
				if st.Up || st.Failures != 2 {
					t.Fatalf("b's status %+v, want down after 2 failures", st)
				}
				before := b.requests.Load()
				start := time.Now()
				_, err := cs.CallTool(ctx, "b_echo", nil)
				wantInternal(t, "a call while open", err, "circuit open")
				if d := time.Since(start); d >= timeout {
					t.Fatalf("a call while open took %v: not failing fast", d)
				}
				if n := b.requests.Load(); n != before {
					t.Fatalf("the open breaker let %d requests reach the upstream", n-before)
				}
				if res, err := cs.CallTool(ctx, "a_echo", nil); err != nil || resultText(t, res) != "a: echo" {
					t.Fatalf("a while b is open: %v %v", res, err)
				}
				b.stalled.Store(false)
				waitBreaker(t, p, 1, BreakerHalfOpen)
				if res, err := cs.CallTool(ctx, "b_echo", nil); err != nil || resultText(t, res) != "b: echo" {
					t.Fatalf("the trial call: %v %v", res, err)
				}
				if st := p.Status()[1]; st.Breaker != BreakerClosed || !st.Up || st.Failures != 0 {
					t.Fatalf("b's status after the trial %+v, want up, closed", st)
				}
			})
		}
	}
}

// TestBreakerFailingUpstream: an upstream that cannot be reached (its
// server gone) opens its breaker after Breaker.Failures failed dials: the
// calls then fail at once without dialing, Probe included, and Status
// names it open; a failed trial opens it again. JSON-RPC errors of an
// upstream that answers never open it.
func TestBreakerFailingUpstream(t *testing.T) {
	for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
		t.Run(era.String(), func(t *testing.T) {
			a, _ := newUpstream(t, pmcp.EraUnknown, "a")
			dead, _ := deadDial(t, "http-closed")
			var dials atomic.Int32
			var wg sync.WaitGroup
			p := newProxy(t, Options{Upstreams: []Upstream{
				{Name: "a", Dial: memDial(a, &wg), Breaker: Breaker{Failures: 1}},
				{Name: "b", Dial: countDials(dead, &dials), Breaker: Breaker{Failures: 3, Cooldown: 300 * time.Millisecond}},
			}, MaxRestarts: 100}, &wg)
			cs := downstream(t, p, "stream", pmcp.ClientOptions{Era: era})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			for range 3 {
				_, err := cs.CallTool(ctx, "b_echo", nil)
				wantInternal(t, "a call to the dead upstream", err, "cannot connect")
			}
			waitBreaker(t, p, 1, BreakerOpen)
			n := dials.Load()
			for range 5 {
				_, err := cs.CallTool(ctx, "b_echo", nil)
				wantInternal(t, "a call while open", err, "circuit open")
			}
			if st := p.Probe(ctx)[1]; st.Up || st.Breaker != BreakerOpen {
				t.Fatalf("Probe while open: %+v", st)
			}
			if got := dials.Load(); got != n {
				t.Fatalf("%d dials while the breaker was open", got-n)
			}
			waitBreaker(t, p, 1, BreakerHalfOpen)
			_, err := cs.CallTool(ctx, "b_echo", nil)
			wantInternal(t, "the trial call", err, "cannot connect")
			if got := dials.Load(); got != n+1 {
				t.Fatalf("%d dials for the trial, want 1", got-n)
			}
			waitBreaker(t, p, 1, BreakerOpen)
			// An upstream's own errors are answers: a's breaker (one
			// failure opens it) stays closed.
			for range 3 {
				_, err := cs.CallTool(ctx, "a_fail", nil)
				var je *jsonrpc.Error
				if !errorsAs(err, &je) || je.Code != -32050 {
					t.Fatalf("a_fail: %v, want the upstream's -32050", err)
				}
			}
			if st := p.Status()[0]; st.Breaker != BreakerClosed || !st.Up {
				t.Fatalf("a's status %+v, want up, closed", st)
			}
		})
	}
}
