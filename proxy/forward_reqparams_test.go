package proxy

import (
	"context"
	"fmt"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
)

// TestRequestParamsFromServer: a tools/call's params, as requestParams
// takes them from the server's own reading (pmcp.Request.CallToolParams),
// are what decodeFeatureParams reads from the bytes, and forwardMeta
// answers the same with either; in both eras, over HTTP as a gateway is
// reached, with _meta members the client manages and others. A
// middleware that replaced the params sends requestParams down the
// decode.
func TestRequestParamsFromServer(t *testing.T) {
	for _, era := range []pmcp.Era{pmcp.EraLegacy, pmcp.EraModern} {
		t.Run(era.String(), func(t *testing.T) {
			var mu sync.Mutex
			var fails []string
			fast := 0
			check := func(req *pmcp.Request) {
				var got, want featureParams
				_, ok := req.CallToolParams()
				gerr := requestParams(req, &got)
				werr := decodeFeatureParams(req.Params, req.Name, &want)
				gm, wm := forwardMeta(req, &got), forwardMeta(req, nil)
				got.meta, got.metaManaged, want.meta, want.metaManaged = nil, false, nil, false
				mu.Lock()
				defer mu.Unlock()
				if ok {
					fast++
				}
				if (gerr == nil) != (werr == nil) || !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gm, wm) {
					fails = append(fails, fmt.Sprintf("%s (server's reading %v):\n got  %+v %v, _meta %v\n want %+v %v, _meta %v", req.Params, ok, got, gerr, gm, want, werr, wm))
				}
			}
			replace := false
			srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "s", DisableAccessLog: true, Middleware: []pmcp.Middleware{
				func(next pmcp.MethodHandler) pmcp.MethodHandler {
					return func(ctx context.Context, req *pmcp.Request) (pmcp.Result, error) {
						if req.Method == pmcp.MethodToolsCall {
							if replace {
								req.Params = append(jsontext.Value(nil), req.Params...)
								if _, ok := req.CallToolParams(); ok {
									mu.Lock()
									fails = append(fails, "CallToolParams answered for replaced params")
									mu.Unlock()
								}
							}
							check(req)
						}
						return next(ctx, req)
					}
				},
			}})
			if err != nil {
				t.Fatal(err)
			}
			type echoIn struct {
				Text string `json:"text,omitempty"`
			}
			if err := pmcp.AddTool(srv, &pmcp.Tool{Name: "echo"}, func(_ context.Context, _ *pmcp.RequestHandlerExtra, in echoIn) (string, error) {
				return in.Text, nil
			}); err != nil {
				t.Fatal(err)
			}
			h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{})
			ts := httptest.NewServer(h)
			defer func() {
				_ = h.Close()
				ts.Close()
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var extraMeta map[string]any
			c := pmcp.NewClient(pmcp.ClientOptions{Era: era, Middleware: []pmcp.ClientMiddleware{
				func(next pmcp.ClientHandler) pmcp.ClientHandler {
					return func(ctx context.Context, r *pmcp.ClientRequest) (jsontext.Value, error) {
						for k, v := range extraMeta {
							if err := r.SetMeta(k, v); err != nil {
								return nil, err
							}
						}
						return next(ctx, r)
					}
				},
			}})
			cs, err := c.ConnectHTTP(ctx, ts.URL, pmcp.HTTPClientOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			call := func(args map[string]any, meta map[string]any) {
				t.Helper()
				extraMeta = meta
				if res, err := cs.CallTool(ctx, "echo", args); err != nil || res.IsError {
					t.Fatalf("CallTool: %+v, %v", res, err)
				}
			}
			call(map[string]any{"text": "hi"}, nil)
			call(nil, nil)
			call(map[string]any{"text": "caf\u00e9 \"q\""}, map[string]any{"progressToken": 7})
			call(map[string]any{"text": "x"}, map[string]any{"x.test/k": []int{1, 2}, "io.modelcontextprotocol/extra": "v"})
			call(map[string]any{"text": "x"}, map[string]any{"x.test/k": map[string]any{"io.modelcontextprotocol/inner": 1}})
			if fast != 5 {
				t.Errorf("%d of 5 calls took the server's reading", fast)
			}
			replace = true
			call(map[string]any{"text": "again"}, map[string]any{"x.test/k": 1})
			if fast != 5 {
				t.Errorf("replaced params took the server's reading")
			}
			for _, f := range fails {
				t.Error(f)
			}
		})
	}
}

// TestForwardUnrelatedMember: a tools/call whose params carry a member
// tools/call does not define, of a type the proxy's own decode would
// refuse ("uri": 5), is forwarded as the upstream itself serves it
// directly (before requestParams, the proxy answered -32602).
func TestForwardUnrelatedMember(t *testing.T) {
	for _, era := range []pmcp.Era{pmcp.EraLegacy, pmcp.EraModern} {
		t.Run(era.String(), func(t *testing.T) {
			for _, hop := range []string{"direct", "proxy"} {
				r := newHopRig(t, era, hop)
				r.body = []byte(strings.Replace(string(r.body), `"arguments"`, `"uri":5,"cursor":[],"arguments"`, 1))
				if got := r.call(t); !strings.Contains(got, `"text":"hello"`) || strings.Contains(got, `"error"`) {
					t.Errorf("%s: %s answered %s", hop, r.body, got)
				}
			}
		})
	}
}

// TestForwardNoParams: a tools/call sent without params, as some clients
// send requests, gets the same JSON-RPC error code through the proxy as
// from the upstream directly, in both eras.
func TestForwardNoParams(t *testing.T) {
	codeRE := regexp.MustCompile(`"code":(-?\d+)`)
	for _, era := range []pmcp.Era{pmcp.EraLegacy, pmcp.EraModern} {
		t.Run(era.String(), func(t *testing.T) {
			codes := map[string]string{}
			for _, hop := range []string{"direct", "proxy"} {
				r := newHopRig(t, era, hop)
				r.body = []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call"}`)
				got := r.call(t)
				m := codeRE.FindStringSubmatch(got)
				if m == nil {
					t.Fatalf("%s: no error for a tools/call without params: %s", hop, got)
				}
				codes[hop] = m[1]
			}
			t.Logf("error code directly %s, through the proxy %s", codes["direct"], codes["proxy"])
			if codes["direct"] != codes["proxy"] {
				t.Errorf("error code directly %s, through the proxy %s", codes["direct"], codes["proxy"])
			}
		})
	}
}
