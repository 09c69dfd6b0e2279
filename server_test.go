package pmcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/jsonrpc"
	"github.com/gopmcp/pmcp/reqstate"
)

type addIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

type addOut struct {
	Sum int `json:"sum"`
}

// newTestServer registers a representative set of features.
func newTestServer(t *testing.T, opts ServerOptions) *Server {
	t.Helper()
	s, err := NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(AddTool(s, &Tool{Name: "add", Description: "adds"}, func(ctx context.Context, e *RequestHandlerExtra, in addIn) (addOut, error) {
		return addOut{Sum: in.A + in.B}, nil
	}))
	must(AddTool(s, &Tool{Name: "fail", Description: "fails"}, func(ctx context.Context, e *RequestHandlerExtra, in struct{}) (string, error) {
		return "", errors.New("it broke")
	}))
	must(AddTool(s, &Tool{Name: "boom", Description: "panics"}, func(ctx context.Context, e *RequestHandlerExtra, in struct{}) (string, error) {
		panic("kaboom")
	}))
	must(AddTool(s, &Tool{Name: "work", Description: "progress and logs"}, func(ctx context.Context, e *RequestHandlerExtra, in struct{}) (string, error) {
		_ = e.Log(LevelDebug, "debug record")
		_ = e.Log(LevelInfo, "info record")
		for i := 1; i <= 3; i++ {
			_ = e.ReportProgress(float64(i), 3, "")
		}
		e.SetResultMeta(map[string]any{"example.com/k": "v"})
		return "done", nil
	}))
	must(AddTool(s, &Tool{Name: "wait", Description: "waits for cancellation"}, func(ctx context.Context, e *RequestHandlerExtra, in struct{}) (string, error) {
		<-e.Cancelled()
		return "cancelled", nil
	}))
	must(AddTool(s, &Tool{Name: "ask", Description: "write-once elicitation and sampling"}, func(ctx context.Context, e *RequestHandlerExtra, in struct{}) (string, error) {
		el, err := e.Peer.Elicit(ctx, &ElicitParams{Message: "name?", RequestedSchema: jsontext.Value(`{"type":"object","properties":{"name":{"type":"string"}}}`)})
		if err != nil {
			return "", err
		}
		sm, err := e.Peer.Sample(ctx, &CreateMessageParams{Messages: []*SamplingMessage{{Role: "user", Content: Text("hi")}}, MaxTokens: 5})
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%v/%s", el.Content["name"], sm.Content.(*TextContent).Text), nil
	}))
	must(AddTool(s, &Tool{Name: "state", Description: "explicit MRTR with a continuation"}, func(ctx context.Context, e *RequestHandlerExtra, in struct{}) (string, error) {
		if r, ok := e.InputResponses().Elicit("q"); ok {
			round, _ := e.MRTRRound()
			return fmt.Sprintf("cont=%s round=%d action=%s", e.MRTRContinuation(), round, r.Action), nil
		}
		return "", e.RequireInput(map[string]*InputRequest{"q": {Method: MethodElicitationCreate, Params: &ElicitParams{Message: "ok?"}}}, map[string]int{"n": 1})
	}))
	must(s.AddResource(&Resource{URI: "test://a", Name: "a"}, func(ctx context.Context, e *RequestHandlerExtra, r *ResourceRequest) (*ReadResourceResult, error) {
		return &ReadResourceResult{Contents: []*ResourceContents{{URI: r.URI, Text: "A"}}}, nil
	}))
	must(s.AddResourceTemplate(&ResourceTemplate{URITemplate: "test://item/{id}", Name: "item"}, func(ctx context.Context, e *RequestHandlerExtra, r *ResourceRequest) (*ReadResourceResult, error) {
		return &ReadResourceResult{Contents: []*ResourceContents{{URI: r.URI, Text: "item " + r.Vars["id"]}}}, nil
	}))
	must(s.AddPrompt(&Prompt{Name: "greet", Description: "greets", Arguments: []*PromptArgument{{Name: "who", Required: true}}},
		func(ctx context.Context, e *RequestHandlerExtra, p *GetPromptParams) (*GetPromptResult, error) {
			return &GetPromptResult{Messages: []*PromptMessage{{Role: "user", Content: Text("hello " + p.Arguments["who"])}}}, nil
		}))
	return s
}

