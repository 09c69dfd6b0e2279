package pmcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// fakeHTTP is a scriptable Streamable HTTP server: serve decides the
// answer to each POSTed message; GET and DELETE go to get and del.
type fakeHTTP struct {
	t     *testing.T
	srv   *httptest.Server
	serve func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Request)
	get   func(w http.ResponseWriter, r *http.Request)
	del   func(w http.ResponseWriter, r *http.Request)

	mu   sync.Mutex
	seen []seenRequest
}

type seenRequest struct {
	httpMethod string
	header     http.Header
	msg        *jsonrpc.Request // nil for GET/DELETE and responses
	resp       *jsonrpc.Response
}

func newFakeHTTP(t *testing.T, serve func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Request)) *fakeHTTP {
	t.Helper()
	f := &fakeHTTP{t: t, serve: serve}
	f.srv = httptest.NewServer(http.HandlerFunc(f.handle))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeHTTP) url() string { return f.srv.URL + "/mcp" }

func (f *fakeHTTP) handle(w http.ResponseWriter, r *http.Request) {
	rec := seenRequest{httpMethod: r.Method, header: r.Header.Clone()}
	switch r.Method {
	case http.MethodGet:
		f.record(rec)
		if f.get != nil {
			f.get(w, r)
			return
		}
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	case http.MethodDelete:
		f.record(rec)
		if f.del != nil {
			f.del(w, r)
			return
		}
		w.WriteHeader(http.StatusOK)
		return
	}
	b, _ := io.ReadAll(r.Body)
	m, err := jsonrpc.Decode(b, jsonrpc.Limits{})
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	switch m := m.(type) {
	case *jsonrpc.Request:
		rec.msg = m
		f.record(rec)
		f.serve(w, r, m)
	case *jsonrpc.Response:
		rec.resp = m
		f.record(rec)
		w.WriteHeader(http.StatusAccepted)
	}
}

func (f *fakeHTTP) record(r seenRequest) {
	f.mu.Lock()
	f.seen = append(f.seen, r)
	f.mu.Unlock()
}

// requests returns the POSTed requests and notifications with method.
func (f *fakeHTTP) requests(method string) []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []seenRequest
	for _, s := range f.seen {
		if s.msg != nil && s.msg.Method == method {
			out = append(out, s)
		}
	}
	return out
}

func (f *fakeHTTP) count(httpMethod string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, s := range f.seen {
		if s.httpMethod == httpMethod {
			n++
		}
	}
	return n
}

// writeRPC answers m with result (a JSON text) or err.
func writeRPC(w http.ResponseWriter, status int, m *jsonrpc.Response) {
	b, _ := jsonrpc.Encode(m)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func rpcResult(id jsonrpc.ID, raw string) *jsonrpc.Response {
	return &jsonrpc.Response{ID: id, Result: jsontext.Value(raw)}
}

// writeSSE writes one SSE event and flushes.
func writeSSE(w http.ResponseWriter, fields string) {
	_, _ = io.WriteString(w, fields+"\n\n")
	w.(http.Flusher).Flush()
}

func sseMessage(w http.ResponseWriter, id string, m jsonrpc.Message) {
	b, _ := jsonrpc.Encode(m)
	f := "data: " + string(b)
	if id != "" {
		f = "id: " + id + "\n" + f
	}
	writeSSE(w, f)
}

func startSSEReply(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
}

const legacyInit = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"fake-legacy","version":"1"}}`

// modernServer answers discover, tools/list with tools and tools/call
// with a text result.
func modernServer(tools string) func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Request) {
	return func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Request) {
		switch m.Method {
		case MethodDiscover:
			writeRPC(w, 200, rpcResult(m.ID, string(modernDiscoverResult)))
		case MethodToolsList:
			writeRPC(w, 200, rpcResult(m.ID, `{"resultType":"complete","ttlMs":0,"cacheScope":"private","tools":`+tools+`}`))
		case MethodToolsCall, MethodPromptsGet, MethodResourcesRead:
			writeRPC(w, 200, rpcResult(m.ID, `{"resultType":"complete","content":[],"messages":[],"contents":[]}`))
		default:
			writeRPC(w, 404, &jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "nope"}})
		}
	}
}

var modernDiscoverResult = jsontext.Value(`{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{},"prompts":{},"resources":{}},"ttlMs":0,"cacheScope":"public","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"fake-modern","version":"1"}}}`)

