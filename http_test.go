package pmcp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// ---- helpers ----------------------------------------------------------

// httpEnv is a handler served by an httptest server on loopback.
type httpEnv struct {
	t   *testing.T
	srv *Server
	h   *StreamableHTTPHandler
	ts  *httptest.Server
}

func newHTTPEnv(t *testing.T, srv *Server, opts *StreamableHTTPOptions) *httpEnv {
	t.Helper()
	var o StreamableHTTPOptions
	if opts != nil {
		o = *opts
	}
	h := NewStreamableHTTPHandler(srv, o)
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Close() // ends the streams first, so ts.Close does not wait on them
		ts.Close()
	})
	return &httpEnv{t: t, srv: srv, h: h, ts: ts}
}

// hdr builds a header set from "Key: value" pairs.
func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

const acceptBoth = "application/json, text/event-stream"

// do sends a request; body may be a string, []byte or nil.
func (e *httpEnv) do(ctx context.Context, method string, body any, h http.Header) *http.Response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	req, err := http.NewRequestWithContext(ctx, method, e.ts.URL, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range h {
		req.Header[k] = v
	}
	if host := h.Get("Host"); host != "" {
		req.Host = host
	}
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		e.t.Fatalf("%s: %v", method, err)
	}
	return resp
}

// post sends a JSON-RPC message and returns the response, body unread.
func (e *httpEnv) post(body string, h http.Header) *http.Response {
	e.t.Helper()
	return e.do(nil, http.MethodPost, body, h)
}

// rpcReply is a decoded JSON-RPC message (response or notification).
type rpcReply struct {
	ID     jsontext.Value `json:"id"`
	Method string         `json:"method"`
	Params jsontext.Value `json:"params"`
	Result jsontext.Value `json:"result"`
	Error  *struct {
		Code    int64          `json:"code"`
		Message string         `json:"message"`
		Data    jsontext.Value `json:"data"`
	} `json:"error"`
}

func decodeReply(t *testing.T, b []byte) *rpcReply {
	t.Helper()
	var r rpcReply
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	return &r
}

// readJSON reads a whole application/json response.
func readJSON(t *testing.T, resp *http.Response) *rpcReply {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q, body %s", ct, b)
	}
	return decodeReply(t, b)
}

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	id, event, data string
	retry           string
	comment         bool
}

// sseReader parses an SSE body incrementally.
type sseReader struct {
	t  *testing.T
	sc *bufio.Scanner
}

func newSSEReader(t *testing.T, r io.Reader) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 8<<20)
	return &sseReader{t: t, sc: sc}
}

// next returns the next event (or comment), or false at the end.
func (s *sseReader) next() (sseEvent, bool) {
	var ev sseEvent
	seen := false
	for s.sc.Scan() {
		line := s.sc.Text()
		if line == "" {
			if seen {
				return ev, true
			}
			continue
		}
		seen = true
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimPrefix(v, " ")
		switch k {
		case "":
			ev.comment = true
		case "id":
			ev.id = v
		case "event":
			ev.event = v
		case "data":
			ev.data = v
		case "retry":
			ev.retry = v
		}
	}
	return ev, false
}

// nextMessage skips priming events and comments.
func (s *sseReader) nextMessage() (*rpcReply, sseEvent, bool) {
	for {
		ev, ok := s.next()
		if !ok {
			return nil, ev, false
		}
		if ev.comment || ev.data == "" {
			continue
		}
		return decodeReply(s.t, []byte(ev.data)), ev, true
	}
}

// modernBody builds a modern request body.
func modernBody(id any, method string, params map[string]any, caps map[string]any) string {
	// A copy: callers pass shared tables (scopedOps), and writing _meta
	// into them leaked a modern _meta into later legacy requests.
	params = maps.Clone(params)
	if params == nil {
		params = map[string]any{}
	}
	if caps == nil {
		caps = map[string]any{}
	}
	params["_meta"] = map[string]any{MetaProtocolVersion: Version20260728, MetaClientCapabilities: caps}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}, json.Deterministic(true))
	return string(b)
}

