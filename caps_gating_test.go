package pmcp

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// gateCase is one server-to-client input a handler asks for, the client
// capabilities in force, and what the server must require (empty: the
// input is allowed and must reach the client).
type gateCase struct {
	name string
	caps map[string]any
	ask  func(ctx context.Context, e *RequestHandlerExtra) error
	// want is the data.requiredCapabilities of the -32021 error, as
	// deterministic JSON; "" means the request is allowed.
	want string
}

func gateMessages() []*SamplingMessage {
	return []*SamplingMessage{{Role: "user", Content: Text("hi")}}
}

func gateSample(p *CreateMessageParams) func(ctx context.Context, e *RequestHandlerExtra) error {
	return func(ctx context.Context, e *RequestHandlerExtra) error {
		_, err := e.Peer.Sample(ctx, p)
		return err
	}
}

func gateElicit(p *ElicitParams) func(ctx context.Context, e *RequestHandlerExtra) error {
	return func(ctx context.Context, e *RequestHandlerExtra) error {
		_, err := e.Peer.Elicit(ctx, p)
		return err
	}
}

func gateCases() []gateCase {
	tools := []*Tool{{Name: "lookup", InputSchema: jsontext.Value(`{"type":"object"}`)}}
	form := &ElicitParams{Message: "Name?", RequestedSchema: jsontext.Value(`{"type":"object","properties":{"name":{"type":"string"}}}`)}
	url := &ElicitParams{Mode: "url", Message: "Sign in", URL: "https://example.com/start", ElicitationID: "el-1"}
	obj := map[string]any{}
	return []gateCase{
		{"sampling-tools-undeclared", map[string]any{"sampling": obj}, gateSample(&CreateMessageParams{Messages: gateMessages(), MaxTokens: 8, Tools: tools}), `{"sampling":{"tools":{}}}`},
		{"sampling-toolChoice-undeclared", map[string]any{"sampling": obj}, gateSample(&CreateMessageParams{Messages: gateMessages(), MaxTokens: 8, ToolChoice: map[string]any{"mode": "none"}}), `{"sampling":{"tools":{}}}`},
		{"sampling-tools-declared", map[string]any{"sampling": map[string]any{"tools": obj}}, gateSample(&CreateMessageParams{Messages: gateMessages(), MaxTokens: 8, Tools: tools}), ""},
		{"includeContext-thisServer-undeclared", map[string]any{"sampling": map[string]any{"tools": obj}}, gateSample(&CreateMessageParams{Messages: gateMessages(), MaxTokens: 8, IncludeContext: "thisServer"}), `{"sampling":{"context":{}}}`},
		{"includeContext-allServers-and-tools-undeclared", map[string]any{"sampling": obj}, gateSample(&CreateMessageParams{Messages: gateMessages(), MaxTokens: 8, IncludeContext: "allServers", Tools: tools}), `{"sampling":{"context":{},"tools":{}}}`},
		{"includeContext-none", map[string]any{"sampling": obj}, gateSample(&CreateMessageParams{Messages: gateMessages(), MaxTokens: 8, IncludeContext: "none"}), ""},
		{"includeContext-declared", map[string]any{"sampling": map[string]any{"context": obj}}, gateSample(&CreateMessageParams{Messages: gateMessages(), MaxTokens: 8, IncludeContext: "thisServer"}), ""},
		{"form-to-url-only-client", map[string]any{"elicitation": map[string]any{"url": obj}}, gateElicit(form), `{"elicitation":{"form":{}}}`},
		{"form-to-empty-elicitation", map[string]any{"elicitation": obj}, gateElicit(form), ""},
		{"url-to-empty-elicitation", map[string]any{"elicitation": obj}, gateElicit(url), `{"elicitation":{"url":{}}}`},
		{"url-to-form-only-client", map[string]any{"elicitation": map[string]any{"form": obj}}, gateElicit(url), `{"elicitation":{"url":{}}}`},
		{"url-declared", map[string]any{"elicitation": map[string]any{"url": obj}}, gateElicit(url), ""},
	}
}

