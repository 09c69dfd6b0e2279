package pmcp

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// inputHandlers returns handlers answering every kind of input.
func inputHandlers(opts ClientOptions) ClientOptions {
	opts.Elicitation = func(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
		return &ElicitResult{Action: "accept", Content: map[string]any{"name": "alice", "color": "blue", "ok": true}}, nil
	}
	opts.Sampling = func(ctx context.Context, p *CreateMessageParams) (*CreateMessageResult, error) {
		return &CreateMessageResult{Model: "m", Content: Text("hello")}, nil
	}
	opts.Roots = func(ctx context.Context) (*ListRootsResult, error) {
		return &ListRootsResult{Roots: []*Root{{URI: "file:///a"}, {URI: "file:///b"}}}, nil
	}
	return opts
}

// TestClientWriteOnceInputBothEras: the same handlers answer real
// server-to-client requests (legacy) and input_required rounds (modern).
func TestClientWriteOnceInputBothEras(t *testing.T) {
	srv := newClientTestServer(t, ServerOptions{})
	for _, era := range []Era{EraModern, EraLegacy} {
		t.Run(era.String(), func(t *testing.T) {
			s := connectClient(t, NewClient(inputHandlers(ClientOptions{Era: era})), serveOnPipe(t, srv))
			res, err := s.CallTool(context.Background(), "ask", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Content[0].(*TextContent).Text; got != "alice/hello/2" {
				t.Fatalf("result %q", got)
			}
		})
	}
}

// mrtrFake is a modern fake server whose tools/call is scripted per round.
func mrtrFake(t *testing.T, toolsCall func(ctx context.Context, req *jsonrpc.Request, p *CallToolParams) (any, error)) (*fakeServer, jsonrpc.Stream) {
	return startFake(t, func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		switch req.Method {
		case MethodDiscover:
			return modernDiscover, nil
		case MethodToolsCall:
			var p CallToolParams
			if err := Unmarshal(req.Params, &p); err != nil {
				return nil, err
			}
			return toolsCall(ctx, req, &p)
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "nope"}
	})
}