func TestLegacyHandshakeAndGating(t *testing.T) {
	c := startServer(t, newTestServer(t, ServerOptions{Name: "t", Version: "9"}), nil)
	if e := c.callErr(MethodToolsList, nil); e.Code != jsonrpc.CodeInvalidRequest {
		t.Fatalf("before initialize: %v", e)
	}
	// ping is allowed before initialize and answers exactly {}.
	if raw, err := c.call(MethodPing, nil); err != nil || string(raw) != "{}" {
		t.Fatalf("ping: %s %v", raw, err)
	}
	res := c.initialize(nil)
	if res["protocolVersion"] != Version20251125 || getPath(res, "serverInfo", "name") != "t" {
		t.Fatalf("initialize: %v", res)
	}
	if getPath(res, "capabilities", "logging") == nil || getPath(res, "capabilities", "tools", "listChanged") != true {
		t.Fatalf("capabilities: %v", res["capabilities"])
	}
	if e := c.callErr(MethodInitialize, map[string]any{"protocolVersion": Version20251125, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "x", "version": "1"}}); e.Code != jsonrpc.CodeInvalidRequest {
		t.Fatalf("second initialize: %v", e)
	}
	for _, m := range []string{MethodDiscover, MethodSubscriptionsListen, "no/such"} {
		e := c.callErr(m, nil)
		if m == MethodDiscover && e.Code != jsonrpc.CodeInvalidParams || m != MethodDiscover && e.Code != jsonrpc.CodeMethodNotFound {
			t.Fatalf("%s in legacy: %v", m, e)
		}
	}
	if raw, err := c.call(MethodLoggingSetLevel, map[string]any{"level": "debug"}); err != nil || string(raw) != "{}" {
		t.Fatalf("setLevel: %s %v", raw, err)
	}
}

func TestLegacyVersionNegotiation(t *testing.T) {
	for _, tc := range []struct{ asked, want string }{
		{Version20251125, Version20251125}, {version20250618, version20250618}, {version20250326, version20250326},
		{version20241105, version20241105}, {"1999-01-01", latestLegacyVersion},
	} {
		c := startServer(t, newTestServer(t, ServerOptions{}), nil)
		res := c.mustCall(MethodInitialize, map[string]any{"protocolVersion": tc.asked, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "x", "version": "1"}})
		if res["protocolVersion"] != tc.want {
			t.Errorf("asked %s got %v", tc.asked, res["protocolVersion"])
		}
	}
}

func TestToolsCall(t *testing.T) {
	c := startServer(t, newTestServer(t, ServerOptions{}), nil)
	c.initialize(nil)
	list := c.mustCall(MethodToolsList, nil)
	tools := list["tools"].([]any)
	var names []string
	for _, x := range tools {
		names = append(names, x.(map[string]any)["name"].(string))
	}
	if strings.Join(names, ",") != "add,ask,boom,fail,state,wait,work" {
		t.Fatalf("deterministic order: %v", names)
	}
	if getPath(tools[0].(map[string]any), "inputSchema", "type") != "object" || getPath(tools[0].(map[string]any), "outputSchema", "properties", "sum") == nil {
		t.Fatalf("inferred schemas: %v", tools[0])
	}
	res := c.mustCall(MethodToolsCall, map[string]any{"name": "add", "arguments": map[string]any{"a": 2, "b": 3}})
	if getPath(res, "structuredContent", "sum") != float64(5) || getPath(res, "content", 0, "text") != `{"sum":5}` {
		t.Fatalf("typed result: %v", res)
	}
	res = c.mustCall(MethodToolsCall, map[string]any{"name": "add", "arguments": map[string]any{"a": "x"}})
	if res["isError"] != true || !strings.Contains(getPath(res, "content", 0, "text").(string), `"a"`) {
		t.Fatalf("validation error: %v", res)
	}
	res = c.mustCall(MethodToolsCall, map[string]any{"name": "fail"})
	if res["isError"] != true || getPath(res, "content", 0, "text") != "it broke" {
		t.Fatalf("handler error: %v", res)
	}
	if e := c.callErr(MethodToolsCall, map[string]any{"name": "nope"}); e.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("unknown tool: %v", e)
	}
	if e := c.callErr(MethodToolsCall, map[string]any{"name": "boom"}); e.Code != jsonrpc.CodeInternalError {
		t.Fatalf("panic: %v", e)
	}
	// Still serving after the panic.
	if _, err := c.call(MethodPing, nil); err != nil {
		t.Fatal(err)
	}
	// Legacy results carry no modern members.
	if _, ok := res["resultType"]; ok {
		t.Fatalf("legacy result has resultType: %v", res)
	}
}

