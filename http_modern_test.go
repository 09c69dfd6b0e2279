package pmcp

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// ---- modern era ---------------------------------------------------------

func TestHTTPModernToolsCall(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, nil)
	// JSON only: progress is not sent; the reply is one JSON body.
	body := modernBody(1, MethodToolsCall, map[string]any{"name": "progress"}, nil)
	resp := e.post(strings.Replace(body, `"_meta":{`, `"_meta":{"progressToken":"p",`, 1), modernHeaders(MethodToolsCall, "progress", "Accept", "application/json"))
	r := readJSON(t, resp)
	if resp.StatusCode != 200 || textOf(t, r.Result) != "done" || resp.Header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("%d %+v %v", resp.StatusCode, r, resp.Header)
	}
	// SSE accepted: three progress notifications, then the response.
	resp = e.post(strings.Replace(body, `"_meta":{`, `"_meta":{"progressToken":"p",`, 1), modernHeaders(MethodToolsCall, "progress"))
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("X-Accel-Buffering") != "no" {
		t.Fatalf("headers %v", resp.Header)
	}
	rd := newSSEReader(t, resp.Body)
	for i := 0; i < 3; i++ {
		m, ev, ok := rd.nextMessage()
		if !ok || m.Method != NotificationProgress || ev.id != "" {
			t.Fatalf("frame %d: %+v %+v", i, m, ev)
		}
	}
	m, _, ok := rd.nextMessage()
	if !ok || string(m.ID) != "1" || !bytes.Contains(m.Result, []byte(`"resultType":"complete"`)) {
		t.Fatalf("response %+v", m)
	}
	// Without notifications the reply stays JSON, with its HTTP status.
	resp = e.post(modernBody(2, MethodToolsCall, map[string]any{"name": "nope"}, nil), modernHeaders(MethodToolsCall, "nope"))
	wantStatus(t, resp, 400)
	if r := readJSON(t, resp); r.Error.Code != -32602 || string(r.ID) != "2" {
		t.Fatalf("%+v", r.Error)
	}
}

func TestHTTPModernStatusAndHeaders(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, nil)
	discover := modernBody(7, MethodDiscover, nil, nil)
	call := modernBody(8, MethodToolsCall, map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}}, nil)
	v999 := strings.Replace(discover, Version20260728, "v999.0.0", 1)
	cases := []struct {
		name   string
		body   string
		h      http.Header
		status int
		code   int64 // 0: success
	}{
		{"ok", discover, modernHeaders(MethodDiscover, ""), 200, 0},
		{"lowercase header name", discover, hdr("Accept", acceptBoth, "mcp-protocol-version", Version20260728, "mcp-method", MethodDiscover), 200, 0},
		{"missing Mcp-Method", discover, hdr("Accept", acceptBoth, "MCP-Protocol-Version", Version20260728), 400, -32020},
		{"Mcp-Method mismatch", discover, modernHeaders(MethodToolsList, ""), 400, -32020},
		{"Mcp-Method case", discover, modernHeaders("SERVER/DISCOVER", ""), 400, -32020},
		{"missing version header", discover, hdr("Accept", acceptBoth, "Mcp-Method", MethodDiscover), 400, -32020},
		{"header 2026 but _meta v999", v999, modernHeaders(MethodDiscover, ""), 400, -32020},
		{"unsupported version", v999, modernHeaders(MethodDiscover, "", "MCP-Protocol-Version", "v999.0.0"), 400, -32022},
		{"discover without _meta", `{"jsonrpc":"2.0","id":9,"method":"server/discover","params":{}}`, modernHeaders(MethodDiscover, ""), 400, -32602},
		{"removed method", modernBody(10, MethodPing, nil, nil), modernHeaders(MethodPing, ""), 404, -32601},
		{"unknown method", modernBody(11, "nope/nope", nil, nil), modernHeaders("nope/nope", ""), 404, -32601},
		{"Mcp-Name ok with whitespace", call, modernHeaders(MethodToolsCall, "  echo\t"), 200, 0},
		{"Mcp-Name base64", call, modernHeaders(MethodToolsCall, "=?base64?ZWNobw==?="), 200, 0},
		{"Mcp-Name mismatch", call, modernHeaders(MethodToolsCall, "other"), 400, -32020},
		{"Mcp-Name missing", call, modernHeaders(MethodToolsCall, ""), 400, -32020},
		{"missing capability", modernBody(12, MethodToolsCall, map[string]any{"name": "sample"}, nil), modernHeaders(MethodToolsCall, "sample", "Accept", "application/json"), 400, -32021},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := e.post(c.body, c.h)
			r := readJSON(t, resp)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d (%+v)", resp.StatusCode, c.status, r.Error)
			}
			if c.code == 0 {
				if r.Error != nil {
					t.Fatalf("error %+v", r.Error)
				}
				return
			}
			if r.Error == nil || r.Error.Code != c.code {
				t.Fatalf("error %+v, want code %d", r.Error, c.code)
			}
			var req struct {
				ID jsontext.Value `json:"id"`
			}
			_ = json.Unmarshal([]byte(c.body), &req)
			if !bytes.Equal(r.ID, req.ID) {
				t.Fatalf("error id %s, want %s", r.ID, req.ID)
			}
			if c.code == -32022 && (!bytes.Contains(r.Error.Data, []byte(`"supported":["2026-07-28"]`)) || !bytes.Contains(r.Error.Data, []byte(`"requested":"v999.0.0"`))) {
				t.Fatalf("data %s", r.Error.Data)
			}
		})
	}
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		resp := e.do(nil, m, nil, hdr("MCP-Protocol-Version", Version20260728, "Accept", "text/event-stream"))
		wantStatus(t, resp, http.StatusMethodNotAllowed)
		resp.Body.Close()
	}
}