// gateServer has one tool, "ask", that runs ask and reports its error.
func gateServer(t *testing.T, ask func(ctx context.Context, e *RequestHandlerExtra) error) *Server {
	t.Helper()
	srv, err := NewServer(ServerOptions{Name: "gate", Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := AddTool(srv, &Tool{Name: "ask"}, func(ctx context.Context, e *RequestHandlerExtra, in struct{}) (string, error) {
		if err := ask(ctx, e); err != nil {
			return "", err
		}
		return "ok", nil
	}); err != nil {
		t.Fatal(err)
	}
	return srv
}

// requestCounter answers legacy server-to-client requests and counts them.
type requestCounter struct {
	mu   sync.Mutex
	seen []*jsonrpc.Request
}

func (rc *requestCounter) handle(ctx context.Context, req *jsonrpc.Request) (any, error) {
	rc.mu.Lock()
	rc.seen = append(rc.seen, req)
	rc.mu.Unlock()
	switch req.Method {
	case MethodSamplingCreateMessage:
		return &CreateMessageResult{Role: "assistant", Content: Text("x"), Model: "m"}, nil
	case MethodElicitationCreate:
		return &ElicitResult{Action: "decline"}, nil
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "no"}
}

func (rc *requestCounter) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.seen)
}

func canonical(t *testing.T, raw jsontext.Value) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	b, err := json.Marshal(v, json.Deterministic(true))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func requiredCaps(t *testing.T, e *jsonrpc.Error) string {
	t.Helper()
	var d struct {
		RequiredCapabilities jsontext.Value `json:"requiredCapabilities"`
	}
	if err := json.Unmarshal(e.Data, &d); err != nil || len(d.RequiredCapabilities) == 0 {
		t.Fatalf("-32021 data %s has no requiredCapabilities (%v)", e.Data, err)
	}
	return canonical(t, d.RequiredCapabilities)
}

// TestCapabilityGatingLegacy: a legacy server never sends a request the
// client's initialize capabilities do not cover; the handler gets
// *MissingCapabilityError (-32021 on the wire) and the client sees nothing.
func TestCapabilityGatingLegacy(t *testing.T) {
	for _, tc := range gateCases() {
		t.Run(tc.name, func(t *testing.T) {
			var handlerErr error
			srv := gateServer(t, func(ctx context.Context, e *RequestHandlerExtra) error {
				handlerErr = tc.ask(ctx, e)
				return handlerErr
			})
			rc := &requestCounter{}
			c := startServer(t, srv, rc.handle)
			c.initialize(tc.caps)
			if tc.want == "" {
				res := c.mustCall(MethodToolsCall, map[string]any{"name": "ask"})
				if res["isError"] == true || rc.count() != 1 {
					t.Fatalf("allowed input: result %v, client saw %d requests, want 1", res, rc.count())
				}
				return
			}
			e := c.callErr(MethodToolsCall, map[string]any{"name": "ask"})
			if e.Code != jsonrpc.CodeMissingRequiredClientCapability {
				t.Fatalf("code %d (%s), want -32021", e.Code, e.Message)
			}
			if got := requiredCaps(t, e); got != tc.want {
				t.Errorf("requiredCapabilities %s, want %s", got, tc.want)
			}
			var mc *MissingCapabilityError
			if !errors.As(handlerErr, &mc) {
				t.Errorf("handler's error %v is not a *MissingCapabilityError", handlerErr)
			}
			if n := rc.count(); n != 0 {
				t.Errorf("the client received %d requests (%s), want none", n, rc.seen[0].Method)
			}
		})
	}
}

// TestCapabilityGatingModern: a modern server never puts an input request
// the request's clientCapabilities do not cover into inputRequests.
func TestCapabilityGatingModern(t *testing.T) {
	for _, tc := range gateCases() {
		t.Run(tc.name, func(t *testing.T) {
			srv := gateServer(t, tc.ask)
			c := startServer(t, srv, nil)
			params := modern(map[string]any{"name": "ask"}, tc.caps, nil)
			if tc.want == "" {
				res := c.mustCall(MethodToolsCall, params)
				if res["resultType"] != resultTypeInputRequired {
					t.Fatalf("allowed input: %v, want input_required", res)
				}
				if b, _ := json.Marshal(res["inputRequests"]); strings.Contains(string(b), "elicitationId") {
					t.Errorf("2026-07-28 input requests have no elicitationId: %s", b)
				}
				return
			}
			raw, err := c.call(MethodToolsCall, params)
			var e *jsonrpc.Error
			if !errors.As(err, &e) {
				t.Fatalf("want -32021, got result %s (sent to the client) err %v", raw, err)
			}
			if e.Code != jsonrpc.CodeMissingRequiredClientCapability {
				t.Fatalf("code %d (%s), want -32021", e.Code, e.Message)
			}
			if got := requiredCaps(t, e); got != tc.want {
				t.Errorf("requiredCapabilities %s, want %s", got, tc.want)
			}
		})
	}
}