func TestClientMRTRWire(t *testing.T) {
	var sess atomic.Pointer[ClientSession]
	f, st := mrtrFake(t, func(ctx context.Context, req *jsonrpc.Request, p *CallToolParams) (any, error) {
		switch {
		case p.Name == "other":
			if p.InputResponses != nil || p.RequestState != nil {
				t.Errorf("unrelated call carried inputResponses %s / requestState %v", p.InputResponses, p.RequestState)
			}
			return jsontext.Value(`{"content":[],"resultType":"complete"}`), nil
		case p.RequestState == nil && p.InputResponses == nil:
			// A state with characters a re-encoder might change.
			return jsontext.Value(`{"resultType":"input_required","requestState":"s1+/=\u00e9<>","inputRequests":{"q":{"method":"elicitation/create","params":{"message":"name?","requestedSchema":{"type":"object","properties":{}}}}}}`), nil
		case p.RequestState != nil && *p.RequestState == "s1+/=é<>":
			var r map[string]ElicitResult
			if err := Unmarshal(p.InputResponses, &r); err != nil || r["q"].Action != "accept" || len(r) != 1 {
				t.Errorf("round 1 inputResponses %s (%v)", p.InputResponses, err)
			}
			// Next round: no requestState at all.
			return jsontext.Value(`{"resultType":"input_required","inputRequests":{"r":{"method":"roots/list"},"m":{"method":"sampling/createMessage","params":{"messages":[],"maxTokens":3}}}}`), nil
		case p.RequestState == nil:
			var r map[string]jsontext.Value
			if err := Unmarshal(p.InputResponses, &r); err != nil || len(r) != 2 || r["r"] == nil || r["m"] == nil {
				t.Errorf("round 2 inputResponses %s (%v)", p.InputResponses, err)
			}
			var roots ListRootsResult
			var msg CreateMessageResult
			if Unmarshal(r["r"], &roots) != nil || len(roots.Roots) != 2 || Unmarshal(r["m"], &msg) != nil || msg.Role != "assistant" {
				t.Errorf("round 2 answers %s", p.InputResponses)
			}
			return jsontext.Value(`{"content":[{"type":"text","text":"finished"}]}`), nil // no resultType: complete
		}
		t.Errorf("unexpected round: state %v responses %s", p.RequestState, p.InputResponses)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unexpected"}
	})
	opts := inputHandlers(ClientOptions{})
	elicit := opts.Elicitation
	opts.Elicitation = func(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
		// An unrelated call between rounds must not inherit anything.
		if _, err := sess.Load().CallTool(ctx, "other", nil); err != nil {
			t.Errorf("unrelated call: %v", err)
		}
		return elicit(ctx, p)
	}
	s := connectClient(t, NewClient(opts), st)
	sess.Store(s)
	res, err := s.CallTool(context.Background(), "multi", map[string]any{"x": 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Content[0].(*TextContent).Text != "finished" {
		t.Fatalf("result %+v", res)
	}
	calls := f.requests(MethodToolsCall)
	ids := map[jsonrpc.ID]bool{}
	for _, c := range calls {
		if ids[c.ID] {
			t.Fatalf("request id %v reused", c.ID)
		}
		ids[c.ID] = true
	}
	if len(calls) != 4 { // three rounds plus the unrelated call
		t.Fatalf("%d tools/call requests", len(calls))
	}
	// Every retry repeats the same method and params.
	for _, c := range calls {
		var p CallToolParams
		_ = Unmarshal(c.Params, &p)
		if p.Name == "multi" && string(p.Arguments) != `{"x":1}` {
			t.Fatalf("retry arguments %s", p.Arguments)
		}
	}
}

func TestClientMRTRStateOnlyRetry(t *testing.T) {
	f, st := mrtrFake(t, func(ctx context.Context, req *jsonrpc.Request, p *CallToolParams) (any, error) {
		if p.RequestState == nil {
			return jsontext.Value(`{"resultType":"input_required","requestState":"later"}`), nil
		}
		if *p.RequestState != "later" || p.InputResponses != nil {
			t.Errorf("retry state %v responses %s", *p.RequestState, p.InputResponses)
		}
		return jsontext.Value(`{"content":[],"resultType":"complete"}`), nil
	})
	s := connectClient(t, NewClient(ClientOptions{}), st)
	if _, err := s.CallTool(context.Background(), "t", nil); err != nil {
		t.Fatal(err)
	}
	if n := len(f.requests(MethodToolsCall)); n != 2 {
		t.Fatalf("%d calls", n)
	}
}

func TestClientMRTRRoundCap(t *testing.T) {
	f, st := mrtrFake(t, func(ctx context.Context, req *jsonrpc.Request, p *CallToolParams) (any, error) {
		return jsontext.Value(`{"resultType":"input_required","requestState":"again","inputRequests":{"q":{"method":"elicitation/create","params":{"message":"?"}}}}`), nil
	})
	s := connectClient(t, NewClient(inputHandlers(ClientOptions{MaxInputRounds: 3})), st)
	_, err := s.CallTool(context.Background(), "t", nil)
	if !errors.Is(err, ErrTooManyInputRounds) {
		t.Fatalf("err %v", err)
	}
	if n := len(f.requests(MethodToolsCall)); n != 4 {
		t.Fatalf("%d calls, want 1 + 3 retries", n)
	}
}

func TestClientMRTRRefusesWhatItCannotAnswer(t *testing.T) {
	cases := map[string]struct {
		result string
		opts   ClientOptions
		want   error
	}{
		"no handler": {
			result: `{"resultType":"input_required","inputRequests":{"s":{"method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}}}`,
			opts: ClientOptions{Elicitation: func(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
				return &ElicitResult{Action: "accept"}, nil
			}},
			want: ErrNoInputHandler,
		},
		"url mode not declared": {
			result: `{"resultType":"input_required","inputRequests":{"u":{"method":"elicitation/create","params":{"mode":"url","message":"go","url":"https://x"}}}}`,
			opts:   inputHandlers(ClientOptions{}),
			want:   ErrNoInputHandler,
		},
		"unknown input method": {
			result: `{"resultType":"input_required","inputRequests":{"x":{"method":"tools/call","params":{}}}}`,
			opts:   inputHandlers(ClientOptions{}),
			want:   ErrMalformedInputRequest,
		},
		"empty input_required": {
			result: `{"resultType":"input_required"}`,
			opts:   inputHandlers(ClientOptions{}),
			want:   ErrMalformedInputRequest,
		},
		"unknown resultType": {
			result: `{"resultType":"task","taskId":"1"}`,
			opts:   inputHandlers(ClientOptions{}),
			want:   ErrUnexpectedResultType,
		},
		// Text-block results, which the client decodes directly
		// (decodeTextToolResult), read their resultType the same way.
		"unknown resultType of text blocks": {
			result: `{"content":[{"type":"text","text":"x"}],"resultType":"bogus"}`,
			opts:   inputHandlers(ClientOptions{}),
			want:   ErrUnexpectedResultType,
		},
		"task of text blocks": {
			result: `{"content":[],"resultType":"task"}`,
			opts:   inputHandlers(ClientOptions{}),
			want:   ErrUnexpectedResultType,
		},
		"input_required of text blocks": {
			result: `{"content":[],"resultType":"input_required"}`,
			opts:   inputHandlers(ClientOptions{}),
			want:   ErrMalformedInputRequest,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f, st := mrtrFake(t, func(ctx context.Context, req *jsonrpc.Request, p *CallToolParams) (any, error) {
				return jsontext.Value(tc.result), nil
			})
			s := connectClient(t, NewClient(tc.opts), st)
			_, err := s.CallTool(context.Background(), "t", nil)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if n := len(f.requests(MethodToolsCall)); n != 1 {
				t.Fatalf("%d calls: something was sent after the refusal", n)
			}
		})
	}
}

func TestClientRefusesBadHandlerAnswers(t *testing.T) {
	elicit := `{"resultType":"input_required","inputRequests":{"q":{"method":"elicitation/create","params":{"message":"?"}}}}`
	for name, h := range map[string]ElicitationHandler{
		"bad action": func(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
			return &ElicitResult{Action: "maybe"}, nil
		},
		"nil result": func(ctx context.Context, p *ElicitParams) (*ElicitResult, error) { return nil, nil },
		"error": func(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
			return nil, errors.New("user went away")
		},
		"panic": func(ctx context.Context, p *ElicitParams) (*ElicitResult, error) { panic("boom") },
	} {
		t.Run(name, func(t *testing.T) {
			f, st := mrtrFake(t, func(ctx context.Context, req *jsonrpc.Request, p *CallToolParams) (any, error) {
				return jsontext.Value(elicit), nil
			})
			s := connectClient(t, NewClient(ClientOptions{Elicitation: h}), st)
			if _, err := s.CallTool(context.Background(), "t", nil); err == nil {
				t.Fatal("call succeeded")
			}
			if n := len(f.requests(MethodToolsCall)); n != 1 {
				t.Fatalf("%d calls", n)
			}
		})
	}
}

func TestClientResultTypeRules(t *testing.T) {
	_, st := startFake(t, func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		switch req.Method {
		case MethodDiscover:
			return modernDiscover, nil
		case MethodToolsList:
			return jsontext.Value(`{"resultType":"input_required","inputRequests":{}}`), nil
		case MethodPromptsList:
			return jsontext.Value(`{"prompts":[]}`), nil // missing: complete
		case MethodResourcesList:
			return jsontext.Value(`[]`), nil
		case MethodPromptsGet:
			return jsontext.Value(`{"resultType":"complete","messages":[{"role":"user","content":{"type":"text","text":"hi"}}]}`), nil
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "nope"}
	})
	s := connectClient(t, NewClient(ClientOptions{}), st)
	ctx := context.Background()
	if _, err := s.ListTools(ctx, ""); !errors.Is(err, ErrUnexpectedResultType) {
		t.Errorf("input_required on tools/list: %v", err)
	}
	if _, err := s.ListPrompts(ctx, ""); err != nil {
		t.Errorf("missing resultType: %v", err)
	}
	if _, err := s.ListResources(ctx, ""); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Errorf("array result: %v", err)
	}
	if r, err := s.GetPrompt(ctx, "p", nil); err != nil || r.Messages[0].Content.(*TextContent).Text != "hi" {
		t.Errorf("prompt: %v", err)
	}
}