func TestHTTPModernParamHeaders(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, nil)
	body := func(args string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hdr","arguments":` + args +
			`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	}
	cases := []struct {
		name string
		args string
		hdrs []string
		ok   bool
	}{
		{"plain", `{"region":"eu"}`, []string{"Mcp-Param-Region", "eu"}, true},
		{"base64", `{"region":"Hello"}`, []string{"Mcp-Param-Region", "=?base64?SGVsbG8=?="}, true},
		{"bad padding", `{"region":"Hello"}`, []string{"Mcp-Param-Region", "=?base64?SGVsbG8?="}, false},
		{"bad alphabet", `{"region":"Hello"}`, []string{"Mcp-Param-Region", "=?base64?SGVs!!!bG8=?="}, false},
		{"literal without suffix", `{"region":"=?base64?SGVsbG8="}`, []string{"Mcp-Param-Region", "=?base64?SGVsbG8="}, true},
		{"missing header", `{"region":"eu"}`, nil, false},
		{"header without argument", `{}`, []string{"Mcp-Param-Region", "eu"}, false},
		{"null argument, no header", `{"region":null}`, nil, true},
		{"mismatch", `{"region":"eu"}`, []string{"Mcp-Param-Region", "us"}, false},
		{"integer numerically", `{"count":42}`, []string{"mcp-param-count", "42.0"}, true},
		{"integer mismatch", `{"count":42}`, []string{"Mcp-Param-Count", "43"}, false},
		{"nested boolean", `{"opts":{"flag":true}}`, []string{"Mcp-Param-Flag", "true"}, true},
		{"nested boolean mismatch", `{"opts":{"flag":true}}`, []string{"Mcp-Param-Flag", "false"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := e.post(body(c.args), modernHeaders(MethodToolsCall, "hdr", c.hdrs...))
			r := readJSON(t, resp)
			if c.ok && (resp.StatusCode != 200 || r.Error != nil) {
				t.Fatalf("rejected: %d %+v", resp.StatusCode, r.Error)
			}
			if !c.ok && (resp.StatusCode != 400 || r.Error == nil || r.Error.Code != -32020) {
				t.Fatalf("accepted or wrong error: %d %+v", resp.StatusCode, r.Error)
			}
		})
	}
}

func TestParamHeadersOf(t *testing.T) {
	good := `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A"},"o":{"type":"object","properties":{"b":{"type":"integer","x-mcp-header":"B-2"}}},"c":{"type":"number"}}}`
	hs, err := paramBindingsOf(jsontext.Value(good))
	if err != nil || len(hs) != 2 {
		t.Fatalf("%v %+v", err, hs)
	}
	found := map[string]string{}
	for _, h := range hs {
		found[h.header] = strings.Join(h.path, ".")
	}
	if found["Mcp-Param-A"] != "a" || found["Mcp-Param-B-2"] != "o.b" {
		t.Fatalf("%v", found)
	}
	for _, bad := range []string{
		`{"properties":{"a":{"type":"number","x-mcp-header":"A"}}}`,
		`{"properties":{"a":{"type":"string","x-mcp-header":""}}}`,
		`{"properties":{"a":{"type":"string","x-mcp-header":"has space"}}}`,
		`{"properties":{"a":{"type":"string","x-mcp-header":"X"},"b":{"type":"string","x-mcp-header":"x"}}}`,
		`{"properties":{"a":{"type":"object","x-mcp-header":"A"}}}`,
		`{"properties":{"a":{"type":"string","x-mcp-header":5}}}`,
	} {
		if _, err := paramBindingsOf(jsontext.Value(bad)); !errors.Is(err, errInvalidHeaderAnnotation) {
			t.Errorf("%s: err %v, want invalid", bad, err)
		}
	}
	srv := newTestServerT(t)
	err = srv.AddRawTool(&Tool{Name: "bad", InputSchema: jsontext.Value(`{"type":"object","properties":{"a":{"type":"number","x-mcp-header":"A"}}}`)},
		func(context.Context, *RequestHandlerExtra, *CallToolParams) (*CallToolResult, error) { return nil, nil })
	if !errors.Is(err, ErrInvalidRegistration) {
		t.Fatalf("AddRawTool with an invalid annotation: %v", err)
	}
}