func TestProgressAndLoggingLegacy(t *testing.T) {
	c := startServer(t, newTestServer(t, ServerOptions{}), nil)
	c.initialize(nil)
	// Without a progress token: logs (default level info) but no progress.
	res := c.mustCall(MethodToolsCall, map[string]any{"name": "work"})
	if getPath(res, "_meta", "example.com/k") != "v" {
		t.Fatalf("result meta: %v", res)
	}
	notes := c.drainNotes()
	var logs, progress int
	for _, n := range notes {
		switch n.Method {
		case NotificationMessage:
			logs++
		case NotificationProgress:
			progress++
		}
	}
	if logs != 1 || progress != 0 {
		t.Fatalf("no token: logs=%d progress=%d (%v)", logs, progress, notes)
	}
	// With a token and level debug: everything, notifications before the response.
	c.mustCall(MethodLoggingSetLevel, map[string]any{"level": "debug"})
	c.mustCall(MethodToolsCall, map[string]any{"name": "work", "_meta": map[string]any{"progressToken": 42}})
	logs, progress = 0, 0
	for _, n := range c.drainNotes() {
		switch n.Method {
		case NotificationMessage:
			logs++
		case NotificationProgress:
			progress++
			var p ProgressParams
			_ = json.Unmarshal(n.Params, &p)
			if string(p.ProgressToken) != "42" {
				t.Fatalf("token not echoed: %s", p.ProgressToken)
			}
		}
	}
	if logs != 2 || progress != 3 {
		t.Fatalf("with token: logs=%d progress=%d", logs, progress)
	}
}

