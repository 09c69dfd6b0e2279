package proxy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
)

// TestBridgeFeatures: prompts, resources, templates, completions,
// sampling and roots cross the bridge in every era pair; aggregated, the
// prompt names are prefixed and completions routed by them.
func TestBridgeFeatures(t *testing.T) {
	for _, tc := range translations {
		for _, agg := range []bool{false, true} {
			name := tc.name
			if agg {
				name += "/aggregated"
			}
			t.Run(name, func(t *testing.T) {
				var wg sync.WaitGroup
				srv, _ := newUpstream(t, tc.upstreamEr, "u")
				ups := []Upstream{{Name: "u", Dial: memDial(srv, &wg)}}
				prefix := ""
				if agg {
					other, _ := newUpstream(t, tc.upstreamEr, "v")
					ups = append(ups, Upstream{Name: "v", Dial: memDial(other, &wg)})
					prefix = "u_"
				}
				p := newProxy(t, Options{Upstreams: ups}, &wg)
				cs := downstream(t, p, "stream", pmcp.ClientOptions{Era: tc.clientEra,
					Sampling: func(context.Context, *pmcp.CreateMessageParams) (*pmcp.CreateMessageResult, error) {
						return &pmcp.CreateMessageResult{Role: "assistant", Content: pmcp.Text("4"), Model: "test"}, nil
					},
					Roots: func(context.Context) (*pmcp.ListRootsResult, error) {
						return &pmcp.ListRootsResult{Roots: []*pmcp.Root{{URI: "file:///a"}, {URI: "file:///b"}}}, nil
					},
				})
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()

				prompts, err := cs.AllPrompts(ctx)
				if err != nil || len(prompts) == 0 || prompts[0].Name != prefix+"greet" {
					t.Fatalf("prompts %v, %v", prompts, err)
				}
				pr, err := cs.GetPrompt(ctx, prefix+"greet", map[string]string{"who": "Ada"})
				if err != nil || len(pr.Messages) != 1 || pr.Messages[0].Content.(*pmcp.TextContent).Text != "u: hello Ada" {
					t.Fatalf("prompts/get: %+v, %v", pr, err)
				}
				res, err := cs.AllResources(ctx)
				if err != nil || len(res) == 0 || res[0].URI != "test://u/r" {
					t.Fatalf("resources %v, %v", res, err)
				}
				for uri, want := range map[string]string{"test://u/r": "u: body", "test://u/t/7": "u: item 7"} {
					rr, err := cs.ReadResource(ctx, uri)
					if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != want {
						t.Fatalf("read %s: %+v, %v", uri, rr, err)
					}
				}
				if agg {
					rr, err := cs.ReadResource(ctx, "test://v/t/8")
					if err != nil || rr.Contents[0].Text != "v: item 8" {
						t.Fatalf("read from the second upstream: %+v, %v", rr, err)
					}
				}
				tmpls, err := cs.AllResourceTemplates(ctx)
				if err != nil || len(tmpls) == 0 || tmpls[0].URITemplate != "test://u/t/{id}" {
					t.Fatalf("templates %v, %v", tmpls, err)
				}
				cp := &pmcp.CompleteParams{Ref: pmcp.CompleteReference{Type: "ref/prompt", Name: prefix + "greet"}}
				cp.Argument.Name, cp.Argument.Value = "who", "A"
				cr, err := cs.Complete(ctx, cp)
				if err != nil || len(cr.Completion.Values) != 1 || cr.Completion.Values[0] != "u:greet:A" {
					t.Fatalf("complete: %+v, %v", cr, err)
				}
				r, err := cs.CallTool(ctx, prefix+"sample", nil)
				if err != nil || resultText(t, r) != "u: model said 4, roots 2" {
					t.Fatalf("sample: %+v, %v", r, err)
				}
			})
		}
	}
}