func urlRequired() *URLElicitationRequiredError {
	return &URLElicitationRequiredError{Elicitations: []*ElicitParams{
		{Message: "Authorize access to your calendar", URL: "https://example.com/connect?s=1", ElicitationID: "el-1"},
	}}
}

// TestURLElicitationRequiredLegacy: a handler's *URLElicitationRequiredError
// becomes -32042 with data.elicitations for a client that declared URL
// mode, and -32021 for one that did not.
func TestURLElicitationRequiredLegacy(t *testing.T) {
	srv := gateServer(t, func(ctx context.Context, e *RequestHandlerExtra) error { return urlRequired() })
	c := startServer(t, srv, nil)
	c.initialize(map[string]any{"elicitation": map[string]any{"url": map[string]any{}}})
	e := c.callErr(MethodToolsCall, map[string]any{"name": "ask"})
	if e.Code != jsonrpc.CodeURLElicitationRequired {
		t.Fatalf("code %d (%s), want -32042", e.Code, e.Message)
	}
	want := `{"elicitations":[{"elicitationId":"el-1","message":"Authorize access to your calendar","mode":"url","url":"https://example.com/connect?s=1"}]}`
	if got := canonical(t, e.Data); got != want {
		t.Errorf("data %s\nwant %s", got, want)
	}

	formOnly := startServer(t, srv, nil)
	formOnly.initialize(map[string]any{"elicitation": map[string]any{}})
	e = formOnly.callErr(MethodToolsCall, map[string]any{"name": "ask"})
	if e.Code != jsonrpc.CodeMissingRequiredClientCapability || requiredCaps(t, e) != `{"elicitation":{"url":{}}}` {
		t.Errorf("form-only client: code %d data %s, want -32021 elicitation.url", e.Code, e.Data)
	}
}

// TestURLElicitationRequiredModern: -32042 is reserved in 2026-07-28, so
// the same handler error becomes an input_required round asking for the
// URL elicitations, keyed by their elicitation ids.
func TestURLElicitationRequiredModern(t *testing.T) {
	var answer *ElicitResult
	srv := gateServer(t, func(ctx context.Context, e *RequestHandlerExtra) error {
		if r, ok := e.InputResponses().Elicit("el-1"); ok {
			answer = r
			return nil
		}
		return urlRequired()
	})
	c := startServer(t, srv, nil)
	caps := map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}
	res := c.mustCall(MethodToolsCall, modern(map[string]any{"name": "ask"}, caps, nil))
	if res["resultType"] != resultTypeInputRequired {
		t.Fatalf("got %v, want input_required", res)
	}
	b, _ := json.Marshal(getPath(res, "inputRequests"), json.Deterministic(true))
	want := `{"el-1":{"method":"elicitation/create","params":{"message":"Authorize access to your calendar","mode":"url","url":"https://example.com/connect?s=1"}}}`
	if string(b) != want {
		t.Errorf("inputRequests %s\nwant %s", b, want)
	}
	state, _ := res["requestState"].(string)
	res = c.mustCall(MethodToolsCall, modern(map[string]any{
		"name":           "ask",
		"requestState":   state,
		"inputResponses": map[string]any{"el-1": map[string]any{"action": "accept"}},
	}, caps, nil))
	if res["resultType"] != resultTypeComplete || answer == nil || answer.Action != "accept" {
		t.Errorf("retry: %v, handler saw %+v", res, answer)
	}

	e := c.callErr(MethodToolsCall, modern(map[string]any{"name": "ask"}, map[string]any{"elicitation": map[string]any{}}, nil))
	if e.Code != jsonrpc.CodeMissingRequiredClientCapability || requiredCaps(t, e) != `{"elicitation":{"url":{}}}` {
		t.Errorf("form-only client: code %d data %s, want -32021 elicitation.url", e.Code, e.Data)
	}
}