func TestClientLegacyInputRequiredIsAnError(t *testing.T) {
	_, st := startFake(t, legacyHandler(Version20251125, func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		return jsontext.Value(`{"resultType":"input_required","requestState":"x"}`), nil
	}))
	s := connectClient(t, NewClient(ClientOptions{}), st)
	if _, err := s.CallTool(context.Background(), "t", nil); !errors.Is(err, ErrUnexpectedResultType) {
		t.Fatalf("err %v", err)
	}
}

// TestClientLegacyServerRequests: real server-to-client requests are
// answered through the handlers, or with -32601 when there is none.
func TestClientLegacyServerRequests(t *testing.T) {
	var fake *fakeServer
	fake, st := startFake(t, legacyHandler(Version20251125, func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		var out []string
		for _, m := range []string{MethodPing, MethodElicitationCreate, MethodRootsList, MethodSamplingCreateMessage, "x/unknown"} {
			raw, err := fake.conn.Call(ctx, m, jsontext.Value(`{"message":"?"}`))
			var re *jsonrpc.Error
			switch {
			case errors.As(err, &re):
				out = append(out, m+"="+jsonrpcCode(re))
			case err != nil:
				return nil, err
			default:
				out = append(out, m+"="+string(raw))
			}
		}
		b, _ := Marshal(strings.Join(out, " | "))
		return jsontext.Value(`{"content":[{"type":"text","text":` + string(b) + `}]}`), nil
	}))
	opts := inputHandlers(ClientOptions{})
	opts.Sampling = nil
	s := connectClient(t, NewClient(opts), st)
	res, err := s.CallTool(context.Background(), "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := res.Content[0].(*TextContent).Text
	for _, want := range []string{
		`ping={}`,
		`elicitation/create={"action":"accept","content":{`,
		`roots/list={"roots":[{"uri":"file:///a"},{"uri":"file:///b"}]}`,
		`sampling/createMessage=-32601`,
		`x/unknown=-32601`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in %s", want, got)
		}
	}
}

