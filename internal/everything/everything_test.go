package everything

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/internal/rpcconn"
	"github.com/gopmcp/pmcp/jsonrpc"
	"github.com/gopmcp/pmcp/transport/memory"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type client struct {
	t    *testing.T
	conn *rpcconn.Conn
}

// connect serves a fresh everything server on an in-memory pipe; the
// client answers sampling, elicitation and roots requests like the
// conformance suite's mock client.
func connect(t *testing.T) *client {
	t.Helper()
	srv, err := New(Options{Step: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	a, b := memory.NewPipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { _ = srv.Serve(ctx, a); done <- struct{}{} }()
	h := rpcconn.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		switch req.Method {
		case pmcp.MethodSamplingCreateMessage:
			return map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "This is a test response from the client"}, "model": "test-model", "stopReason": "endTurn"}, nil
		case pmcp.MethodElicitationCreate:
			return map[string]any{"action": "accept", "content": map[string]any{"username": "u", "email": "u@example.com", "name": "Ann"}}, nil
		case pmcp.MethodRootsList:
			return map[string]any{"roots": []any{map[string]any{"uri": "file:///test/root", "name": "Test Root"}}}, nil
		}
		return nil, nil
	})
	conn := rpcconn.NewConn(b, h, rpcconn.ConnOptions{})
	go func() { _ = conn.Run(ctx); done <- struct{}{} }()
	t.Cleanup(func() { _ = conn.Close(); cancel(); <-done; <-done })
	return &client{t: t, conn: conn}
}