// TestElicitationCompleteLegacy: a legacy handler tells a real pmcp.Client
// that a URL elicitation finished, both while the request runs (after the
// user consented in elicitation/create) and after the request ended with
// URL-elicitation-required (-32042), through the session: the connection
// on a stream, the standalone GET stream on Streamable HTTP.
func TestElicitationCompleteLegacy(t *testing.T) {
	for _, tr := range []string{"pipe", "http"} {
		t.Run(tr, func(t *testing.T) { testElicitationComplete(t, tr) })
	}
}

func testElicitationComplete(t *testing.T, transport string) {
	srv, err := NewServer(ServerOptions{Name: "url", Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	notifiers := make(chan func(ctx context.Context, id string) error, 1)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(AddTool(srv, &Tool{Name: "inline"}, func(ctx context.Context, e *RequestHandlerExtra, in struct{}) (string, error) {
		r, err := e.Peer.Elicit(ctx, &ElicitParams{Mode: "url", Message: "Sign in", URL: "https://example.com/a", ElicitationID: "el-inline"})
		if err != nil {
			return "", err
		}
		if err := e.NotifyElicitationComplete(ctx, "el-inline"); err != nil {
			return "", err
		}
		return r.Action, nil
	}))
	must(AddTool(srv, &Tool{Name: "later"}, func(ctx context.Context, e *RequestHandlerExtra, in struct{}) (string, error) {
		notifiers <- e.NotifyElicitationComplete
		return "", &URLElicitationRequiredError{Elicitations: []*ElicitParams{{Message: "Sign in", URL: "https://example.com/b", ElicitationID: "el-later"}}}
	}))

	completed := make(chan string, 4)
	c := NewClient(ClientOptions{
		Era: EraLegacy,
		Elicitation: func(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
			return &ElicitResult{Action: "accept"}, nil
		},
		ElicitationURL: true,
		Notifications: ClientNotificationHandlers{ElicitationComplete: func(ctx context.Context, p *ElicitationCompleteParams) {
			completed <- p.ElicitationID
		}},
	})
	ctx := context.Background()
	var s *ClientSession
	if transport == "http" {
		h := NewStreamableHTTPHandler(srv, StreamableHTTPOptions{})
		ts := httptest.NewServer(h)
		t.Cleanup(func() {
			_ = h.Close()
			ts.Close()
		})
		var err error
		if s, err = c.ConnectHTTP(ctx, ts.URL, HTTPClientOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
	} else {
		s = connectClient(t, c, serveOnPipe(t, srv))
	}

	res, err := s.CallTool(ctx, "inline", nil)
	if err != nil || res.IsError {
		t.Fatalf("inline: %v %+v", err, res)
	}
	if got := waitString(t, completed); got != "el-inline" {
		t.Errorf("completed %q, want el-inline", got)
	}

	_, err = s.CallTool(ctx, "later", nil)
	var re *jsonrpc.Error
	if !errors.As(err, &re) || re.Code != jsonrpc.CodeURLElicitationRequired {
		t.Fatalf("later: %v, want -32042", err)
	}
	notify := <-notifiers
	if err := notify(ctx, "el-later"); err != nil {
		t.Fatalf("notify after the request ended: %v", err)
	}
	if got := waitString(t, completed); got != "el-later" {
		t.Errorf("completed %q, want el-later", got)
	}
}

// TestElicitationCompleteRefused: nothing is sent to a client that did not
// declare URL-mode elicitation, and modern requests have no such
// notification.
func TestElicitationCompleteRefused(t *testing.T) {
	var got error
	srv := gateServer(t, func(ctx context.Context, e *RequestHandlerExtra) error {
		got = e.NotifyElicitationComplete(ctx, "el-1")
		return nil
	})
	c := startServer(t, srv, nil)
	c.initialize(map[string]any{"elicitation": map[string]any{"form": map[string]any{}}})
	c.mustCall(MethodToolsCall, map[string]any{"name": "ask"})
	var mc *MissingCapabilityError
	if !errors.As(got, &mc) {
		t.Errorf("form-only client: err %v, want *MissingCapabilityError", got)
	}
	c.mustCall(MethodToolsCall, modern(map[string]any{"name": "ask"}, map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}, nil))
	if !errors.Is(got, ErrLegacyOnly) {
		t.Errorf("modern: err %v, want ErrLegacyOnly", got)
	}
	c.mustCall(MethodPing, nil)
	for _, n := range c.drainNotes() {
		if n.Method == NotificationElicitationComplete {
			t.Errorf("sent %s to a client that cannot take it", n.Method)
		}
	}
}

func waitString(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(5 * time.Second):
		t.Fatal("timed out")
		return ""
	}
}

// TestURLElicitationMalformed: what 2025-11-25 would reject is never sent:
// a URL elicitation without an elicitationId, and a malformed
// URLElicitationRequiredError (a server bug, -32603).
func TestURLElicitationMalformed(t *testing.T) {
	caps := map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}
	srv := gateServer(t, gateElicit(&ElicitParams{Mode: "url", Message: "Sign in", URL: "https://example.com/start"}))
	rc := &requestCounter{}
	c := startServer(t, srv, rc.handle)
	c.initialize(caps)
	if res := c.mustCall(MethodToolsCall, map[string]any{"name": "ask"}); res["isError"] != true || rc.count() != 0 {
		t.Errorf("URL elicitation without id: %v, client saw %d requests", res, rc.count())
	}
	for name, bad := range map[string]*URLElicitationRequiredError{
		"empty":     {},
		"form-mode": {Elicitations: []*ElicitParams{{Mode: "form", Message: "m", URL: "https://example.com", ElicitationID: "a"}}},
		"no-url":    {Elicitations: []*ElicitParams{{Message: "m", ElicitationID: "a"}}},
		"no-id":     {Elicitations: []*ElicitParams{{Message: "m", URL: "https://example.com"}}},
		"dup-id":    {Elicitations: []*ElicitParams{{Message: "m", URL: "https://example.com", ElicitationID: "a"}, {Message: "m", URL: "https://example.com/2", ElicitationID: "a"}}},
		"reserved":  {Elicitations: []*ElicitParams{{Message: "m", URL: "https://example.com", ElicitationID: "pmcp-input-1"}}},
	} {
		t.Run(name, func(t *testing.T) {
			srv := gateServer(t, func(ctx context.Context, e *RequestHandlerExtra) error { return bad })
			c := startServer(t, srv, nil)
			c.initialize(caps)
			if e := c.callErr(MethodToolsCall, map[string]any{"name": "ask"}); e.Code != jsonrpc.CodeInternalError {
				t.Errorf("legacy: code %d (%s), want -32603", e.Code, e.Message)
			}
			if e := c.callErr(MethodToolsCall, modern(map[string]any{"name": "ask"}, caps, nil)); e.Code != jsonrpc.CodeInternalError {
				t.Errorf("modern: code %d (%s), want -32603", e.Code, e.Message)
			}
		})
	}
}

