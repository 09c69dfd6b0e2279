package pmcp

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// Request.NameRegistered tells middleware whether the peer's name names a
// registered tool, prompt, resource or template match, over every
// transport and in both eras; names of nothing are false.
func TestRequestNameRegistered(t *testing.T) {
	for _, era := range []Era{EraLegacy, EraModern} {
		for _, tr := range mwTransports {
			t.Run(fmt.Sprint(era, "/", tr), func(t *testing.T) {
				var mu sync.Mutex
				got := map[string]bool{}
				srv, err := NewServer(ServerOptions{Name: "reg", Middleware: []Middleware{func(next MethodHandler) MethodHandler {
					return func(ctx context.Context, r *Request) (Result, error) {
						if r.Name != "" {
							mu.Lock()
							got[r.Method+" "+r.Name] = r.NameRegistered()
							mu.Unlock()
						}
						return next(ctx, r)
					}
				}}})
				if err != nil {
					t.Fatal(err)
				}
				type noArgs struct{}
				must := func(err error) {
					t.Helper()
					if err != nil {
						t.Fatal(err)
					}
				}
				must(AddTool(srv, &Tool{Name: "echo"}, func(context.Context, *RequestHandlerExtra, noArgs) (string, error) { return "x", nil }))
				must(srv.AddPrompt(&Prompt{Name: "greet"}, func(context.Context, *RequestHandlerExtra, *GetPromptParams) (*GetPromptResult, error) {
					return &GetPromptResult{Messages: []*PromptMessage{{Role: "user", Content: Text("hi")}}}, nil
				}))
				must(srv.AddResourceTemplate(&ResourceTemplate{URITemplate: "db:///rows/{id}", Name: "row"}, func(_ context.Context, _ *RequestHandlerExtra, r *ResourceRequest) (*ReadResourceResult, error) {
					return &ReadResourceResult{Contents: []*ResourceContents{{URI: r.URI, Text: "row"}}}, nil
				}))
				cs := connectOver(t, tr, srv, NewClient(ClientOptions{Era: era}))
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_, _ = cs.CallTool(ctx, "echo", nil)
				_, _ = cs.CallTool(ctx, "nope", nil)
				_, _ = cs.GetPrompt(ctx, "greet", nil)
				_, _ = cs.GetPrompt(ctx, "nope", nil)
				_, _ = cs.ReadResource(ctx, "db:///rows/7")
				_, _ = cs.ReadResource(ctx, "file:///nope")
				want := map[string]bool{
					"tools/call echo": true, "tools/call nope": false,
					"prompts/get greet": true, "prompts/get nope": false,
					"resources/read db:///rows/7": true, "resources/read file:///nope": false,
				}
				mu.Lock()
				defer mu.Unlock()
				for k, v := range want {
					if g, ok := got[k]; !ok || g != v {
						t.Errorf("%s: NameRegistered %v (seen %v), want %v", k, g, ok, v)
					}
				}
			})
		}
	}
	if (&Request{Method: MethodToolsCall, Name: "echo"}).NameRegistered() {
		t.Error("a Request no server built names something registered")
	}
}