// TestCancellationNotification: notifications/cancelled for a running
// tools/call cancels the handler's ctx (the handler reports it on a
// channel) and the request is never answered.
func TestCancellationNotification(t *testing.T) {
	s := newTestServer(t, ServerOptions{})
	started := make(chan jsonrpc.ID, 1)
	ended := make(chan error, 1)
	if err := AddTool(s, &Tool{Name: "block", Description: "reports its cancellation"}, func(ctx context.Context, e *RequestHandlerExtra, in struct{}) (string, error) {
		started <- e.RequestID
		<-ctx.Done()
		ended <- context.Cause(ctx)
		return "too late", nil
	}); err != nil {
		t.Fatal(err)
	}
	c := startServer(t, s, nil)
	c.initialize(nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.conn.Call(ctx, MethodToolsCall, map[string]any{"name": "block"})
		done <- err
	}()
	var id jsonrpc.ID
	select {
	case id = <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("handler did not start")
	}
	if err := c.conn.Notify(context.Background(), NotificationCancelled, map[string]any{"requestId": id, "reason": "test"}); err != nil {
		t.Fatal(err)
	}
	select {
	case cause := <-ended:
		if !errors.Is(cause, context.Canceled) {
			t.Fatalf("handler ctx ended with %v", cause)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("notifications/cancelled did not cancel the handler's ctx")
	}
	// The server goes on serving; the cancelled call got no answer.
	if _, err := c.call(MethodPing, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("cancelled request was answered: %v", err)
	default:
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("client call: %v", err)
	}
}

func TestResourcesAndPrompts(t *testing.T) {
	s := newTestServer(t, ServerOptions{PageSize: 1})
	c := startServer(t, s, nil)
	c.initialize(nil)
	res := c.mustCall(MethodResourcesRead, map[string]any{"uri": "test://item/7"})
	if getPath(res, "contents", 0, "text") != "item 7" {
		t.Fatalf("template: %v", res)
	}
	e := c.callErr(MethodResourcesRead, map[string]any{"uri": "test://missing"})
	if e.Code != jsonrpc.CodeResourceNotFound {
		t.Fatalf("legacy not found: %v", e)
	}
	tmpl := c.mustCall(MethodResourcesTemplatesList, nil)
	if getPath(tmpl, "resourceTemplates", 0, "uriTemplate") != "test://item/{id}" {
		t.Fatalf("templates: %v", tmpl)
	}
	if e := c.callErr(MethodPromptsGet, map[string]any{"name": "greet"}); e.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("missing arg: %v", e)
	}
	p := c.mustCall(MethodPromptsGet, map[string]any{"name": "greet", "arguments": map[string]any{"who": "bob"}})
	if getPath(p, "messages", 0, "content", "text") != "hello bob" {
		t.Fatalf("prompt: %v", p)
	}
	// Pagination with opaque cursors, page size 1.
	var seen []string
	cursor := ""
	for i := 0; i < 20; i++ {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		page := c.mustCall(MethodToolsList, params)
		for _, x := range page["tools"].([]any) {
			seen = append(seen, x.(map[string]any)["name"].(string))
		}
		next, _ := page["nextCursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	if strings.Join(seen, ",") != "add,ask,boom,fail,state,wait,work" {
		t.Fatalf("paged: %v", seen)
	}
	if e := c.callErr(MethodToolsList, map[string]any{"cursor": "!!"}); e.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("bad cursor: %v", e)
	}
	// Subscriptions and list_changed.
	c.mustCall(MethodResourcesSubscribe, map[string]any{"uri": "test://a"})
	s.NotifyResourceUpdated("test://a")
	n := c.nextNote(NotificationResourceUpdated)
	if !strings.Contains(string(n.Params), "test://a") {
		t.Fatalf("updated: %s", n.Params)
	}
	if err := s.AddPrompt(&Prompt{Name: "new"}, func(ctx context.Context, e *RequestHandlerExtra, p *GetPromptParams) (*GetPromptResult, error) {
		return &GetPromptResult{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	c.nextNote(NotificationPromptsListChanged)
	if s.RemoveTools("wait") != 1 {
		t.Fatal("remove")
	}
	c.nextNote(NotificationToolsListChanged)
}

func TestRegistrationErrors(t *testing.T) {
	s, _ := NewServer(ServerOptions{})
	noop := func(ctx context.Context, e *RequestHandlerExtra, in struct{}) (string, error) { return "", nil }
	for name, err := range map[string]error{
		"bad name":    AddTool(s, &Tool{Name: "has space"}, noop),
		"nil handler": s.AddRawTool(&Tool{Name: "x"}, nil),
		"no schema":   s.AddRawTool(&Tool{Name: "x"}, func(context.Context, *RequestHandlerExtra, *CallToolParams) (*CallToolResult, error) { return nil, nil }),
		"non-object":  AddTool(s, &Tool{Name: "n"}, func(ctx context.Context, e *RequestHandlerExtra, in int) (string, error) { return "", nil }),
		"bad template": s.AddResourceTemplate(&ResourceTemplate{URITemplate: "test://{", Name: "x"}, func(context.Context, *RequestHandlerExtra, *ResourceRequest) (*ReadResourceResult, error) {
			return nil, nil
		}),
		"no uri": s.AddResource(&Resource{Name: "x"}, func(context.Context, *RequestHandlerExtra, *ResourceRequest) (*ReadResourceResult, error) {
			return nil, nil
		}),
	} {
		if !errors.Is(err, ErrInvalidRegistration) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestModernEra(t *testing.T) {
	c := startServer(t, newTestServer(t, ServerOptions{Name: "srv", Version: "1"}), nil)
	// No initialize needed.
	d := c.mustCall(MethodDiscover, modern(nil, nil, nil))
	if d["resultType"] != "complete" || getPath(d, "_meta", MetaServerInfo, "name") != "srv" || d["ttlMs"] != float64(0) || d["cacheScope"] != "public" {
		t.Fatalf("discover: %v", d)
	}
	cases := []struct {
		name   string
		method string
		params map[string]any
		code   int64
	}{
		{"no meta", MethodDiscover, map[string]any{}, jsonrpc.CodeInvalidParams},
		{"no version", MethodToolsList, map[string]any{"_meta": map[string]any{MetaClientCapabilities: map[string]any{}}}, jsonrpc.CodeInvalidParams},
		{"no caps", MethodToolsList, map[string]any{"_meta": map[string]any{MetaProtocolVersion: Version20260728}}, jsonrpc.CodeInvalidParams},
		{"bad version", MethodToolsList, map[string]any{"_meta": map[string]any{MetaProtocolVersion: "v999", MetaClientCapabilities: map[string]any{}}}, jsonrpc.CodeUnsupportedProtocolVersion},
		{"bad level", MethodToolsList, modern(nil, nil, map[string]any{MetaLogLevel: "loud"}), jsonrpc.CodeInvalidParams},
		{"removed ping", MethodPing, modern(nil, nil, nil), jsonrpc.CodeMethodNotFound},
		{"removed initialize", MethodInitialize, modern(nil, nil, nil), jsonrpc.CodeMethodNotFound},
		{"removed setLevel", MethodLoggingSetLevel, modern(map[string]any{"level": "debug"}, nil, nil), jsonrpc.CodeMethodNotFound},
		{"removed subscribe", MethodResourcesSubscribe, modern(map[string]any{"uri": "test://a"}, nil, nil), jsonrpc.CodeMethodNotFound},
		{"not found", MethodResourcesRead, modern(map[string]any{"uri": "test://missing"}, nil, nil), jsonrpc.CodeInvalidParams},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if e := c.callErr(tc.method, tc.params); e.Code != tc.code {
				t.Fatalf("got %v want code %d", e, tc.code)
			}
		})
	}
	e := c.callErr(MethodToolsList, map[string]any{"_meta": map[string]any{MetaProtocolVersion: "v999", MetaClientCapabilities: map[string]any{}}})
	if !strings.Contains(string(e.Data), `"requested":"v999"`) || !strings.Contains(string(e.Data), `"supported":["2026-07-28"]`) {
		t.Fatalf("-32022 data: %s", e.Data)
	}
	list := c.mustCall(MethodToolsList, modern(nil, nil, nil))
	if list["resultType"] != "complete" || list["cacheScope"] != "public" {
		t.Fatalf("tools/list: %v", list)
	}
	// Logging: absent logLevel means nothing is sent; progress only with a token.
	c.mustCall(MethodToolsCall, modern(map[string]any{"name": "work"}, nil, nil))
	for _, n := range c.drainNotes() {
		t.Fatalf("unexpected notification without logLevel/progressToken: %s", n.Method)
	}
	res := c.mustCall(MethodToolsCall, modern(map[string]any{"name": "work"}, nil, map[string]any{MetaLogLevel: "debug", MetaProgressToken: "p"}))
	if res["resultType"] != "complete" || getPath(res, "_meta", "example.com/k") != "v" || getPath(res, "_meta", MetaServerInfo) == nil {
		t.Fatalf("call: %v", res)
	}
	var logs, progress int
	for _, n := range c.drainNotes() {
		if n.Method == NotificationMessage {
			logs++
		} else if n.Method == NotificationProgress {
			progress++
		}
	}
	if logs != 2 || progress != 3 {
		t.Fatalf("modern notifications: logs=%d progress=%d", logs, progress)
	}
}

func TestMRTRWriteOnce(t *testing.T) {
	caps := map[string]any{"elicitation": map[string]any{}, "sampling": map[string]any{}}
	// Modern: round 1 asks for the elicitation.
	c := startServer(t, newTestServer(t, ServerOptions{}), nil)
	r1 := c.mustCall(MethodToolsCall, modern(map[string]any{"name": "ask"}, caps, nil))
	if r1["resultType"] != "input_required" || r1["requestState"] == nil {
		t.Fatalf("round 1: %v", r1)
	}
	reqs := r1["inputRequests"].(map[string]any)
	if len(reqs) != 1 || getPath(reqs, "pmcp-input-1", "method") != MethodElicitationCreate {
		t.Fatalf("round 1 requests: %v", reqs)
	}
	// Round 2 answers it; the handler re-runs and now asks for sampling.
	r2 := c.mustCall(MethodToolsCall, modern(map[string]any{"name": "ask",
		"inputResponses": map[string]any{"pmcp-input-1": map[string]any{"action": "accept", "content": map[string]any{"name": "ann"}}},
		"requestState":   r1["requestState"]}, caps, nil))
	if r2["resultType"] != "input_required" || getPath(r2, "inputRequests", "pmcp-input-2", "method") != MethodSamplingCreateMessage {
		t.Fatalf("round 2: %v", r2)
	}
	// Round 3 answers only the new key; the first answer rides in the state.
	r3 := c.mustCall(MethodToolsCall, modern(map[string]any{"name": "ask",
		"inputResponses": map[string]any{"pmcp-input-2": map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "yo"}, "model": "m"}},
		"requestState":   r2["requestState"]}, caps, nil))
	if r3["resultType"] != "complete" || getPath(r3, "content", 0, "text") != "ann/yo" {
		t.Fatalf("round 3: %v", r3)
	}
	// Missing capability: -32021 with requiredCapabilities.
	e := c.callErr(MethodToolsCall, modern(map[string]any{"name": "ask"}, map[string]any{"sampling": map[string]any{}}, nil))
	if e.Code != jsonrpc.CodeMissingRequiredClientCapability || !strings.Contains(string(e.Data), `"elicitation"`) {
		t.Fatalf("missing capability: %v %s", e, e.Data)
	}

	// Legacy: the same handler sends real requests to the client.
	var calls atomic.Int32
	lc := startServer(t, newTestServer(t, ServerOptions{}), func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		calls.Add(1)
		switch req.Method {
		case MethodElicitationCreate:
			return map[string]any{"action": "accept", "content": map[string]any{"name": "ann"}}, nil
		case MethodSamplingCreateMessage:
			return map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "yo"}, "model": "m"}, nil
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: req.Method}
	})
	lc.initialize(caps)
	res := lc.mustCall(MethodToolsCall, map[string]any{"name": "ask"})
	if getPath(res, "content", 0, "text") != "ann/yo" || calls.Load() != 2 {
		t.Fatalf("legacy: %v calls=%d", res, calls.Load())
	}
	// Legacy client without the capability: a clear tool error.
	lc2 := startServer(t, newTestServer(t, ServerOptions{}), nil)
	lc2.initialize(nil)
	if e := lc2.callErr(MethodToolsCall, map[string]any{"name": "ask"}); e.Code != jsonrpc.CodeMissingRequiredClientCapability {
		t.Fatalf("legacy without capability: %v", e)
	}
}