// modernHeaders returns the SEP-2243 headers of a modern request.
func modernHeaders(method, name string, extra ...string) http.Header {
	h := hdr("Accept", acceptBoth, "MCP-Protocol-Version", Version20260728, "Mcp-Method", method)
	if name != "" {
		h.Set("Mcp-Name", name)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		h.Set(extra[i], extra[i+1])
	}
	return h
}

// initSession opens a legacy session (JSON reply) and returns its id.
func (e *httpEnv) initSession(h http.Header) string {
	e.t.Helper()
	if h == nil {
		h = http.Header{}
	}
	h.Set("Accept", "application/json")
	resp := e.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{},"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`, h)
	r := readJSON(e.t, resp)
	if resp.StatusCode != 200 || r.Error != nil {
		e.t.Fatalf("initialize: %d %+v", resp.StatusCode, r.Error)
	}
	id := resp.Header.Get("Mcp-Session-Id")
	if id == "" {
		e.t.Fatal("no Mcp-Session-Id")
	}
	return id
}

func textOf(t *testing.T, result jsontext.Value) string {
	t.Helper()
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(result, &r); err != nil || len(r.Content) == 0 {
		t.Fatalf("result %s: %v", result, err)
	}
	return r.Content[0].Text
}

// testHTTPServer registers the tools the HTTP tests use.
type testTools struct {
	started chan struct{} // "slow" started
	release chan struct{} // lets "slow" and "closer" finish
	slowErr chan error    // "slow" reports its ctx error
}

