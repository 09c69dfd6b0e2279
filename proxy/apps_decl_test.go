package proxy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
)

// TestBridgeAppsDeclarationSeen: the Apps declaration each request to the
// upstream carries, request by request (its session's for a 2025-11-25
// upstream, its own for a 2026-07-28 one), for a downstream client that
// declares none and one that declares its own mimeTypes: the requests
// made for the client carry the client's (the default in a session the
// client shares with others), the ones the proxy makes on its own the
// default.
func TestBridgeAppsDeclarationSeen(t *testing.T) {
	// D: the proxy's default, H: the host's mimeTypes, N: none. A legacy
	// server reads the declaration of its session's initialize; the
	// upstream records server/discover probes of the era negotiation too.
	want := map[string]string{
		"modern-client/legacy-upstream/host=false": "initialize N, logging/setLevel D, server/discover D, tools/call D, tools/list D",
		"modern-client/legacy-upstream/host=true":  "initialize N, logging/setLevel D, server/discover D, tools/call D, tools/list D",
		"legacy-client/modern-upstream/host=false": "server/discover N, subscriptions/listen D, tools/call N, tools/list N",
		"legacy-client/modern-upstream/host=true":  "server/discover H, subscriptions/listen D, tools/call H, tools/list H",
		"modern-client/modern-upstream/host=false": "server/discover D, subscriptions/listen D, tools/call N, tools/list N",
		"modern-client/modern-upstream/host=true":  "server/discover D, subscriptions/listen D, tools/call H, tools/list H",
		"legacy-client/legacy-upstream/host=false": "initialize N, logging/setLevel N, server/discover N, tools/call N, tools/list N",
		"legacy-client/legacy-upstream/host=true":  "initialize N, logging/setLevel H, server/discover H, tools/call H, tools/list H",
	}
	names := map[string]string{`["text/html;profile=mcp-app"]`: "D", `["text/html;profile=mcp-app","text/html;profile=test"]`: "H", "none": "N"}
	for _, tc := range translations {
		for _, host := range []bool{false, true} {
			name := fmt.Sprintf("%s/host=%v", tc.name, host)
			t.Run(name, func(t *testing.T) {
				var mu sync.Mutex
				seen := map[string]map[string]bool{} // method: declarations
				listening := make(chan struct{}, 1)
				record := func(next pmcp.MethodHandler) pmcp.MethodHandler {
					return func(ctx context.Context, req *pmcp.Request) (pmcp.Result, error) {
						decl := "none"
						if caps := req.Extra.ClientCapabilities(); caps != nil && caps.Extensions[pmcp.ExtensionApps] != nil {
							b, _ := pmcp.Marshal(caps.Extensions[pmcp.ExtensionApps]["mimeTypes"])
							decl = string(b)
						}
						mu.Lock()
						if seen[req.Method] == nil {
							seen[req.Method] = map[string]bool{}
						}
						seen[req.Method][decl] = true
						mu.Unlock()
						if req.Method == pmcp.MethodSubscriptionsListen {
							select {
							case listening <- struct{}{}:
							default:
							}
						}
						return next(ctx, req)
					}
				}
				mw := []pmcp.Middleware{record}
				if tc.upstreamEr != pmcp.EraUnknown {
					mw = append(mw, onlyEra(tc.upstreamEr))
				}
				srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "u", Middleware: mw})
				if err != nil {
					t.Fatal(err)
				}
				if err := srv.AddRawTool(&pmcp.Tool{Name: "t", InputSchema: objectSchema}, func(context.Context, *pmcp.RequestHandlerExtra, *pmcp.CallToolParams) (*pmcp.CallToolResult, error) {
					return text("ok"), nil
				}); err != nil {
					t.Fatal(err)
				}
				var wg sync.WaitGroup
				p := newProxy(t, Options{Upstreams: []Upstream{{Name: "u", Dial: memDial(srv, &wg)}}}, &wg)
				opts := pmcp.ClientOptions{Era: tc.clientEra}
				if host {
					opts.AppMIMETypes = testMIMETypes
				}
				cs := downstream(t, p, "http", opts)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if _, err := cs.CallTool(ctx, "t", nil); err != nil {
					t.Fatal(err)
				}
				if _, err := cs.AllTools(ctx); err != nil {
					t.Fatal(err)
				}
				if tc.upstreamEr == pmcp.EraModern {
					select { // the proxy opens the stream on its own
					case <-listening:
					case <-ctx.Done():
						t.Fatal("the proxy opened no subscriptions/listen stream")
					}
				}
				mu.Lock()
				var got []string
				for m, ds := range seen {
					var d []string
					for k := range ds {
						if n, ok := names[k]; ok {
							k = n
						}
						d = append(d, k)
					}
					slices.Sort(d)
					got = append(got, m+" "+strings.Join(d, " "))
				}
				mu.Unlock()
				slices.Sort(got)
				if g := strings.Join(got, ", "); g != want[name] {
					t.Errorf("the upstream saw the declarations\n%s\nwant\n%s", g, want[name])
				}
			})
		}
	}
}