// TestBridgeCredentials: the downstream's Authorization header never
// reaches an HTTP upstream; the upstream's own header does.
func TestBridgeCredentials(t *testing.T) {
	srv, _ := newUpstream(t, pmcp.EraUnknown, "u")
	var mu sync.Mutex
	var seen []string
	h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		_ = h.Close()
		ts.Close()
	})
	p := newProxy(t, Options{Upstreams: []Upstream{{Dial: HTTP(ts.URL, pmcp.HTTPClientOptions{Header: http.Header{"Authorization": {"Bearer upstream-own"}}})}}}, nil)
	ph := pmcp.NewStreamableHTTPHandler(p.Server(), pmcp.StreamableHTTPOptions{})
	pts := httptest.NewServer(ph)
	t.Cleanup(func() {
		_ = ph.Close()
		pts.Close()
	})
	for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cs, err := pmcp.NewClient(pmcp.ClientOptions{Era: era}).ConnectHTTP(ctx, pts.URL, pmcp.HTTPClientOptions{Header: http.Header{"Authorization": {"Bearer downstream-secret"}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CallTool(ctx, "echo", nil); err != nil {
			t.Fatal(err)
		}
		_ = cs.Close()
		cancel()
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 {
		t.Fatal("the upstream saw no request")
	}
	for _, a := range seen {
		if a != "Bearer upstream-own" {
			t.Fatalf("the upstream saw Authorization %q", a)
		}
	}
}

// TestBridgeHeaderToEnvAndShared: per-session children get the
// downstream header mapped into their environment; with Shared, two
// sessions use one child, which gets none.
func TestBridgeHeaderToEnvAndShared(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(map[bool]string{false: "per-session", true: "shared"}[shared], func(t *testing.T) {
			dial, err := Command(os.Args[0], nil, CommandOptions{Env: []string{childEnv + "=1", noRaceExitSleep}, HeaderToEnv: map[string]string{"X-Tenant-Token": "TENANT_TOKEN"}})
			if err != nil {
				t.Fatal(err)
			}
			p := newProxy(t, Options{Upstreams: []Upstream{{Dial: dial}}, Shared: shared}, nil)
			h := pmcp.NewStreamableHTTPHandler(p.Server(), pmcp.StreamableHTTPOptions{})
			ts := httptest.NewServer(h)
			t.Cleanup(func() {
				_ = h.Close()
				ts.Close()
			})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var pids, envs []string
			for _, tok := range []string{"alpha", "beta"} {
				cs, err := pmcp.NewClient(pmcp.ClientOptions{Era: pmcp.EraLegacy}).ConnectHTTP(ctx, ts.URL, pmcp.HTTPClientOptions{Header: http.Header{"X-Tenant-Token": {tok}}})
				if err != nil {
					t.Fatal(err)
				}
				defer cs.Close()
				pids = append(pids, callText(t, ctx, cs, "pid"))
				envs = append(envs, callText(t, ctx, cs, "env"))
			}
			if shared {
				if pids[0] != pids[1] || envs[0] != "" || envs[1] != "" {
					t.Fatalf("shared: pids %v, env %q; want one child without the header", pids, envs)
				}
				return
			}
			if pids[0] == pids[1] || strings.Join(envs, ",") != "alpha,beta" {
				t.Fatalf("per session: pids %v, env %q", pids, envs)
			}
		})
	}
}

func callText(t *testing.T, ctx context.Context, cs *pmcp.ClientSession, tool string) string {
	t.Helper()
	res, err := cs.CallTool(ctx, tool, nil)
	if err != nil {
		t.Fatal(err)
	}
	return resultText(t, res)
}

// TestBridgeSubscriptions: a resource update upstream reaches a legacy
// client that subscribed and a modern client listening for it.
func TestBridgeSubscriptions(t *testing.T) {
	for _, tc := range translations {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := newUpstream(t, tc.upstreamEr, "u")
			var wg sync.WaitGroup
			p := newProxy(t, Options{Upstreams: []Upstream{{Dial: memDial(srv, &wg)}}, Shared: true}, &wg)
			updated := make(chan string, 16)
			acked := make(chan struct{}, 1)
			cs := downstream(t, p, "http", pmcp.ClientOptions{Era: tc.clientEra, Notifications: pmcp.ClientNotificationHandlers{
				ResourceUpdated:          func(_ context.Context, u *pmcp.ResourceUpdatedParams) { updated <- u.URI },
				SubscriptionAcknowledged: func(context.Context, *pmcp.SubscriptionsAckParams) { acked <- struct{}{} },
			}})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			const uri = "test://u/r"
			defer subscribeDownstream(t, ctx, cs, tc.clientEra, uri, acked)()
			awaitUpdate(t, ctx, srv, uri, updated)
		})
	}
}

// subscribeDownstream subscribes cs to uri as a client of era does (a
// modern one with a listen, acknowledged on acked); the returned function
// ends the listen.
func subscribeDownstream(t *testing.T, ctx context.Context, cs *pmcp.ClientSession, era pmcp.Era, uri string, acked <-chan struct{}) func() {
	t.Helper()
	if era != pmcp.EraModern {
		if err := cs.Subscribe(ctx, uri); err != nil {
			t.Fatal(err)
		}
		return func() {}
	}
	var lwg sync.WaitGroup
	lctx, stop := context.WithCancel(ctx)
	lwg.Add(1)
	go func() {
		defer lwg.Done()
		_ = cs.Listen(lctx, pmcp.SubscriptionFilter{ResourceSubscriptions: []string{uri}})
	}()
	select {
	case <-acked:
	case <-ctx.Done():
		stop()
		lwg.Wait()
		t.Fatal("listen never acknowledged")
	}
	return func() { stop(); lwg.Wait() }
}

// awaitUpdate has srv announce an update of uri until the downstream gets
// it on updated: the upstream's own subscription may still be opening (a
// modern upstream's listen).
func awaitUpdate(t *testing.T, ctx context.Context, srv *pmcp.Server, uri string, updated <-chan string) {
	t.Helper()
	for {
		srv.NotifyResourceUpdated(uri)
		select {
		case got := <-updated:
			if got != uri {
				t.Fatalf("update of %q", got)
			}
			return
		case <-ctx.Done():
			t.Fatal("no resource update reached the downstream")
		case <-time.After(20 * time.Millisecond):
		}
	}
}