func newHTTPTestServer(t *testing.T) (*Server, *testTools) {
	t.Helper()
	srv := newTestServerT(t)
	tt := &testTools{started: make(chan struct{}, 16), release: make(chan struct{}), slowErr: make(chan error, 16)}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	type textIn struct {
		Text string `json:"text"`
	}
	must(AddTool(srv, &Tool{Name: "echo", Description: "echo"}, func(ctx context.Context, _ *RequestHandlerExtra, in textIn) (string, error) {
		return in.Text, nil
	}))
	must(AddTool(srv, &Tool{Name: "slow", Description: "waits for release or cancellation"}, func(ctx context.Context, _ *RequestHandlerExtra, _ struct{}) (string, error) {
		tt.started <- struct{}{}
		select {
		case <-ctx.Done():
			tt.slowErr <- ctx.Err()
			return "", ctx.Err()
		case <-tt.release:
			tt.slowErr <- nil
			return "released", nil
		}
	}))
	must(AddTool(srv, &Tool{Name: "progress", Description: "reports progress thrice"}, func(ctx context.Context, extra *RequestHandlerExtra, _ struct{}) (string, error) {
		for i := 1; i <= 3; i++ {
			_ = extra.ReportProgress(float64(i), 3, "")
		}
		return "done", nil
	}))
	must(AddTool(srv, &Tool{Name: "closer", Description: "closes its stream, logs, waits for release"}, func(ctx context.Context, extra *RequestHandlerExtra, _ struct{}) (string, error) {
		if !extra.CloseStream() {
			return "", errors.New("no stream to close")
		}
		_ = extra.Log(LevelWarning, "after close 1")
		_ = extra.Log(LevelWarning, "after close 2")
		tt.started <- struct{}{}
		select {
		case <-tt.release:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return "reconnected", nil
	}))
	must(AddTool(srv, &Tool{Name: "sample", Description: "asks the client's model"}, func(ctx context.Context, extra *RequestHandlerExtra, _ struct{}) (string, error) {
		res, err := extra.Peer.Sample(ctx, &CreateMessageParams{Messages: []*SamplingMessage{{Role: "user", Content: Text("hi")}}, MaxTokens: 5})
		if err != nil {
			return "", err
		}
		return "model said: " + res.Content.(*TextContent).Text, nil
	}))
	must(AddTool(srv, &Tool{Name: "boom", Description: "panics"}, func(ctx context.Context, _ *RequestHandlerExtra, _ struct{}) (string, error) {
		panic("boom")
	}))
	must(srv.AddRawTool(&Tool{Name: "hdr", Description: "mirrors region and count",
		InputSchema: jsontext.Value(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"count":{"type":"integer","x-mcp-header":"Count"},"opts":{"type":"object","properties":{"flag":{"type":"boolean","x-mcp-header":"Flag"}}}}}`)},
		func(ctx context.Context, _ *RequestHandlerExtra, p *CallToolParams) (*CallToolResult, error) {
			return &CallToolResult{Content: []Content{Text("ok")}}, nil
		}))
	must(srv.AddResource(&Resource{URI: "test://r", Name: "r"}, func(ctx context.Context, _ *RequestHandlerExtra, req *ResourceRequest) (*ReadResourceResult, error) {
		return &ReadResourceResult{Contents: []*ResourceContents{{URI: req.URI, Text: "r"}}}, nil
	}))
	return srv, tt
}

func newTestServerT(t testing.TB) *Server {
	t.Helper()
	srv, err := NewServer(ServerOptions{Name: "http-test", Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

func wantStatus(t *testing.T, resp *http.Response, want int) {
	t.Helper()
	if resp.StatusCode != want {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d, want %d; body %s", resp.StatusCode, want, b)
	}
}

// ---- legacy era ---------------------------------------------------------

func TestHTTPLegacySessionLifecycle(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, nil)
	sid := e.initSession(nil)
	for _, c := range sid {
		if c < 0x21 || c > 0x7e {
			t.Fatalf("session id %q is not visible ASCII", sid)
		}
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	// The conformance suite sends 2025-03-26 after negotiating 2025-11-25.
	for _, v := range []string{"", "2025-11-25", "2025-03-26"} {
		h := hdr("Accept", "application/json", "Mcp-Session-Id", sid)
		if v != "" {
			h.Set("MCP-Protocol-Version", v)
		}
		resp := e.post(list, h)
		r := readJSON(t, resp)
		if resp.StatusCode != 200 || r.Error != nil || !bytes.Contains(r.Result, []byte(`"echo"`)) {
			t.Fatalf("version %q: %d %s %+v", v, resp.StatusCode, r.Result, r.Error)
		}
	}
	cases := []struct {
		name string
		h    http.Header
		want int
	}{
		{"missing session", hdr("Accept", "application/json"), 400},
		{"unknown session", hdr("Accept", "application/json", "Mcp-Session-Id", "nope"), 404},
		{"bad version", hdr("Accept", "application/json", "Mcp-Session-Id", sid, "MCP-Protocol-Version", "1999-01-01"), 400},
	}
	for _, c := range cases {
		resp := e.post(list, c.h)
		wantStatus(t, resp, c.want)
		resp.Body.Close()
	}
	resp := e.do(nil, http.MethodDelete, nil, hdr("Mcp-Session-Id", sid))
	wantStatus(t, resp, 200)
	resp.Body.Close()
	resp = e.post(list, hdr("Accept", "application/json", "Mcp-Session-Id", sid))
	wantStatus(t, resp, 404)
	resp.Body.Close()
	if n := e.h.Stats().Sessions; n != 0 {
		t.Fatalf("Sessions = %d after DELETE", n)
	}
}

// TestHTTPLegacySSEPrimingThenResponse: a legacy reply streamed as SSE
// (the client accepts SSE only here; one accepting JSON too gets a quick
// reply as JSON, TestHTTPQuickReplyIsJSON) starts with a priming event.
func TestHTTPLegacySSEPrimingThenResponse(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, nil)
	resp := e.post(`{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, hdr("Accept", "text/event-stream"))
	defer resp.Body.Close()
	wantStatus(t, resp, 200)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" || resp.Header.Get("X-Accel-Buffering") != "no" {
		t.Fatalf("headers %v", resp.Header)
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	rd := newSSEReader(t, resp.Body)
	ev, ok := rd.next()
	if !ok || ev.id == "" || ev.data != "" || ev.retry != "1000" {
		t.Fatalf("first event %+v is not a priming event", ev)
	}
	msg, ev, ok := rd.nextMessage()
	if !ok || string(msg.ID) != `"a"` || msg.Result == nil || ev.id == "" {
		t.Fatalf("response %+v %+v", msg, ev)
	}
	if _, ok := rd.next(); ok {
		t.Fatal("stream did not end after the response")
	}
	// Progress rides the request's own stream, before the response.
	resp2 := e.post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"progress","_meta":{"progressToken":"tok"}}}`,
		hdr("Accept", acceptBoth, "Mcp-Session-Id", sid))
	defer resp2.Body.Close()
	rd = newSSEReader(t, resp2.Body)
	var methods []string
	for {
		m, _, ok := rd.nextMessage()
		if !ok {
			break
		}
		if m.Method != "" {
			methods = append(methods, m.Method)
		} else {
			methods = append(methods, "response")
		}
	}
	if fmt.Sprint(methods) != "[notifications/progress notifications/progress notifications/progress response]" {
		t.Fatalf("stream carried %v", methods)
	}
}

func TestHTTPLegacySamplingRoundTrip(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, nil)
	sid := e.initSession(nil)
	resp := e.post(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"sample"}}`, hdr("Accept", acceptBoth, "Mcp-Session-Id", sid))
	defer resp.Body.Close()
	rd := newSSEReader(t, resp.Body)
	req, _, ok := rd.nextMessage()
	if !ok || req.Method != MethodSamplingCreateMessage || len(req.ID) == 0 {
		t.Fatalf("want sampling request on the POST stream, got %+v", req)
	}
	answer := `{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"role":"assistant","content":{"type":"text","text":"42"},"model":"m"}}`
	ack := e.post(answer, hdr("Mcp-Session-Id", sid))
	wantStatus(t, ack, http.StatusAccepted)
	ack.Body.Close()
	res, _, ok := rd.nextMessage()
	if !ok || string(res.ID) != "5" || textOf(t, res.Result) != "model said: 42" {
		t.Fatalf("final %+v", res)
	}
}