func (c *client) call(method string, params any) map[string]any {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, err := c.conn.Call(ctx, method, params)
	if err != nil {
		c.t.Fatalf("%s %v: %v", method, params, err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		c.t.Fatal(err)
	}
	return m
}

func contentTypes(res map[string]any) string {
	var ts []string
	for _, c := range res["content"].([]any) {
		ts = append(ts, c.(map[string]any)["type"].(string))
	}
	return strings.Join(ts, ",")
}

var legacyCaps = map[string]any{"sampling": map[string]any{}, "elicitation": map[string]any{}, "roots": map[string]any{}}

func TestLegacyContract(t *testing.T) {
	c := connect(t)
	init := c.call(pmcp.MethodInitialize, map[string]any{"protocolVersion": "2025-11-25", "capabilities": legacyCaps, "clientInfo": map[string]any{"name": "t", "version": "1"}})
	for _, capName := range []string{"tools", "resources", "prompts", "logging", "completions"} {
		if init["capabilities"].(map[string]any)[capName] == nil {
			t.Fatalf("capability %s missing: %v", capName, init["capabilities"])
		}
	}
	tools := c.call(pmcp.MethodToolsList, nil)["tools"].([]any)
	for _, x := range tools {
		tl := x.(map[string]any)
		if tl["description"] == "" {
			t.Errorf("tool %v has no description", tl["name"])
		}
		if tl["name"] == "json_schema_2020_12_tool" {
			raw, _ := json.Marshal(tl["inputSchema"], json.Deterministic(true))
			for _, want := range []string{`"$schema":"https://json-schema.org/draft/2020-12/schema"`, `"$defs":{"address"`, `"additionalProperties":false`} {
				if !strings.Contains(string(raw), want) {
					t.Errorf("2020-12 schema lost %s: %s", want, raw)
				}
			}
		}
	}
	for _, tc := range []struct {
		tool, args, types, text string
	}{
		{"test_simple_text", "", "text", "simple text response"},
		{"test_image_content", "", "image", ""},
		{"test_audio_content", "", "audio", ""},
		{"test_embedded_resource", "", "resource", ""},
		{"test_multiple_content_types", "", "text,image,resource", ""},
		{"test_error_handling", "", "text", "intentionally"},
		{"test_sampling", `{"prompt":"hi"}`, "text", "LLM response: This is a test response from the client"},
		{"test_elicitation", `{"message":"who?"}`, "text", "User response: action=accept"},
		{"test_elicitation_sep1034_defaults", "", "text", "action=accept"},
		{"test_elicitation_sep1330_enums", "", "text", "action=accept"},
		{"greet_user", "", "text", "Hello, Ann!"},
		{"roots_and_summary", "", "text", "roots=file:///test/root"},
		{"add", `{"a":2,"b":40}`, "text", `{"sum":42}`},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			params := map[string]any{"name": tc.tool}
			if tc.args != "" {
				params["arguments"] = jsontext.Value(tc.args)
			}
			res := c.call(pmcp.MethodToolsCall, params)
			if got := contentTypes(res); got != tc.types {
				t.Fatalf("content types %s want %s: %v", got, tc.types, res)
			}
			if tc.text != "" {
				text := res["content"].([]any)[0].(map[string]any)["text"].(string)
				if !strings.Contains(text, tc.text) {
					t.Fatalf("text %q lacks %q", text, tc.text)
				}
			}
		})
	}
	read := func(uri string) map[string]any {
		return c.call(pmcp.MethodResourcesRead, map[string]any{"uri": uri})["contents"].([]any)[0].(map[string]any)
	}
	if r := read("test://static-text"); r["text"] != "This is the content of the static text resource." {
		t.Fatalf("static-text: %v", r)
	}
	if r := read("test://static-binary"); r["blob"] == "" || r["mimeType"] != "image/png" {
		t.Fatalf("static-binary: %v", r)
	}
	if r := read("test://template/123/data"); !strings.Contains(r["text"].(string), `"id":"123"`) {
		t.Fatalf("template: %v", r)
	}
	if res := c.call(pmcp.MethodResourcesSubscribe, map[string]any{"uri": "test://watched-resource"}); len(res) != 0 {
		t.Fatalf("subscribe must be {}: %v", res)
	}
	p := c.call(pmcp.MethodPromptsGet, map[string]any{"name": "test_prompt_with_arguments", "arguments": map[string]any{"arg1": "testValue1", "arg2": "testValue2"}})
	if raw, _ := json.Marshal(p); !strings.Contains(string(raw), "testValue1") || !strings.Contains(string(raw), "testValue2") {
		t.Fatalf("prompt args: %s", raw)
	}
	cmp := c.call(pmcp.MethodCompletionComplete, map[string]any{"ref": map[string]any{"type": "ref/prompt", "name": "test_prompt_with_arguments"}, "argument": map[string]any{"name": "arg1", "value": "test"}})
	if _, ok := cmp["completion"].(map[string]any)["values"].([]any); !ok {
		t.Fatalf("completion: %v", cmp)
	}
}

func modern(params map[string]any, caps map[string]any) map[string]any {
	params["_meta"] = map[string]any{
		pmcp.MetaProtocolVersion:    pmcp.Version20260728,
		pmcp.MetaClientCapabilities: caps,
	}
	return params
}

var allCaps = map[string]any{"sampling": map[string]any{}, "elicitation": map[string]any{}, "roots": map[string]any{}}