func TestMRTRRequestStateSecurity(t *testing.T) {
	key, _ := reqstate.NewKey("k1")
	now := time.Unix(1_000_000, 0)
	var clock atomic.Int64
	clock.Store(now.UnixNano())
	s := newTestServer(t, ServerOptions{RequestStateKeys: []reqstate.Key{key}})
	c := startServer(t, s, nil)
	caps := map[string]any{"elicitation": map[string]any{}}
	accept := map[string]any{"q": map[string]any{"action": "accept"}}
	r1 := c.mustCall(MethodToolsCall, modern(map[string]any{"name": "state"}, caps, nil))
	state := r1["requestState"].(string)

	ok := c.mustCall(MethodToolsCall, modern(map[string]any{"name": "state", "inputResponses": accept, "requestState": state}, caps, nil))
	if getPath(ok, "content", 0, "text") != `cont={"n":1} round=0 action=accept` {
		t.Fatalf("verified: %v", ok)
	}
	for name, params := range map[string]map[string]any{
		"tampered":      {"name": "state", "inputResponses": accept, "requestState": state + "-TAMPERED"},
		"other request": {"name": "ask", "inputResponses": accept, "requestState": state},
		"other args":    {"name": "state", "arguments": map[string]any{"x": 1}, "inputResponses": accept, "requestState": state},
	} {
		if e := c.callErr(MethodToolsCall, modern(params, caps, nil)); e.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("%s: %v", name, e)
		}
	}
	// Malformed input responses are rejected before the handler runs.
	for name, resp := range map[string]any{
		"number":     map[string]any{"q": 12345},
		"bad action": map[string]any{"q": map[string]any{"action": "maybe"}},
		"array":      []any{1},
	} {
		if e := c.callErr(MethodToolsCall, modern(map[string]any{"name": "state", "inputResponses": resp, "requestState": state}, caps, nil)); e.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("%s: %v", name, e)
		}
	}
	// A state sealed under a key the server no longer has re-runs as a first call.
	other, _ := reqstate.NewKey("k2")
	s2 := newTestServer(t, ServerOptions{RequestStateKeys: []reqstate.Key{other}})
	c2 := startServer(t, s2, nil)
	rerun := c2.mustCall(MethodToolsCall, modern(map[string]any{"name": "state", "inputResponses": accept, "requestState": state}, caps, nil))
	if rerun["resultType"] != "input_required" {
		t.Fatalf("unknown key must re-run as a first call: %v", rerun)
	}
	// A rotated-out key still verifies.
	s3 := newTestServer(t, ServerOptions{RequestStateKeys: []reqstate.Key{other, key}})
	c3 := startServer(t, s3, nil)
	rot := c3.mustCall(MethodToolsCall, modern(map[string]any{"name": "state", "inputResponses": accept, "requestState": state}, caps, nil))
	if rot["resultType"] != "complete" {
		t.Fatalf("rotated key: %v", rot)
	}
}

