package pmcp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/internal/rpcconn"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// denyPair returns a server where the tool "secret" and the prompt
// "hidden" exist but are denied, and one where they do not exist at all.
func denyPair(t *testing.T) (denied, absent *Server) {
	t.Helper()
	deny := func(_ context.Context, _ *Request, name string) bool { return name == "secret" || name == "hidden" }
	denied = newTestServer(t, ServerOptions{Middleware: []Middleware{DenyTools(deny), DenyPrompts(deny)}})
	absent = newTestServer(t, ServerOptions{})
	for _, s := range []*Server{denied, absent} {
		if err := s.AddPrompt(&Prompt{Name: "visible"}, func(context.Context, *RequestHandlerExtra, *GetPromptParams) (*GetPromptResult, error) {
			return &GetPromptResult{}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := AddTool(denied, &Tool{Name: "secret"}, func(context.Context, *RequestHandlerExtra, struct{}) (string, error) { return "leak", nil }); err != nil {
		t.Fatal(err)
	}
	if err := denied.AddPrompt(&Prompt{Name: "hidden"}, func(context.Context, *RequestHandlerExtra, *GetPromptParams) (*GetPromptResult, error) {
		return &GetPromptResult{Description: "leak"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	return denied, absent
}

// body reads a whole HTTP response.
func body(t *testing.T, resp *http.Response) (int, []byte) {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// TestDenyToolsLooksUnknown: a denied tool (and prompt) is absent from the
// list and answers, byte for byte, what an unregistered one answers, over
// HTTP in both eras and over a stream.
func TestDenyToolsLooksUnknown(t *testing.T) {
	denied, absent := denyPair(t)
	ed, ea := newHTTPEnv(t, denied, &StreamableHTTPOptions{JSONResponse: true}), newHTTPEnv(t, absent, &StreamableHTTPOptions{JSONResponse: true})

	t.Run("modern", func(t *testing.T) {
		for _, m := range []struct{ method, name string }{
			{MethodToolsCall, "secret"}, {MethodToolsList, ""}, {MethodPromptsGet, "hidden"}, {MethodPromptsList, ""},
		} {
			params := map[string]any{}
			if m.name != "" {
				params["name"] = m.name
			}
			sd, bd := body(t, ed.post(modernBody(7, m.method, params, nil), modernHeaders(m.method, m.name, "Accept", "application/json")))
			params = map[string]any{}
			if m.name != "" {
				params["name"] = m.name
			}
			sa, ba := body(t, ea.post(modernBody(7, m.method, params, nil), modernHeaders(m.method, m.name, "Accept", "application/json")))
			if sd != sa || !bytes.Equal(bd, ba) {
				t.Fatalf("%s %s: denied answered %d %s\nunknown answered %d %s", m.method, m.name, sd, bd, sa, ba)
			}
			if bytes.Contains(bd, []byte("leak")) || (m.name == "" && bytes.Contains(bd, []byte(`"secret"`))) {
				t.Fatalf("%s leaks: %s", m.method, bd)
			}
		}
	})

	t.Run("legacy", func(t *testing.T) {
		sidD, sidA := ed.initSession(nil), ea.initSession(nil)
		for _, msg := range []string{
			`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"secret"}}`,
			`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`,
			`{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"hidden"}}`,
			`{"jsonrpc":"2.0","id":6,"method":"prompts/list"}`,
		} {
			sd, bd := body(t, ed.post(msg, hdr("Accept", "application/json", "Mcp-Session-Id", sidD, "MCP-Protocol-Version", Version20251125)))
			sa, ba := body(t, ea.post(msg, hdr("Accept", "application/json", "Mcp-Session-Id", sidA, "MCP-Protocol-Version", Version20251125)))
			if sd != sa || !bytes.Equal(bd, ba) {
				t.Fatalf("%s: denied answered %d %s\nunknown answered %d %s", msg, sd, bd, sa, ba)
			}
		}
	})

	t.Run("stream", func(t *testing.T) {
		cd, ca := startServer(t, denied, nil), startServer(t, absent, nil)
		cd.initialize(nil)
		ca.initialize(nil)
		_, errD := cd.call(MethodToolsCall, map[string]any{"name": "secret"})
		_, errA := ca.call(MethodToolsCall, map[string]any{"name": "secret"})
		var rd, ra *jsonrpc.Error
		if !errors.As(errD, &rd) || !errors.As(errA, &ra) || rd.Code != ra.Code || rd.Message != ra.Message || !bytes.Equal(rd.Data, ra.Data) {
			t.Fatalf("denied %v, unknown %v", errD, errA)
		}
		var names []string
		for _, tl := range cd.mustCall(MethodToolsList, nil)["tools"].([]any) {
			names = append(names, tl.(map[string]any)["name"].(string))
		}
		if slices.Contains(names, "secret") || !slices.Contains(names, "add") {
			t.Fatalf("listed %v", names)
		}
	})
}

// TestNotificationMiddleware: notification middleware sees
// notifications/cancelled (and the rest) over a stream and over HTTP, and
// the server's own handling still runs when it calls next.
func TestNotificationMiddleware(t *testing.T) {
	type note struct {
		method, session, transport string
		params                     jsontext.Value
	}
	got := make(chan note, 16)
	nmw := func(next NotificationHandler) NotificationHandler {
		return func(ctx context.Context, n *Notification) error {
			got <- note{n.Method, n.SessionID, n.Transport.Name, n.Params}
			return next(ctx, n)
		}
	}
	srv := newTestServer(t, ServerOptions{NotificationMiddleware: []NotificationMiddleware{nmw}})
	wait := func(method string) note {
		t.Helper()
		timeout := time.After(5 * time.Second)
		for {
			select {
			case n := <-got:
				if n.method == method {
					return n
				}
			case <-timeout:
				t.Fatalf("no %s seen", method)
			}
		}
	}

	// Stream.
	c := startServer(t, srv, nil)
	c.initialize(nil)
	wait(NotificationInitialized)
	_ = c.conn.Notify(context.Background(), NotificationCancelled, map[string]any{"requestId": 2})
	if n := wait(NotificationCancelled); n.transport != TransportMemory || !strings.Contains(string(n.params), `"requestId":2`) {
		t.Fatalf("stream note %+v", n)
	}

	// HTTP legacy: the session id is there.
	e := newHTTPEnv(t, srv, nil)
	sid := e.initSession(nil)
	resp := e.post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`, hdr("Mcp-Session-Id", sid, "MCP-Protocol-Version", Version20251125))
	resp.Body.Close()
	if n := wait(NotificationCancelled); n.session != sid || n.transport != TransportHTTP {
		t.Fatalf("http note %+v", n)
	}

	// HTTP modern: no notification is defined, but middleware sees it.
	resp = e.post(`{"jsonrpc":"2.0","method":"notifications/example","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		modernHeaders("notifications/example", ""))
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("modern notification: %d", resp.StatusCode)
	}
	if n := wait("notifications/example"); n.session != "" || n.transport != TransportHTTP {
		t.Fatalf("modern note %+v", n)
	}
}

// TestClientMiddlewareSeesIncomingInput: input the server asks for (a
// legacy server-to-client request, a modern input_required entry) goes
// through the client middleware, which may change the answer.
func TestClientMiddlewareSeesIncomingInput(t *testing.T) {
	for _, era := range []Era{EraLegacy, EraModern} {
		t.Run(era.String(), func(t *testing.T) {
			var mu sync.Mutex
			var incoming []string
			cmw := func(next ClientHandler) ClientHandler {
				return func(ctx context.Context, r *ClientRequest) (jsontext.Value, error) {
					if !r.Incoming {
						return next(ctx, r)
					}
					mu.Lock()
					incoming = append(incoming, r.Method)
					mu.Unlock()
					if r.ID.IsValid() != (era == EraLegacy) {
						t.Errorf("%s in era %v: id %v", r.Method, era, r.ID)
					}
					raw, err := next(ctx, r)
					if err == nil && r.Method == MethodSamplingCreateMessage {
						raw = jsontext.Value(strings.Replace(string(raw), "model says", "middleware says", 1))
					}
					return raw, err
				}
			}
			c := NewClient(ClientOptions{Era: era, Middleware: []ClientMiddleware{cmw},
				Elicitation: func(context.Context, *ElicitParams) (*ElicitResult, error) {
					return &ElicitResult{Action: "accept", Content: map[string]any{"name": "ann"}}, nil
				},
				Sampling: func(context.Context, *CreateMessageParams) (*CreateMessageResult, error) {
					return &CreateMessageResult{Role: "assistant", Content: Text("model says"), Model: "m"}, nil
				},
			})
			s := connectOver(t, TransportMemory, newTestServer(t, ServerOptions{}), c)
			res, err := s.CallTool(context.Background(), "ask", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := resultText(res); got != "ann/middleware says" {
				t.Fatalf("tool answered %q", got)
			}
			mu.Lock()
			defer mu.Unlock()
			if strings.Join(incoming, ",") != MethodElicitationCreate+","+MethodSamplingCreateMessage {
				t.Fatalf("incoming %v", incoming)
			}
		})
	}
}

// TestDenyToolsPagination: whatever the page size, following the cursors
// lists every allowed tool once, and no cursor names a denied tool (a
// cursor is the base64 of the last name a page held).
func TestDenyToolsPagination(t *testing.T) {
	deny := func(_ context.Context, _ *Request, name string) bool { return name == "secret" || name == "state" }
	for size := 1; size <= 9; size++ {
		srv := newTestServer(t, ServerOptions{PageSize: size, Middleware: []Middleware{DenyTools(deny)}})
		if err := AddTool(srv, &Tool{Name: "secret"}, func(context.Context, *RequestHandlerExtra, struct{}) (string, error) { return "", nil }); err != nil {
			t.Fatal(err)
		}
		c := startServer(t, srv, nil)
		c.initialize(nil)
		var names []string
		cursor := ""
		for page := 0; ; page++ {
			if page > 20 {
				t.Fatalf("size %d: cursors do not end", size)
			}
			params := map[string]any{}
			if cursor != "" {
				params["cursor"] = cursor
			}
			res := c.mustCall(MethodToolsList, params)
			for _, tl := range res["tools"].([]any) {
				names = append(names, tl.(map[string]any)["name"].(string))
			}
			next, _ := res["nextCursor"].(string)
			if next == "" {
				break
			}
			if k, _ := decodeCursor(next); k == "secret" || k == "state" {
				t.Fatalf("size %d: cursor %q names denied tool %q", size, next, k)
			}
			cursor = next
		}
		if strings.Join(names, ",") != "add,ask,boom,fail,wait,work" {
			t.Fatalf("size %d: listed %v", size, names)
		}
	}
}

// TestClientMiddlewareListenEndedByServer: with client middleware, Listen
// still learns its request id, so a subscription the server ends by id
// ends Listen cleanly; the middleware sees the id too.
func TestClientMiddlewareListenEndedByServer(t *testing.T) {
	var fake *fakeServer
	fake, st := startFake(t, func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		switch req.Method {
		case MethodDiscover:
			return modernDiscover, nil
		case MethodSubscriptionsListen:
			idJSON := req.ID.AppendJSON(nil)
			_ = fake.conn.Notify(ctx, NotificationCancelled, jsontext.Value(`{"requestId":`+string(idJSON)+`}`))
			return nil, rpcconn.ErrNoResponse
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "nope"}
	})
	ids := make(chan jsonrpc.ID, 4)
	cmw := func(next ClientHandler) ClientHandler {
		return func(ctx context.Context, r *ClientRequest) (jsontext.Value, error) {
			raw, err := next(ctx, r)
			if r.Method == MethodSubscriptionsListen {
				ids <- r.ID
			}
			return raw, err
		}
	}
	s := connectClient(t, NewClient(ClientOptions{Middleware: []ClientMiddleware{cmw}}), st)
	if err := s.Listen(context.Background(), SubscriptionFilter{ToolsListChanged: true}); err != nil {
		t.Fatalf("Listen: %v", err)
	}
	if id := <-ids; !id.IsValid() {
		t.Fatal("middleware saw no id")
	}
}