func TestHTTPModernListen(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, &StreamableHTTPOptions{MaxListenStreams: 1})
	listen := modernBody("sub-1", MethodSubscriptionsListen, map[string]any{"notifications": map[string]any{"toolsListChanged": true, "resourceSubscriptions": []string{"test://r"}}}, nil)
	resp := e.post(listen, modernHeaders(MethodSubscriptionsListen, ""))
	defer resp.Body.Close()
	wantStatus(t, resp, 200)
	rd := newSSEReader(t, resp.Body)
	ack, _, ok := rd.nextMessage()
	if !ok || ack.Method != NotificationSubscriptionsAck || !bytes.Contains(ack.Params, []byte(`"io.modelcontextprotocol/subscriptionId":"sub-1"`)) {
		t.Fatalf("first frame %+v", ack)
	}
	// The cap is one stream.
	over := e.post(strings.Replace(listen, "sub-1", "sub-2", 1), modernHeaders(MethodSubscriptionsListen, ""))
	wantStatus(t, over, http.StatusServiceUnavailable)
	over.Body.Close()
	if err := AddTool(srv, &Tool{Name: "new", Description: "d"}, func(context.Context, *RequestHandlerExtra, struct{}) (string, error) { return "", nil }); err != nil {
		t.Fatal(err)
	}
	srv.NotifyResourceUpdated("test://r")
	for _, want := range []string{NotificationToolsListChanged, NotificationResourceUpdated} {
		m, _, ok := rd.nextMessage()
		if !ok || m.Method != want || !bytes.Contains(m.Params, []byte(`"io.modelcontextprotocol/subscriptionId":"sub-1"`)) {
			t.Fatalf("want %s, got %+v", want, m)
		}
	}
	if n := e.h.Stats().ListenStreams; n != 1 {
		t.Fatalf("ListenStreams = %d", n)
	}
	// Listen needs SSE.
	nojs := e.post(strings.Replace(listen, "sub-1", "sub-3", 1), modernHeaders(MethodSubscriptionsListen, "", "Accept", "application/json"))
	wantStatus(t, nojs, 400)
	nojs.Body.Close()
}

func TestHTTPKeepAlive(t *testing.T) {
	srv, tt := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, &StreamableHTTPOptions{KeepAliveInterval: 5 * time.Millisecond})
	resp := e.post(modernBody(1, MethodToolsCall, map[string]any{"name": "slow"}, nil), modernHeaders(MethodToolsCall, "slow"))
	defer resp.Body.Close()
	rd := newSSEReader(t, resp.Body)
	if ev, ok := rd.next(); !ok || !ev.comment {
		t.Fatalf("want a keep-alive comment, got %+v", ev)
	}
	<-tt.started
	close(tt.release)
	if m, _, ok := rd.nextMessage(); !ok || textOf(t, m.Result) != "released" {
		t.Fatalf("%+v", m)
	}
}

// The transport looks a tools/call's tool up once, to check its
// Mcp-Param-* headers, and the dispatcher runs that same tool: a tool
// replaced in between (here by a middleware) cannot run with headers that
// were checked against another registration's bindings.
func TestHTTPModernToolLookedUpOnce(t *testing.T) {
	var srv *Server
	replace := func(next MethodHandler) MethodHandler {
		return func(ctx context.Context, r *Request) (Result, error) {
			if r.Method == MethodToolsCall && r.Name == "t" {
				err := srv.AddRawTool(&Tool{Name: "t", InputSchema: jsontext.Value(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)},
					func(context.Context, *RequestHandlerExtra, *CallToolParams) (*CallToolResult, error) {
						return &CallToolResult{Content: []Content{Text("replacement ran unchecked")}}, nil
					})
				if err != nil {
					return nil, err
				}
			}
			return next(ctx, r)
		}
	}
	srv, err := NewServer(ServerOptions{Name: "lookup", Version: "1", Middleware: []Middleware{replace}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.AddRawTool(&Tool{Name: "t", InputSchema: jsontext.Value(`{"type":"object"}`)}, func(context.Context, *RequestHandlerExtra, *CallToolParams) (*CallToolResult, error) {
		return &CallToolResult{Content: []Content{Text("checked tool ran")}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	e := newHTTPEnv(t, srv, nil)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"region":"eu"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	resp := e.post(body, modernHeaders(MethodToolsCall, "t"))
	r := readJSON(t, resp)
	if resp.StatusCode != 200 || r.Error != nil {
		t.Fatalf("status %d, error %+v", resp.StatusCode, r.Error)
	}
	if !strings.Contains(string(r.Result), "checked tool ran") {
		t.Fatalf("result %s: the tool that ran is not the one whose headers were checked", r.Result)
	}
	// The replacement serves the next request, whose missing header is
	// now caught by the transport.
	resp = e.post(body, modernHeaders(MethodToolsCall, "t"))
	if r := readJSON(t, resp); resp.StatusCode != 400 || r.Error == nil || r.Error.Code != -32020 {
		t.Fatalf("second call: status %d, error %+v", resp.StatusCode, r.Error)
	}
}