// legacyServer runs an initialize handshake with session id sid and
// answers tools/list; other requests get serve (when not nil).
func legacyServer(sid string, more func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Request) bool) func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Request) {
	return func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Request) {
		if more != nil && more(w, r, m) {
			return
		}
		switch {
		case m.Method == MethodInitialize:
			w.Header().Set(headerSessionID, sid)
			writeRPC(w, 200, rpcResult(m.ID, legacyInit))
		case !m.ID.IsValid():
			w.WriteHeader(http.StatusAccepted)
		case r.Header.Get(headerSessionID) != sid:
			http.Error(w, "Bad Request: missing session", http.StatusBadRequest)
		case m.Method == MethodToolsList:
			writeRPC(w, 200, rpcResult(m.ID, `{"tools":[]}`))
		default:
			writeRPC(w, 200, &jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "nope"}})
		}
	}
}

func connectFake(t *testing.T, c *Client, f *fakeHTTP, opts HTTPClientOptions) *ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := c.ConnectHTTP(ctx, f.url(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

const annotatedTools = `[
 {"name":"weather","inputSchema":{"type":"object","properties":{
   "region":{"type":"string","x-mcp-header":"Region"},
   "priority":{"type":"integer","x-mcp-header":"Priority"},
   "verbose":{"type":"boolean","x-mcp-header":"Verbose"},
   "label":{"type":"string","x-mcp-header":"Label"},
   "opts":{"type":"object","properties":{"zone":{"type":"string","x-mcp-header":"Zone"}}},
   "query":{"type":"string"},
   "ratio":{"type":"number"}}}},
 {"name":"bad_number","inputSchema":{"type":"object","properties":{"n":{"type":"number","x-mcp-header":"N"}}}},
 {"name":"bad_items","inputSchema":{"type":"object","properties":{"l":{"type":"array","items":{"type":"string","x-mcp-header":"L"}}}}},
 {"name":"plain","inputSchema":{"type":"object"}}
]`

func TestClientHTTPModernHeaders(t *testing.T) {
	f := newFakeHTTP(t, modernServer(annotatedTools))
	s := connectFake(t, NewClient(ClientOptions{}), f, HTTPClientOptions{
		Header: http.Header{"Authorization": {"Bearer x"}, "Mcp-Param-Region": {"forged"}, "Mcp-Method": {"forged"}},
	})
	ctx := context.Background()
	if s.Era() != EraModern {
		t.Fatalf("era %v", s.Era())
	}
	tools, err := s.AllTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
	}
	if strings.Join(names, ",") != "weather,plain" {
		t.Fatalf("tools %v: the invalid ones must be dropped", names)
	}
	args := map[string]any{"region": "us-west1", "priority": 42, "verbose": false, "label": " padded ",
		"opts": map[string]any{"zone": "Zürich"}, "query": "SELECT 1", "ratio": 0.5}
	if _, err := s.CallTool(ctx, "weather", args); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CallTool(ctx, "weather", map[string]any{"region": nil}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetPrompt(ctx, "grüße", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadResource(ctx, "file:///a%20b.txt"); err != nil {
		t.Fatal(err)
	}

	calls := f.requests(MethodToolsCall)
	h := calls[0].header
	for k, want := range map[string]string{
		"Mcp-Protocol-Version": "2026-07-28",
		"Mcp-Method":           "tools/call",
		"Mcp-Name":             "weather",
		"Mcp-Param-Region":     "us-west1",
		"Mcp-Param-Priority":   "42",
		"Mcp-Param-Verbose":    "false",
		"Mcp-Param-Label":      "=?base64?IHBhZGRlZCA=?=",
		"Mcp-Param-Zone":       "=?base64?WsO8cmljaA==?=",
		"Authorization":        "Bearer x",
	} {
		if got := h.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	for _, k := range []string{"Mcp-Param-Query", "Mcp-Param-Ratio", headerSessionID} {
		if v, ok := h[http.CanonicalHeaderKey(k)]; ok {
			t.Errorf("unexpected %s: %q", k, v)
		}
	}
	if _, ok := calls[1].header[http.CanonicalHeaderKey("Mcp-Param-Region")]; ok {
		t.Errorf("a null argument must send no header: %v", calls[1].header)
	}
	if got := f.requests(MethodPromptsGet)[0].header.Get(headerName); got != "=?base64?Z3LDvMOfZQ==?=" {
		t.Errorf("prompts/get Mcp-Name %q", got)
	}
	rh := f.requests(MethodResourcesRead)[0].header
	if rh.Get(headerName) != "file:///a%20b.txt" || rh.Get(headerMethod) != MethodResourcesRead {
		t.Errorf("resources/read headers %v", rh)
	}
	if got := f.requests(MethodToolsList)[0].header.Get(headerMethod); got != MethodToolsList {
		t.Errorf("tools/list Mcp-Method %q", got)
	}
}

func TestClientParamBindings(t *testing.T) {
	bad := map[string]string{
		"empty":           `{"type":"object","properties":{"v":{"type":"string","x-mcp-header":""}}}`,
		"not a string":    `{"type":"object","properties":{"v":{"type":"string","x-mcp-header":5}}}`,
		"object":          `{"type":"object","properties":{"v":{"type":"object","x-mcp-header":"V"}}}`,
		"array":           `{"type":"object","properties":{"v":{"type":"array","x-mcp-header":"V"}}}`,
		"null":            `{"type":"object","properties":{"v":{"type":"null","x-mcp-header":"V"}}}`,
		"number":          `{"type":"object","properties":{"v":{"type":"number","x-mcp-header":"V"}}}`,
		"no type":         `{"type":"object","properties":{"v":{"x-mcp-header":"V"}}}`,
		"type list":       `{"type":"object","properties":{"v":{"type":["string","null"],"x-mcp-header":"V"}}}`,
		"duplicate":       `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"R"},"b":{"type":"string","x-mcp-header":"R"}}}`,
		"duplicate case":  `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"MyField"},"b":{"type":"string","x-mcp-header":"myfield"}}}`,
		"space":           `{"type":"object","properties":{"v":{"type":"string","x-mcp-header":"My Region"}}}`,
		"colon":           `{"type":"object","properties":{"v":{"type":"string","x-mcp-header":"Region:Primary"}}}`,
		"non-ASCII":       `{"type":"object","properties":{"v":{"type":"string","x-mcp-header":"Région"}}}`,
		"control":         `{"type":"object","properties":{"v":{"type":"string","x-mcp-header":"Region\t1"}}}`,
		"root":            `{"type":"string","x-mcp-header":"Root"}`,
		"under items":     `{"type":"object","properties":{"v":{"type":"array","items":{"type":"string","x-mcp-header":"V"}}}}`,
		"under anyOf":     `{"type":"object","properties":{"v":{"anyOf":[{"type":"string","x-mcp-header":"V"}]}}}`,
		"under $defs":     `{"type":"object","$defs":{"d":{"type":"string","x-mcp-header":"D"}},"properties":{}}`,
		"nested in items": `{"type":"object","properties":{"v":{"type":"array","items":{"type":"object","properties":{"w":{"type":"string","x-mcp-header":"W"}}}}}}`,
	}
	for name, schema := range bad {
		if _, err := paramBindingsOf(jsontext.Value(schema)); !errors.Is(err, errInvalidHeaderAnnotation) {
			t.Errorf("%s: err %v, want invalid", name, err)
		}
	}
	good := `{"type":"object","$defs":{"x":{"type":"string","enum":["x-mcp-header"]}},"properties":{
		"a":{"type":"string","x-mcp-header":"A"},
		"o":{"type":"object","properties":{"b":{"type":"boolean","x-mcp-header":"B"},"x-mcp-header":{"type":"string"}}},
		"c":{"type":"integer","x-mcp-header":"C-c_1.~"}}}`
	bs, err := paramBindingsOf(jsontext.Value(good))
	if err != nil || len(bs) != 3 {
		t.Fatalf("bindings %v, %v", bs, err)
	}
	for _, schema := range []string{``, `true`, `{"type":"object"}`} {
		if bs, err := paramBindingsOf(jsontext.Value(schema)); err != nil || len(bs) != 0 {
			t.Errorf("%q: %v %v", schema, bs, err)
		}
	}
}

func TestEncodeHeaderText(t *testing.T) {
	for in, want := range map[string]string{
		"us-west1":          "us-west1",
		"us west 1":         "us west 1",
		"":                  "",
		"Hello, 世界":         "=?base64?SGVsbG8sIOS4lueVjA==?=",
		" lead":             "=?base64?IGxlYWQ=?=",
		"trail ":            "=?base64?dHJhaWwg?=",
		"\tindented":        "=?base64?CWluZGVudGVk?=",
		"line1\r\nline2":    "=?base64?bGluZTENCmxpbmUy?=",
		"=?base64?abc?=":    "=?base64?PT9iYXNlNjQ/YWJjPz0=?=",
		"del\x7f":           "=?base64?ZGVsfw==?=",
		"SELECT * FROM x;?": "SELECT * FROM x;?",
	} {
		if got := encodeHeaderText(in); got != want {
			t.Errorf("encodeHeaderText(%q) = %q, want %q", in, got, want)
		}
		if dec, ok := decodeHeaderText(encodeHeaderText(in)); !ok || dec != in {
			t.Errorf("round trip of %q: %q %v", in, dec, ok)
		}
	}
}

func TestSSEDecoder(t *testing.T) {
	in := ": comment\r\n" +
		"id: 1\r\nretry: 250\r\ndata: \r\n\r\n" +
		"event: message\ndata: {\"a\":\ndata: 1}\n\n" +
		"id\nretry: x\ndata:no-space\n\n" +
		"id: with\x00nul\ndata: z\n\n" +
		"data: incomplete"
	d := newSSEDecoder(strings.NewReader(in), 1024)
	var got []string
	for {
		ev, err := d.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("id=%q/%v retry=%v/%v event=%q data=%q", ev.id, ev.hasID, ev.retry, ev.hasRetry, ev.event, ev.data))
	}
	want := []string{
		`id="1"/true retry=250ms/true event="" data=""`,
		`id=""/false retry=0s/false event="message" data="{\"a\":\n1}"`,
		`id=""/true retry=0s/false event="" data="no-space"`,
		`id=""/false retry=0s/false event="" data="z"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	big := "data: " + strings.Repeat("x", 100) + "\n\n"
	if _, err := newSSEDecoder(strings.NewReader(big), 50).next(); !errors.Is(err, ErrSSEEventTooLarge) {
		t.Fatalf("big event: %v", err)
	}
	multi := strings.Repeat("data: xxxxxxxxxx\n", 10) + "\n"
	if _, err := newSSEDecoder(strings.NewReader(multi), 50).next(); !errors.Is(err, ErrSSEEventTooLarge) {
		t.Fatalf("big multi-line event: %v", err)
	}
}

func TestClientHTTPLegacySession(t *testing.T) {
	listChanged := make(chan struct{}, 1)
	getOpen := make(chan struct{})
	f := newFakeHTTP(t, legacyServer("sid-1", nil))
	var deleted sync.WaitGroup
	deleted.Add(1)
	f.del = func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(headerSessionID) == "sid-1" {
			deleted.Done()
		}
	}
	f.get = func(w http.ResponseWriter, r *http.Request) {
		close(getOpen) // before the headers: the client waits for those
		startSSEReply(w)
		sseMessage(w, "g1", &jsonrpc.Request{Method: NotificationToolsListChanged})
		<-r.Context().Done()
	}
	c := NewClient(ClientOptions{Notifications: ClientNotificationHandlers{ToolsListChanged: func(ctx context.Context) { listChanged <- struct{}{} }}})
	s := connectFake(t, c, f, HTTPClientOptions{})
	if s.Era() != EraLegacy || s.ProtocolVersion() != Version20251125 {
		t.Fatalf("era %v %s", s.Era(), s.ProtocolVersion())
	}
	select {
	case <-getOpen:
	default:
		t.Fatal("the standalone GET stream is open once ConnectHTTP returns")
	}
	select {
	case <-listChanged:
	case <-time.After(5 * time.Second):
		t.Fatal("no list_changed from the GET stream")
	}
	if _, err := s.ListTools(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	h := f.requests(MethodToolsList)[0].header
	if h.Get(headerSessionID) != "sid-1" || h.Get(headerProtocolVersion) != Version20251125 || h.Get(headerMethod) != "" {
		t.Fatalf("legacy headers %v", h)
	}
	if h := f.requests(MethodInitialize)[0].header; h.Get(headerProtocolVersion) != "" || h.Get(headerSessionID) != "" {
		t.Fatalf("initialize headers %v", h)
	}
	_ = s.Close()
	deleted.Wait()
}

// TestClientHTTPSessionExpiredPlainText: a front end that is no MCP
// server (a proxy that lost the backend's session) answers 404 in plain
// text; the session still ends with ErrHTTPSessionExpired. Our own
// server's 404 is covered by TestClientHTTPSessionExpired.
func TestClientHTTPSessionExpiredPlainText(t *testing.T) {
	f := newFakeHTTP(t, legacyServer("sid-1", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Request) bool {
		if m.Method == MethodToolsList {
			http.Error(w, "session not found", http.StatusNotFound)
			return true
		}
		return false
	}))
	s := connectFake(t, NewClient(ClientOptions{}), f, HTTPClientOptions{NoStandaloneStream: true})
	_, err := s.ListTools(context.Background(), "")
	var se *HTTPStatusError
	if !errors.Is(err, ErrHTTPSessionExpired) || !errors.As(err, &se) || se.StatusCode != 404 || se.RPC != nil || se.Body != "session not found" {
		t.Fatalf("err %v", err)
	}
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the session did not end")
	}
	if err := s.Wait(); !errors.Is(err, ErrHTTPSessionExpired) {
		t.Fatalf("Wait: %v", err)
	}
}

// TestClientHTTPResume: a legacy POST stream closed after its priming
// event is resumed by GET with Last-Event-ID after the announced retry.
func TestClientHTTPResume(t *testing.T) {
	var closedAt time.Time
	var mu sync.Mutex
	var pending jsonrpc.ID
	f := newFakeHTTP(t, legacyServer("sid-1", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Request) bool {
		if m.Method != MethodToolsCall {
			return false
		}
		startSSEReply(w)
		writeSSE(w, "id: e1\nretry: 200\ndata: ")
		mu.Lock()
		pending, closedAt = m.ID, time.Now()
		mu.Unlock()
		return true // the stream ends without the response
	}))
	var lastEventID string
	var reconnectedAt time.Time
	f.get = func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		id := pending
		if r.Header.Get(headerLastEventID) != "" {
			lastEventID, reconnectedAt = r.Header.Get(headerLastEventID), time.Now()
		}
		mu.Unlock()
		startSSEReply(w)
		if id.IsValid() && r.Header.Get(headerLastEventID) == "e1" {
			sseMessage(w, "e2", rpcResult(id, `{"content":[{"type":"text","text":"resumed"}]}`))
		}
		<-r.Context().Done()
	}
	s := connectFake(t, NewClient(ClientOptions{}), f, HTTPClientOptions{})
	res, err := s.CallTool(context.Background(), "slow", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Content[0].(*TextContent).Text != "resumed" || lastEventID != "e1" {
		t.Fatalf("result %+v, Last-Event-ID %q", res, lastEventID)
	}
	if d := reconnectedAt.Sub(closedAt); d < 190*time.Millisecond {
		t.Fatalf("reconnected after %v, before the announced retry of 200ms", d)
	}
}

func TestClientHTTPModernStreamEnded(t *testing.T) {
	f := newFakeHTTP(t, func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Request) {
		if m.Method == MethodToolsCall {
			startSSEReply(w)
			writeSSE(w, "id: x\ndata: ")
			return
		}
		modernServer(`[]`)(w, r, m)
	})
	s := connectFake(t, NewClient(ClientOptions{}), f, HTTPClientOptions{})
	if _, err := s.CallTool(context.Background(), "t", nil); !errors.Is(err, ErrHTTPStreamEnded) {
		t.Fatalf("err %v", err)
	}
	if f.count(http.MethodGet) != 0 {
		t.Fatal("a modern client never GETs")
	}
}

// TestClientHTTPCancel: cancelling a modern call closes its stream and
// sends nothing; cancelling a legacy call sends notifications/cancelled.
func TestClientHTTPCancel(t *testing.T) {
	for _, era := range []Era{EraModern, EraLegacy} {
		t.Run(era.String(), func(t *testing.T) {
			gone := make(chan struct{})
			slow := func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Request) bool {
				if m.Method != MethodToolsCall {
					return false
				}
				startSSEReply(w)
				<-r.Context().Done()
				close(gone)
				return true
			}
			var f *fakeHTTP
			if era == EraModern {
				f = newFakeHTTP(t, func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Request) {
					if !slow(w, r, m) {
						modernServer(`[]`)(w, r, m)
					}
				})
			} else {
				f = newFakeHTTP(t, legacyServer("sid", slow))
			}
			s := connectFake(t, NewClient(ClientOptions{}), f, HTTPClientOptions{NoStandaloneStream: true})
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			if _, err := s.CallTool(ctx, "slow", nil); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err %v", err)
			}
			select {
			case <-gone:
			case <-time.After(5 * time.Second):
				t.Fatal("the response stream was not closed")
			}
			n := len(f.requests(NotificationCancelled))
			if era == EraModern && n != 0 {
				t.Fatalf("%d notifications/cancelled over modern HTTP", n)
			}
			if era == EraLegacy && n != 1 {
				t.Fatalf("%d notifications/cancelled over legacy HTTP, want 1", n)
			}
		})
	}
}

func TestClientHTTPLimits(t *testing.T) {
	f := newFakeHTTP(t, func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Request) {
		switch m.Method {
		case MethodToolsList:
			writeRPC(w, 200, rpcResult(m.ID, `{"tools":[],"pad":"`+strings.Repeat("x", 4096)+`"}`))
		case MethodToolsCall:
			startSSEReply(w)
			writeSSE(w, "data: "+strings.Repeat("y", 4096))
		default:
			modernServer(`[]`)(w, r, m)
		}
	})
	s := connectFake(t, NewClient(ClientOptions{}), f, HTTPClientOptions{MaxMessageBytes: 1024})
	if _, err := s.ListTools(context.Background(), ""); err == nil || !strings.Contains(err.Error(), "larger than 1024") {
		t.Fatalf("big body: %v", err)
	}
	if _, err := s.CallTool(context.Background(), "t", nil); !errors.Is(err, ErrSSEEventTooLarge) {
		t.Fatalf("big event: %v", err)
	}
}

// TestClientHTTPStatusErrors: a plain-text error page (a front end that
// is no MCP server) becomes a capped, sanitised *HTTPStatusError. Our own
// server's JSON-RPC error bodies are covered in client_http_real_test.go.
func TestClientHTTPStatusErrors(t *testing.T) {
	f := newFakeHTTP(t, func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Request) {
		if m.Method == MethodToolsList {
			http.Error(w, strings.Repeat("\x1b[31mboom ", 500), http.StatusInternalServerError)
			return
		}
		modernServer(`[]`)(w, r, m)
	})
	s := connectFake(t, NewClient(ClientOptions{}), f, HTTPClientOptions{})
	_, err := s.ListTools(context.Background(), "")
	var se *HTTPStatusError
	var re *jsonrpc.Error
	if !errors.As(err, &se) || se.StatusCode != 500 || len(se.Body) > 300 || strings.ContainsRune(err.Error(), 0x1b) || errors.As(err, &re) {
		t.Fatalf("err %v", err)
	}
}

// TestClientHTTPNoRefDereference: listing a tool whose schema points at
// a URL never fetches it.
func TestClientHTTPNoRefDereference(t *testing.T) {
	var fetched int
	var mu sync.Mutex
	canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		fetched++
		mu.Unlock()
	}))
	defer canary.Close()
	tools := `[{"name":"lookup","inputSchema":{"type":"object","properties":{"p":{"$ref":"` + canary.URL + `/schema.json"}}}}]`
	f := newFakeHTTP(t, modernServer(tools))
	s := connectFake(t, NewClient(ClientOptions{}), f, HTTPClientOptions{})
	ts, err := s.AllTools(context.Background())
	if err != nil || len(ts) != 1 {
		t.Fatalf("%v %v", ts, err)
	}
	if !bytes.Contains(ts[0].InputSchema, []byte(canary.URL)) {
		t.Fatalf("schema changed: %s", ts[0].InputSchema)
	}
	if _, err := s.CallTool(context.Background(), "lookup", map[string]any{"p": "x"}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if fetched != 0 {
		t.Fatalf("the $ref URL was fetched %d times", fetched)
	}
}

func TestConnectHTTPBadURL(t *testing.T) {
	for _, u := range []string{"", "ftp://x/mcp", "localhost:8080/mcp", "http:///mcp"} {
		if _, err := NewClient(ClientOptions{}).ConnectHTTP(context.Background(), u, HTTPClientOptions{}); err == nil {
			t.Errorf("%q: no error", u)
		}
	}
}