func TestHTTPLegacyGETStreamNotifications(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, nil)
	sid := e.initSession(nil)
	sub := e.post(`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"test://r"}}`, hdr("Accept", "application/json", "Mcp-Session-Id", sid))
	if r := readJSON(t, sub); r.Error != nil {
		t.Fatal(r.Error)
	}
	resp := e.do(nil, http.MethodGet, nil, hdr("Accept", "text/event-stream", "Mcp-Session-Id", sid))
	defer resp.Body.Close()
	wantStatus(t, resp, 200)
	rd := newSSEReader(t, resp.Body)
	if ev, ok := rd.next(); !ok || ev.id == "" || ev.retry == "" {
		t.Fatalf("GET priming %+v", ev)
	}
	if err := srv.AddPrompt(&Prompt{Name: "p", Description: "d"}, func(ctx context.Context, _ *RequestHandlerExtra, _ *GetPromptParams) (*GetPromptResult, error) {
		return &GetPromptResult{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	srv.NotifyResourceUpdated("test://other") // not subscribed: filtered
	srv.NotifyResourceUpdated("test://r")
	m, ev, ok := rd.nextMessage()
	if !ok || m.Method != NotificationPromptsListChanged || ev.id == "" {
		t.Fatalf("got %+v", m)
	}
	m, _, ok = rd.nextMessage()
	if !ok || m.Method != NotificationResourceUpdated || !bytes.Contains(m.Params, []byte("test://r")) {
		t.Fatalf("got %+v", m)
	}
}

// TestHTTPLegacyCloseStreamResume is the server-sse-polling scenario: the
// tool closes its POST stream; the client resumes with GET + Last-Event-ID
// and gets what was sent meanwhile (from the event store) and the result.
func TestHTTPLegacyCloseStreamResume(t *testing.T) {
	srv, tt := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, nil)
	sid := e.initSession(nil)
	set := e.post(`{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"debug"}}`, hdr("Accept", "application/json", "Mcp-Session-Id", sid))
	readJSON(t, set)
	resp := e.post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"closer","arguments":{}}}`,
		hdr("Accept", acceptBoth, "Mcp-Session-Id", sid, "MCP-Protocol-Version", "2025-03-26"))
	rd := newSSEReader(t, resp.Body)
	prime, ok := rd.next()
	if !ok || prime.id == "" || prime.retry == "" || prime.data != "" {
		t.Fatalf("priming %+v", prime)
	}
	last := prime.id
	for {
		ev, ok := rd.next()
		if !ok {
			break
		}
		if ev.id != "" {
			last = ev.id
		}
		if strings.Contains(ev.data, `"result"`) {
			t.Fatal("result delivered before the stream was closed")
		}
	}
	resp.Body.Close()
	<-tt.started // the tool logged twice while no stream was attached

	get := e.do(nil, http.MethodGet, nil, hdr("Accept", "text/event-stream", "Mcp-Session-Id", sid, "Last-Event-ID", last))
	defer get.Body.Close()
	wantStatus(t, get, 200)
	rd = newSSEReader(t, get.Body)
	var logs int
	for logs < 2 {
		m, _, ok := rd.nextMessage()
		if !ok || m.Method != NotificationMessage {
			t.Fatalf("want the logs sent while detached, got %+v", m)
		}
		logs++
	}
	close(tt.release)
	m, _, ok := rd.nextMessage()
	if !ok || string(m.ID) != "1" || textOf(t, m.Result) != "reconnected" {
		t.Fatalf("want the result on the resumed stream, got %+v", m)
	}
	if e.h.Stats().Resumptions != 1 {
		t.Fatalf("stats %+v", e.h.Stats())
	}
	// Resuming a finished stream replays it from the store.
	get2 := e.do(nil, http.MethodGet, nil, hdr("Accept", "text/event-stream", "Mcp-Session-Id", sid, "Last-Event-ID", last))
	defer get2.Body.Close()
	rd = newSSEReader(t, get2.Body)
	for i := 0; i < 3; i++ {
		if _, _, ok := rd.nextMessage(); !ok {
			t.Fatalf("replay ended after %d messages", i)
		}
	}
	bad := e.do(nil, http.MethodGet, nil, hdr("Accept", "text/event-stream", "Mcp-Session-Id", sid, "Last-Event-ID", "garbage"))
	wantStatus(t, bad, 400)
	bad.Body.Close()
}

func TestHTTPLegacyCancelledNotification(t *testing.T) {
	srv, tt := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, nil)
	sid := e.initSession(nil)
	done := make(chan *rpcReply, 1)
	go func() {
		resp := e.post(`{"jsonrpc":"2.0","id":"slow-1","method":"tools/call","params":{"name":"slow"}}`, hdr("Accept", "application/json", "Mcp-Session-Id", sid))
		done <- readJSON(t, resp)
	}()
	<-tt.started
	// A second request with the same id while the first runs is refused.
	dup := e.post(`{"jsonrpc":"2.0","id":"slow-1","method":"tools/list"}`, hdr("Accept", "application/json", "Mcp-Session-Id", sid))
	wantStatus(t, dup, 400)
	dup.Body.Close()
	c := e.post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow-1"}}`, hdr("Mcp-Session-Id", sid))
	wantStatus(t, c, http.StatusAccepted)
	c.Body.Close()
	if err := <-tt.slowErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("tool ctx: %v", err)
	}
	<-done
}