func jsonrpcCode(e *jsonrpc.Error) string {
	b, _ := Marshal(e.Code)
	return string(b)
}

func TestClientModernRefusesServerRequests(t *testing.T) {
	var fake *fakeServer
	fake, st := startFake(t, func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		switch req.Method {
		case MethodDiscover:
			return modernDiscover, nil
		case MethodToolsCall:
			_, err := fake.conn.Call(ctx, MethodRootsList, nil)
			var re *jsonrpc.Error
			if !errors.As(err, &re) || re.Code != jsonrpc.CodeMethodNotFound {
				t.Errorf("modern client answered roots/list: %v", err)
			}
			return jsontext.Value(`{"content":[]}`), nil
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "nope"}
	})
	s := connectClient(t, NewClient(inputHandlers(ClientOptions{})), st)
	if _, err := s.CallTool(context.Background(), "t", nil); err != nil {
		t.Fatal(err)
	}
}

func TestClientCapabilitiesDerivedFromHandlers(t *testing.T) {
	c := NewClient(ClientOptions{})
	if b, _ := Marshal(c.capabilities(EraModern)); string(b) != `{}` {
		t.Fatalf("no handlers: %s", b)
	}
	c = NewClient(inputHandlers(ClientOptions{SamplingTools: true, ElicitationURL: true}))
	if b, _ := Marshal(c.capabilities(EraModern)); string(b) != `{"roots":{},"sampling":{"tools":{}},"elicitation":{"form":{},"url":{}}}` {
		t.Fatalf("modern: %s", b)
	}
	if b, _ := Marshal(c.capabilities(EraLegacy)); string(b) != `{"roots":{"listChanged":true},"sampling":{"tools":{}},"elicitation":{"form":{},"url":{}}}` {
		t.Fatalf("legacy: %s", b)
	}
}

// TestResultTypeOfFastPath: the byte scan that skips the probe decode
// never misses a resultType member, even one whose name is escaped.
func TestResultTypeOfFastPath(t *testing.T) {
	for _, c := range []struct {
		raw, want string
		err       bool
	}{
		{`{"content":[{"type":"text","text":"a\nb"}]}`, "", false},
		{`{"content":[{"type":"text","text":"resultType"}]}`, "", false},
		{`{"resultType":"input_required","inputRequests":{}}`, resultTypeInputRequired, false},
		{`{"result\u0054ype":"input_required"}`, resultTypeInputRequired, false},
		{`{"\u0072esultType":"task"}`, ResultTypeTask, false},
		{`{"resultType":"bogus"}`, "", true},
		{`{"x":{"resultType":"task"}}`, "", false},
	} {
		got, err := resultTypeOf(MethodToolsCall, jsontext.Value(c.raw))
		if got != c.want || (err != nil) != c.err {
			t.Errorf("%s: %q, %v; want %q (error %v)", c.raw, got, err, c.want, c.err)
		}
	}
}
