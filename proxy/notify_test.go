package proxy

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
)

// TestBridgeLogging: the upstream's log records of a call reach the
// downstream request that made it, filtered by the downstream's level,
// before the call's result.
func TestBridgeLogging(t *testing.T) {
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
				var mu sync.Mutex
				var got []string
				cs := downstream(t, p, "stream", pmcp.ClientOptions{Era: tc.clientEra, LogLevel: pmcp.LevelInfo, Notifications: pmcp.ClientNotificationHandlers{
					LogMessage: func(_ context.Context, lp *pmcp.LoggingMessageParams) {
						s, _ := lp.Data.(string)
						mu.Lock()
						got = append(got, s)
						mu.Unlock()
					},
				}})
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if _, err := cs.CallTool(ctx, "log", nil); err != nil {
					t.Fatal(err)
				}
				for {
					mu.Lock()
					n := len(got)
					mu.Unlock()
					if n > 0 {
						break
					}
					select {
					case <-ctx.Done():
						t.Fatal("the upstream's log record never reached the downstream")
					case <-time.After(5 * time.Millisecond):
					}
				}
				mu.Lock()
				defer mu.Unlock()
				if len(got) != 1 || got[0] != "u: hello log" {
					t.Fatalf("log records %q, want the info one only", got)
				}
			})
		}
	}
}

// TestBridgeRootsListChanged: a legacy client's roots list_changed
// reaches a legacy upstream.
func TestBridgeRootsListChanged(t *testing.T) {
	srv, st := newUpstream(t, pmcp.EraLegacy, "u")
	var wg sync.WaitGroup
	p := newProxy(t, Options{Upstreams: []Upstream{{Dial: memDial(srv, &wg)}}}, &wg)
	cs := downstream(t, p, "stream", pmcp.ClientOptions{Era: pmcp.EraLegacy, Roots: func(context.Context) (*pmcp.ListRootsResult, error) {
		return &pmcp.ListRootsResult{Roots: []*pmcp.Root{}}, nil
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cs.ListTools(ctx, ""); err != nil { // opens the upstream session
		t.Fatal(err)
	}
	if err := cs.NotifyRootsListChanged(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-st.roots:
	case <-ctx.Done():
		t.Fatal("the upstream never heard of the roots change")
	}
}