func TestHTTPJSONResponseMode(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, &StreamableHTTPOptions{JSONResponse: true})
	sid := e.initSession(nil)
	resp := e.post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"progress","_meta":{"progressToken":"tok"}}}`, hdr("Accept", acceptBoth, "Mcp-Session-Id", sid))
	if r := readJSON(t, resp); textOf(t, r.Result) != "done" {
		t.Fatalf("%+v", r)
	}
	resp = e.post(modernBody(4, MethodToolsCall, map[string]any{"name": "progress"}, nil), modernHeaders(MethodToolsCall, "progress"))
	if r := readJSON(t, resp); textOf(t, r.Result) != "done" {
		t.Fatalf("%+v", r)
	}
	// Only SSE accepted, but the server is in JSON mode.
	resp = e.post(`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`, hdr("Accept", "text/event-stream", "Mcp-Session-Id", sid))
	wantStatus(t, resp, http.StatusNotAcceptable)
	resp.Body.Close()
}

func TestHTTPSessionIdleExpiry(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, &StreamableHTTPOptions{SessionIdleTimeout: time.Hour})
	sid := e.initSession(nil)
	now := time.Now()
	if n := e.h.reapIdle(now.Add(30 * time.Minute)); n != 0 {
		t.Fatalf("reaped %d sessions early", n)
	}
	if n := e.h.reapIdle(now.Add(2 * time.Hour)); n != 1 {
		t.Fatalf("reaped %d sessions, want 1", n)
	}
	resp := e.post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, hdr("Accept", "application/json", "Mcp-Session-Id", sid))
	wantStatus(t, resp, 404)
	resp.Body.Close()
	if st := e.h.Stats(); st.SessionsExpired != 1 || st.Sessions != 0 {
		t.Fatalf("%+v", st)
	}
}

func TestHTTPShutdownEndsStreams(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, nil)
	sid := e.initSession(nil)
	get := e.do(nil, http.MethodGet, nil, hdr("Accept", "text/event-stream", "Mcp-Session-Id", sid))
	defer get.Body.Close()
	listen := e.post(modernBody(1, MethodSubscriptionsListen, map[string]any{"notifications": map[string]any{"toolsListChanged": true}}, nil), modernHeaders(MethodSubscriptionsListen, ""))
	defer listen.Body.Close()
	if _, _, ok := newSSEReader(t, listen.Body).nextMessage(); !ok {
		t.Fatal("no ack")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.h.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if _, err := io.ReadAll(get.Body); err != nil {
		t.Fatalf("GET stream: %v", err)
	}
	resp := e.post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, hdr("Accept", "application/json", "Mcp-Session-Id", sid))
	wantStatus(t, resp, http.StatusServiceUnavailable)
	resp.Body.Close()
}

func TestHTTPCORS(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	off := newHTTPEnv(t, srv, nil)
	pre := hdr("Origin", "http://localhost:3000", "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "content-type, mcp-session-id, mcp-param-region, x-evil")
	resp := off.do(nil, http.MethodOptions, nil, pre)
	wantStatus(t, resp, http.StatusMethodNotAllowed)
	if resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatal("CORS header without CORS enabled")
	}
	resp.Body.Close()
	on := newHTTPEnv(t, srv, &StreamableHTTPOptions{CORS: true, AllowedOrigins: []string{"https://app.example"}})
	resp = on.do(nil, http.MethodOptions, nil, pre)
	wantStatus(t, resp, http.StatusNoContent)
	if resp.Header.Get("Access-Control-Allow-Origin") != "http://localhost:3000" || resp.Header.Get("Access-Control-Allow-Headers") != "content-type, mcp-session-id, mcp-param-region" {
		t.Fatalf("%v", resp.Header)
	}
	resp.Body.Close()
	resp = on.post(modernBody(1, MethodDiscover, nil, nil), modernHeaders(MethodDiscover, "", "Origin", "https://app.example"))
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" || resp.Header.Get("Access-Control-Expose-Headers") != "Mcp-Session-Id" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	resp.Body.Close()
}

func TestMemoryEventStore(t *testing.T) {
	ctx := context.Background()
	// What one "a" event of a one-byte stream id charges.
	m0 := newMemoryEventStore(MemoryEventStoreOptions{})
	_ = m0.Append(ctx, "s", "1", 1, []byte("a"))
	_, b0 := m0.size()
	one := b0 - int64(memSessionOverhead+memStreamOverhead)
	base := int64(memSessionOverhead + memStreamOverhead) // a session with one stream
	m := newMemoryEventStore(MemoryEventStoreOptions{MaxStreamEvents: 3})
	for i := uint64(1); i <= 5; i++ {
		_ = m.Append(ctx, "s", "1", i, []byte("a"))
	}
	evs, _ := m.After(ctx, "s", "1", 0)
	if len(evs) != 3 || evs[0].Seq != 3 {
		t.Fatalf("per-stream cap: %+v", evs)
	}
	if evs, _ := m.After(ctx, "s", "1", 4); len(evs) != 1 || evs[0].Seq != 5 {
		t.Fatalf("After(4) = %+v", evs)
	}
	if n, b := m.size(); n != 3 || b != base+3*one {
		t.Fatalf("Len = %d, %d; want 3, %d", n, b, base+3*one)
	}
	// What After returns does not hold on to the caller's larger array.
	big := make([]byte, 1, 4096)
	_ = m.Append(ctx, "s", "2", 1, big)
	if evs, _ := m.After(ctx, "s", "2", 0); len(evs) != 1 || cap(evs[0].Data) >= 4096 {
		t.Fatalf("stored event keeps a %d-byte array", cap(evs[0].Data))
	}
	if _, b := m.size(); b != base+memStreamOverhead+4*one {
		t.Fatalf("Len bytes = %d", b)
	}
	_ = m.DeleteSession(ctx, "s")
	if n, b := m.size(); n != 0 || b != 0 {
		t.Fatalf("after DeleteSession: %d, %d", n, b)
	}

	// The global cap evicts the oldest events, whatever their session.
	g := newMemoryEventStore(MemoryEventStoreOptions{MaxBytes: 2*base + 3*one, MaxSessionBytes: -1})
	for i := uint64(1); i <= 3; i++ {
		_ = g.Append(ctx, "s", "1", i, []byte("a"))
	}
	_ = g.Append(ctx, "t", "1", 1, []byte("a"))
	if evs, _ := g.After(ctx, "s", "1", 0); len(evs) != 2 || evs[0].Seq != 2 {
		t.Fatalf("global cap: %+v", evs)
	}
	// An event larger than the cap on its own is not kept.
	_ = g.Append(ctx, "t", "1", 2, make([]byte, 2*base+3*one))
	if evs, _ := g.After(ctx, "t", "1", 0); len(evs) != 1 {
		t.Fatalf("oversize event: %+v", evs)
	}

	// The per-session cap evicts that session's own oldest events only.
	p := newMemoryEventStore(MemoryEventStoreOptions{MaxSessionBytes: base + 2*one})
	_ = p.Append(ctx, "t", "1", 1, []byte("a"))
	for i := uint64(1); i <= 5; i++ {
		_ = p.Append(ctx, "s", "1", i, []byte("a"))
	}
	if evs, _ := p.After(ctx, "s", "1", 0); len(evs) != 2 || evs[0].Seq != 4 {
		t.Fatalf("per-session cap: %+v", evs)
	}
	if evs, _ := p.After(ctx, "t", "1", 0); len(evs) != 1 {
		t.Fatalf("another session lost events: %+v", evs)
	}
	if n, b := p.size(); n != 3 || b != 2*base+3*one {
		t.Fatalf("Len = %d, %d", n, b)
	}
}

// Concurrency smoke for the race detector: many sessions and modern calls
// at once.
func TestHTTPConcurrentMixedEras(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, nil)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			sid := e.initSession(nil)
			for j := 0; j < 5; j++ {
				resp := e.post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress","_meta":{"progressToken":1}}}`, hdr("Accept", acceptBoth, "Mcp-Session-Id", sid))
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
		go func() {
			defer wg.Done()
			for j := 0; j < 5; j++ {
				resp := e.post(modernBody(j, MethodToolsList, nil, nil), modernHeaders(MethodToolsList, ""))
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
}
