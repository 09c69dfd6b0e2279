package pmcp

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// Request.CallToolParams gives a middleware a tools/call's params as
// Unmarshal would, over every transport and in both eras; it answers
// nothing for other methods, for params a middleware replaced and for a
// Request no server built.
func TestRequestCallToolParams(t *testing.T) {
	for _, era := range []Era{EraLegacy, EraModern} {
		for _, tr := range mwTransports {
			t.Run(fmt.Sprint(era, "/", tr), func(t *testing.T) {
				var mu sync.Mutex
				var seen []string
				var fails []string
				replace := false
				srv, err := NewServer(ServerOptions{Name: "p", DisableAccessLog: true, Middleware: []Middleware{func(next MethodHandler) MethodHandler {
					return func(ctx context.Context, r *Request) (Result, error) {
						if replace {
							r.Params = append(jsontext.Value(nil), r.Params...)
						}
						p, ok := r.CallToolParams()
						mu.Lock()
						defer mu.Unlock()
						seen = append(seen, fmt.Sprint(r.Method, " ", ok))
						if ok {
							var want CallToolParams
							if err := Unmarshal(r.Params, &want); err != nil || !reflect.DeepEqual(p, want) {
								fails = append(fails, fmt.Sprintf("%s:\n got  %+v\n want %+v (%v)", r.Params, p, want, err))
							}
						}
						return next(ctx, r)
					}
				}}})
				if err != nil {
					t.Fatal(err)
				}
				type in struct {
					Text string `json:"text,omitempty"`
				}
				if err := AddTool(srv, &Tool{Name: "echo"}, func(_ context.Context, _ *RequestHandlerExtra, a in) (string, error) { return a.Text, nil }); err != nil {
					t.Fatal(err)
				}
				if err := srv.AddPrompt(&Prompt{Name: "greet"}, func(context.Context, *RequestHandlerExtra, *GetPromptParams) (*GetPromptResult, error) {
					return &GetPromptResult{Messages: []*PromptMessage{{Role: "user", Content: Text("hi")}}}, nil
				}); err != nil {
					t.Fatal(err)
				}
				cs := connectOver(t, tr, srv, NewClient(ClientOptions{Era: era}))
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				mu.Lock()
				seen = nil
				mu.Unlock()
				for _, args := range []map[string]any{{"text": "hi"}, nil, {"text": "caf\u00e9 \"q\" \\"}} {
					if res, err := cs.CallTool(ctx, "echo", args); err != nil || res.IsError {
						t.Fatalf("CallTool %v: %+v, %v", args, res, err)
					}
				}
				if _, err := cs.GetPrompt(ctx, "greet", nil); err != nil {
					t.Fatal(err)
				}
				replace = true
				if _, err := cs.CallTool(ctx, "echo", map[string]any{"text": "again"}); err != nil {
					t.Fatal(err)
				}
				mu.Lock()
				defer mu.Unlock()
				want := []string{"tools/call true", "tools/call true", "tools/call true", "prompts/get false", "tools/call false"}
				if !reflect.DeepEqual(seen, want) {
					t.Errorf("seen %q, want %q", seen, want)
				}
				for _, f := range fails {
					t.Error(f)
				}
			})
		}
	}
	if _, ok := (&Request{Method: MethodToolsCall, Params: jsontext.Value(`{"name":"echo"}`)}).CallToolParams(); ok {
		t.Error("a Request no server built answered")
	}
}