func TestModernMRTRContract(t *testing.T) {
	c := connect(t)
	accept := func(content map[string]any) map[string]any {
		return map[string]any{"action": "accept", "content": content}
	}
	sample := map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "Paris"}, "model": "m", "stopReason": "endTurn"}
	roots := map[string]any{"roots": []any{map[string]any{"uri": "file:///test/root", "name": "Test Root"}}}
	for _, tc := range []struct {
		tool    string
		answers map[string]any
		want    string
	}{
		{"test_input_required_result_elicitation", map[string]any{"user_name": accept(map[string]any{"name": "Alice"})}, "Hello, Alice!"},
		{"test_input_required_result_sampling", map[string]any{"capital_question": sample}, "Paris"},
		{"test_input_required_result_list_roots", map[string]any{"client_roots": roots}, "Test Root"},
		{"test_input_required_result_request_state", map[string]any{"confirm": accept(map[string]any{"ok": true})}, "state-ok"},
		{"test_input_required_result_multiple_inputs", map[string]any{"user_name": accept(map[string]any{"name": "A"}), "greeting": sample, "client_roots": roots}, "name=A"},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			r1 := c.call(pmcp.MethodToolsCall, modern(map[string]any{"name": tc.tool}, allCaps))
			if r1["resultType"] != "input_required" {
				t.Fatalf("round 1: %v", r1)
			}
			for k := range tc.answers {
				if r1["inputRequests"].(map[string]any)[k] == nil {
					t.Fatalf("round 1 lacks %s: %v", k, r1["inputRequests"])
				}
			}
			r2 := c.call(pmcp.MethodToolsCall, modern(map[string]any{"name": tc.tool, "inputResponses": tc.answers, "requestState": r1["requestState"]}, allCaps))
			raw, _ := json.Marshal(r2)
			if r2["resultType"] != "complete" || !strings.Contains(string(raw), tc.want) {
				t.Fatalf("round 2: %s", raw)
			}
		})
	}
	// Multi-round: name, then colour, then complete; each state differs.
	r1 := c.call(pmcp.MethodToolsCall, modern(map[string]any{"name": "test_input_required_result_multi_round"}, allCaps))
	r2 := c.call(pmcp.MethodToolsCall, modern(map[string]any{"name": "test_input_required_result_multi_round", "inputResponses": map[string]any{"step1": accept(map[string]any{"name": "Bo"})}, "requestState": r1["requestState"]}, allCaps))
	if r2["inputRequests"].(map[string]any)["step2"] == nil || r2["requestState"] == r1["requestState"] {
		t.Fatalf("multi-round r2: %v", r2)
	}
	r3 := c.call(pmcp.MethodToolsCall, modern(map[string]any{"name": "test_input_required_result_multi_round", "inputResponses": map[string]any{"step2": accept(map[string]any{"color": "red"})}, "requestState": r2["requestState"]}, allCaps))
	if raw, _ := json.Marshal(r3); r3["resultType"] != "complete" || !strings.Contains(string(raw), "Bo likes red") {
		t.Fatalf("multi-round r3: %s", raw)
	}
	// Capability check: only sampling declared, only sampling asked.
	rc := c.call(pmcp.MethodToolsCall, modern(map[string]any{"name": "test_input_required_result_capabilities"}, map[string]any{"sampling": map[string]any{}}))
	for _, req := range rc["inputRequests"].(map[string]any) {
		if req.(map[string]any)["method"] != pmcp.MethodSamplingCreateMessage {
			t.Fatalf("asked for an undeclared capability: %v", rc)
		}
	}
	// Prompt with MRTR.
	p1 := c.call(pmcp.MethodPromptsGet, modern(map[string]any{"name": "test_input_required_result_prompt"}, allCaps))
	p2 := c.call(pmcp.MethodPromptsGet, modern(map[string]any{"name": "test_input_required_result_prompt", "inputResponses": map[string]any{"user_context": accept(map[string]any{"context": "ctx"})}, "requestState": p1["requestState"]}, allCaps))
	if p2["resultType"] != "complete" || p2["messages"] == nil {
		t.Fatalf("prompt round 2: %v", p2)
	}
	// Write-once tool: the same code that sent real requests above.
	g1 := c.call(pmcp.MethodToolsCall, modern(map[string]any{"name": "roots_and_summary"}, allCaps))
	var key string
	for k := range g1["inputRequests"].(map[string]any) {
		key = k
	}
	g2 := c.call(pmcp.MethodToolsCall, modern(map[string]any{"name": "roots_and_summary", "inputResponses": map[string]any{key: roots}, "requestState": g1["requestState"]}, allCaps))
	var key2 string
	for k := range g2["inputRequests"].(map[string]any) {
		key2 = k
	}
	g3 := c.call(pmcp.MethodToolsCall, modern(map[string]any{"name": "roots_and_summary", "inputResponses": map[string]any{key2: sample}, "requestState": g2["requestState"]}, allCaps))
	if raw, _ := json.Marshal(g3); !strings.Contains(string(raw), "summary=Paris") {
		t.Fatalf("write-once modern: %s", raw)
	}
}