func TestMRTRRoundCap(t *testing.T) {
	s := newTestServer(t, ServerOptions{MaxInputRounds: 2})
	if err := AddTool(s, &Tool{Name: "forever", Description: "always asks"}, func(ctx context.Context, e *RequestHandlerExtra, in struct{}) (string, error) {
		return "", e.RequireInput(map[string]*InputRequest{"q": {Method: MethodElicitationCreate, Params: &ElicitParams{Message: "?"}}}, nil)
	}); err != nil {
		t.Fatal(err)
	}
	c := startServer(t, s, nil)
	caps := map[string]any{"elicitation": map[string]any{}}
	accept := map[string]any{"q": map[string]any{"action": "accept"}}
	state := c.mustCall(MethodToolsCall, modern(map[string]any{"name": "forever"}, caps, nil))["requestState"]
	state = c.mustCall(MethodToolsCall, modern(map[string]any{"name": "forever", "inputResponses": accept, "requestState": state}, caps, nil))["requestState"]
	if e := c.callErr(MethodToolsCall, modern(map[string]any{"name": "forever", "inputResponses": accept, "requestState": state}, caps, nil)); e.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("round cap: %v", e)
	}
}

func TestSubscriptionsListenStdio(t *testing.T) {
	s := newTestServer(t, ServerOptions{})
	c := startServer(t, s, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.conn.Call(ctx, MethodSubscriptionsListen, modern(map[string]any{"notifications": map[string]any{"toolsListChanged": true, "resourceSubscriptions": []string{"test://a"}}}, nil, nil))
		done <- err
	}()
	ack := c.nextNote(NotificationSubscriptionsAck)
	var ap SubscriptionsAckParams
	if err := Unmarshal(ack.Params, &ap); err != nil || !ap.Notifications.ToolsListChanged || ap.Meta[MetaSubscriptionID] == nil {
		t.Fatalf("ack: %s %v", ack.Params, err)
	}
	subID := fmt.Sprint(ap.Meta[MetaSubscriptionID])
	s.RemoveTools("fail")
	n := c.nextNote(NotificationToolsListChanged)
	if !strings.Contains(string(n.Params), `"io.modelcontextprotocol/subscriptionId":`+subID) {
		t.Fatalf("list_changed without subscription id: %s", n.Params)
	}
	s.NotifyResourceUpdated("test://a")
	if n := c.nextNote(NotificationResourceUpdated); !strings.Contains(string(n.Params), "test://a") {
		t.Fatalf("updated: %s", n.Params)
	}
	// Prompts were not requested: nothing arrives for them.
	_ = s.AddPrompt(&Prompt{Name: "p2"}, func(context.Context, *RequestHandlerExtra, *GetPromptParams) (*GetPromptResult, error) {
		return nil, nil
	})
	s.NotifyResourceUpdated("test://a")
	c.nextNote(NotificationResourceUpdated)
	for _, n := range c.drainNotes() {
		if n.Method == NotificationPromptsListChanged {
			t.Fatal("unrequested prompts notification")
		}
	}
	// End the subscription with notifications/cancelled (stdio).
	_ = c.conn.Notify(context.Background(), NotificationCancelled, map[string]any{"requestId": jsontext.Value(subID)})
	deadline := time.After(5 * time.Second)
	for s.listeners.len() > 1 {
		select {
		case <-deadline:
			t.Fatalf("listener not removed: %d", s.listeners.len())
		case <-time.After(5 * time.Millisecond):
		}
	}
	cancel()
	<-done
}