// TestClientRefusesUndeclaredSamplingTools: a pmcp.Client that did not
// declare sampling.tools answers a sampling request carrying tools or
// toolChoice with an error, without calling its handler.
func TestClientRefusesUndeclaredSamplingTools(t *testing.T) {
	var fake *fakeServer
	var calls sync.Map
	fake, st := startFake(t, legacyHandler(Version20251125, func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		for _, params := range []string{
			`{"messages":[],"maxTokens":8,"tools":[{"name":"t","inputSchema":{"type":"object"}}]}`,
			`{"messages":[],"maxTokens":8,"toolChoice":{"mode":"auto"}}`,
		} {
			_, err := fake.conn.Call(ctx, MethodSamplingCreateMessage, jsontext.Value(params))
			var re *jsonrpc.Error
			if !errors.As(err, &re) || re.Code != jsonrpc.CodeInvalidParams {
				t.Errorf("%s: err %v, want -32602", params, err)
			}
		}
		return jsontext.Value(`{"content":[]}`), nil
	}))
	opts := inputHandlers(ClientOptions{})
	sample := opts.Sampling
	opts.Sampling = func(ctx context.Context, p *CreateMessageParams) (*CreateMessageResult, error) {
		calls.Store(len(p.Tools), true)
		return sample(ctx, p)
	}
	s := connectClient(t, NewClient(opts), st)
	if _, err := s.CallTool(context.Background(), "t", nil); err != nil {
		t.Fatal(err)
	}
	calls.Range(func(k, _ any) bool {
		t.Errorf("the sampling handler ran for a request with tools (%v)", k)
		return true
	})
}