func TestSetResultMetaVerbatim(t *testing.T) {
	s := newTestServer(t, ServerOptions{})
	err := s.AddRawTool(&Tool{Name: "raw", Description: "verbatim result", InputSchema: jsontext.Value(`{"type":"object"}`)},
		func(ctx context.Context, e *RequestHandlerExtra, p *CallToolParams) (*CallToolResult, error) {
			e.SetResultMeta(map[string]any{"shared": "handler", "added": 1})
			e.SetResultMeta(map[string]any{"added": 2})
			res := &CallToolResult{Content: []Content{Text("x")}}
			res.Meta = Meta{"shared": "envelope", "widget": "kept"}
			return res, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	c := startServer(t, s, nil)
	res := c.mustCall(MethodToolsCall, modern(map[string]any{"name": "raw"}, nil, nil))
	m := res["_meta"].(map[string]any)
	if m["shared"] != "handler" || m["widget"] != "kept" || m["added"] != float64(2) || m[MetaServerInfo] == nil {
		t.Fatalf("merged meta: %v", m)
	}
}

func TestPeerRequestTimeoutCancelsAtClient(t *testing.T) {
	s := newTestServer(t, ServerOptions{PeerRequestTimeout: 50 * time.Millisecond})
	release := make(chan struct{})
	c := startServer(t, s, func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		<-release // never answer in time
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "late"}
	})
	defer close(release)
	c.initialize(map[string]any{"elicitation": map[string]any{}, "sampling": map[string]any{}})
	res := c.mustCall(MethodToolsCall, map[string]any{"name": "ask"})
	if res["isError"] != true || !strings.Contains(getPath(res, "content", 0, "text").(string), "deadline") {
		t.Fatalf("timeout result: %v", res)
	}
	n := c.nextNote(NotificationCancelled)
	if !strings.Contains(string(n.Params), `"requestId":1`) {
		t.Fatalf("cancel notification: %s", n.Params)
	}
}