// wireCapsCases are the payloads of the URL-elicitation and
// sub-capability paths (-32042, elicitation/complete, -32021 for
// sampling.tools and sampling.context), built by the code that emits them,
// for TestWireSchema.
func wireCapsCases(t *testing.T, decorated func(Result, *requestEnv) Result) []wireCase {
	var cs []wireCase
	L, M := wireLegacy, wireModern
	id1, idS := jsonrpc.Int64ID(1), jsonrpc.StringID("req-abc")
	add := func(era, def, variant string, v any) {
		cs = append(cs, wireCase{era: era, def: def, variant: variant, value: v})
	}
	addNew := func(era, def, variant string, v any) {
		cs = append(cs, wireCase{era: era, def: def, variant: variant, value: v, since20251125: true})
	}
	addMsg := func(era, def, variant string, m func() (jsonrpc.Message, error)) {
		cs = append(cs, wireCase{era: era, def: def, variant: variant, msg: m})
	}
	addMsgNew := func(era, def, variant string, m func() (jsonrpc.Message, error)) {
		cs = append(cs, wireCase{era: era, def: def, variant: variant, msg: m, since20251125: true})
	}
	urlCaps := &ClientCapabilities{Elicitation: &ElicitationCapability{URL: map[string]any{}}}
	urlErr := &URLElicitationRequiredError{Elicitations: []*ElicitParams{
		{Message: "Authorize calendar access", URL: "https://example.com/connect?s=1", ElicitationID: "el-1"},
		{Mode: "url", Message: "Approve the payment", URL: "https://pay.example.com/p/7", ElicitationID: "el-2", Meta: Meta{"com.example/k": "v"}},
	}}
	legacyURL, _ := urlErr.eraForm(EraLegacy, urlCaps).(*jsonrpc.Error)
	if legacyURL == nil || legacyURL.Code != jsonrpc.CodeURLElicitationRequired {
		t.Fatalf("legacy URLElicitationRequiredError maps to %v", legacyURL)
	}
	addMsgNew(L, "URLElicitationRequiredError", "-32042", wireErrorResponse(idS, legacyURL))
	modernURL, _ := urlErr.eraForm(EraModern, urlCaps).(*inputRequiredError)
	if modernURL == nil {
		t.Fatal("modern URLElicitationRequiredError is not an input round")
	}
	add(M, "InputRequiredResult", "url-elicitation-required", decorated(&InputRequiredResult{InputRequests: modernURL.Requests, RequestState: "st.AAAA"}, &requestEnv{}))
	addMsgNew(L, "ElicitationCompleteNotification", "complete", wireNotification(NotificationElicitationComplete, &ElicitationCompleteParams{ElicitationID: "el-1"}))
	for _, era := range []string{L, M} {
		for variant, p := range map[string]*CreateMessageParams{
			"sampling-tools":   {Messages: []*SamplingMessage{{Role: "user", Content: Text("hi")}}, MaxTokens: 8, Tools: []*Tool{{Name: "t", InputSchema: jsontext.Value(`{"type":"object"}`)}}},
			"sampling-context": {Messages: []*SamplingMessage{{Role: "user", Content: Text("hi")}}, MaxTokens: 8, IncludeContext: "allServers", ToolChoice: map[string]any{"mode": "auto"}},
		} {
			mc, _ := checkInputCapability(&ClientCapabilities{Sampling: &SamplingCapability{}}, &InputRequest{Method: MethodSamplingCreateMessage, Params: p}).(*MissingCapabilityError)
			if mc == nil {
				t.Fatalf("%s: no MissingCapabilityError", variant)
			}
			if era == M {
				addMsg(era, "MissingRequiredClientCapabilityError", variant, wireErrorResponse(id1, mc.rpcError()))
			} else {
				addNew(era, "ClientCapabilities", variant, mc.Required) // requiredCapabilities is a ClientCapabilities
			}
		}
	}
	return cs
}
