package pmcp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// factMethods is every method name the server or the client of this
// package knows, and one nobody knows. Spelled out here, not taken from
// the dispatcher's maps, so the golden outlives them (issue 19, step M2).
var factMethods = []string{
	MethodInitialize, MethodPing, MethodDiscover,
	MethodToolsList, MethodToolsCall,
	MethodResourcesList, MethodResourcesTemplatesList, MethodResourcesRead,
	MethodResourcesSubscribe, MethodResourcesUnsubscribe,
	MethodPromptsList, MethodPromptsGet,
	MethodCompletionComplete, MethodLoggingSetLevel, MethodSubscriptionsListen,
	MethodTasksGet, MethodTasksResult, MethodTasksList, MethodTasksCancel, MethodTasksUpdate,
	MethodSkillsList, MethodSkillsGet,
	MethodSamplingCreateMessage, MethodElicitationCreate, MethodRootsList,
	"no/such-method",
}

// factVariant is one shape of a request's params. members nil and absent
// means no params member at all.
type factVariant struct {
	label   string
	absent  bool
	members map[string]any
	live    bool // taskId names a task created just before, on the same connection
}

// liveTask stands for the id of the task a live variant creates first.
const liveTask = "LIVE-TASK"

// factVariants are the params a method is asked with: none, an empty
// object, and, by the member that names its target (the test's guess;
// what the server reads from it is the recorded fact), a registered, an
// unregistered and a scoped target. A method without a target gets every
// target member at once ("stray"), to record that it reads none of them.
func factVariants(method string) []factVariant {
	vs := []factVariant{{label: "absent", absent: true}, {label: "{}", members: map[string]any{}}}
	target := func(key string, values ...string) {
		for _, v := range values {
			vs = append(vs, factVariant{label: key + "=" + v, members: map[string]any{key: v}})
		}
	}
	switch method {
	case MethodToolsCall:
		target("name", "open", "nope", "admin")
	case MethodPromptsGet:
		target("name", "open", "nope", "secret")
	case MethodResourcesRead, MethodResourcesSubscribe, MethodResourcesUnsubscribe:
		target("uri", "test://open", "test://nope", "test://secret", "tmpl://x")
	case MethodSkillsGet:
		target("uri", "skill://demo/SKILL.md", "skill://nope/SKILL.md")
	case MethodTasksGet, MethodTasksCancel, MethodTasksUpdate:
		target("taskId", "no-such-task")
		// tasks/result is left out: it waits for the task's end.
		vs = append(vs, factVariant{label: "taskId=live", members: map[string]any{"taskId": liveTask}, live: true})
	case MethodTasksResult:
		target("taskId", "no-such-task")
	default:
		vs = append(vs, factVariant{label: "stray", members: map[string]any{"name": "open", "uri": "test://open", "taskId": "no-such-task"}})
	}
	return vs
}

// factsServer registers, in every registry, an unscoped entry ("open")
// and a scoped one ("admin", "secret"), a resource template (tmpl://{x}),
// a skill, and a tool that runs as a task; tasks are on. Middleware records
// Request.Name and, for stream transports, sets an identity without
// scopes (Streamable HTTP authenticates one through scopesFromHeader).
func factsServer(t *testing.T, log *factLog) *Server {
	t.Helper()
	srv, err := NewServer(ServerOptions{
		Name: "facts", Version: "1",
		Logger: slog.New(log),
		Tasks:  &TaskOptions{},
		Middleware: []Middleware{log.middleware, func(next MethodHandler) MethodHandler {
			return func(ctx context.Context, req *Request) (Result, error) {
				if req.Extra.AuthContext == nil {
					req.Extra.AuthContext = &AuthContext{Subject: "u"}
				}
				return next(ctx, req)
			}
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	type noArgs struct{}
	must(AddTool(srv, &Tool{Name: "open"}, func(context.Context, *RequestHandlerExtra, noArgs) (string, error) { return "open", nil }))
	must(AddTool(srv, &Tool{Name: "admin", Scopes: []string{"mcp:admin"}}, func(context.Context, *RequestHandlerExtra, noArgs) (string, error) {
		return "admin", nil
	}))
	prompt := func(context.Context, *RequestHandlerExtra, *GetPromptParams) (*GetPromptResult, error) {
		return &GetPromptResult{Messages: []*PromptMessage{{Role: "user", Content: Text("hi")}}}, nil
	}
	must(srv.AddPrompt(&Prompt{Name: "open"}, prompt))
	must(srv.AddPrompt(&Prompt{Name: "secret", Scopes: []string{"mcp:prompts"}}, prompt))
	read := func(_ context.Context, _ *RequestHandlerExtra, r *ResourceRequest) (*ReadResourceResult, error) {
		return &ReadResourceResult{Contents: []*ResourceContents{{URI: r.URI, Text: "r"}}}, nil
	}
	must(srv.AddResource(&Resource{URI: "test://open", Name: "open"}, read))
	must(srv.AddResource(&Resource{URI: "test://secret", Name: "secret", Scopes: []string{"mcp:files"}}, read))
	must(srv.AddResourceTemplate(&ResourceTemplate{URITemplate: "tmpl://{x}", Name: "tmpl"}, read))
	must(srv.AddSkill(&Skill{Path: "demo", Description: "a skill", Body: "hi"}))
	// bg runs as a task until the server closes.
	must(AddTool(srv, &Tool{Name: "bg", Execution: &ToolExecution{TaskSupport: TaskSupportOptional}}, func(ctx context.Context, _ *RequestHandlerExtra, _ noArgs) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}))
	return srv
}

// newFactsEnv serves factsServer over Streamable HTTP (callers
// authenticated by scopesFromHeader) and opens a legacy session, sid.
func newFactsEnv(t *testing.T) (log *factLog, srv *Server, g *goldenHTTPEnv, sid string) {
	t.Helper()
	log = newFactLog()
	srv = factsServer(t, log)
	g = newGoldenHTTPEnv(t, srv, StreamableHTTPOptions{Authenticate: scopesFromHeader})
	return log, srv, g, g.initSession(nil)
}

// factBody is the raw request of a case.
func factBody(id int, method string, v factVariant, era string) string {
	m := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if !v.absent {
		p := map[string]any{}
		for k, x := range v.members {
			p[k] = x
		}
		if era == "modern" {
			var caps map[string]any
			if strings.HasPrefix(method, "tasks/") {
				caps = tasksExtCaps // as a client using tasks sends
			}
			p = modern(p, caps, nil)
		}
		m["params"] = p
	}
	b, _ := json.Marshal(m, json.Deterministic(true))
	return string(b)
}

// factOutcome is what one case shows.
type factOutcome struct {
	status int // HTTP only
	code   string
	scope  string
	stream string // the first message of a stream that stays open
}

// rpcOutcome reads code and scope of a JSON-RPC reply.
func rpcOutcome(r *rpcReply) (code, scope string) {
	if r.Error == nil {
		return "ok", ""
	}
	var d struct {
		Error string `json:"error"`
		Scope string `json:"scope"`
	}
	if len(r.Error.Data) > 0 && json.Unmarshal(r.Error.Data, &d) == nil && d.Error != "" {
		scope = d.Error + ":" + d.Scope
	}
	return strconv.FormatInt(r.Error.Code, 10), scope
}

// clientMirror is the headers our HTTP client sends with a request:
// the transport writes it (as a notification, so nothing waits for a
// reply) to a RoundTripper that keeps the request.
func clientMirror(t *testing.T, method string, params jsontext.Value) http.Header {
	t.Helper()
	var got http.Header
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		got = r.Header.Clone()
		return &http.Response{StatusCode: http.StatusAccepted, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
	})
	tr, err := newHTTPTransport("http://mirror.invalid/mcp", &HTTPClientOptions{HTTPClient: &http.Client{Transport: rt}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.Write(context.Background(), &jsonrpc.Request{Method: method, Params: params}); err != nil {
		t.Fatalf("client write %s: %v", method, err)
	}
	return got
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestMethodFacts records, for every method × era × transport × params
// shape, the facts issue 19's method table must reproduce: the JSON-RPC
// code (and HTTP status), the Request.Name a middleware sees (and whether
// Request.NameRegistered is true for it), the access
// log's name, the scope challenge, and on modern Streamable HTTP the
// Mcp-Name our client mirrors and what the server answers when that
// header is missing (or present for a method that names no target).
func TestMethodFacts(t *testing.T) {
	log, srv, g, sid := newFactsEnv(t)
	nextID := 100
	var lines []string
	for _, method := range factMethods {
		for _, v := range factVariants(method) {
			for _, era := range []string{"legacy", "modern"} {
				for _, transport := range []string{"stdio", "http"} {
					nextID++
					id := nextID
					body := factBody(id, method, v, era)
					var o factOutcome
					var extra, task string
					if transport == "stdio" {
						o, task = stdioFact(t, srv, log, id, method, era, body, v.live)
					} else {
						if v.live {
							task = httpCreateTask(t, g, era, sid)
							body = strings.Replace(body, liveTask, task, 1)
						}
						h := hdr("Accept", acceptBoth)
						if era == "legacy" {
							h.Set("MCP-Protocol-Version", Version20251125)
							if method != MethodInitialize {
								h.Set("Mcp-Session-Id", sid)
							}
						} else {
							h.Set("MCP-Protocol-Version", Version20260728)
							h.Set("Mcp-Method", method)
							var params jsontext.Value
							if !v.absent {
								params = jsontext.Value(body[strings.Index(body, `"params":`)+len(`"params":`) : len(body)-1])
							}
							mirror := clientMirror(t, method, params)
							for k, vs := range mirror {
								if strings.HasPrefix(k, "Mcp-") || k == "Mcp-Protocol-Version" {
									h[k] = vs
								}
							}
							name, hasName := mirror["Mcp-Name"]
							alt := h.Clone()
							if hasName {
								extra = fmt.Sprintf(" mirror=%q", name[0])
								alt.Del("Mcp-Name")
								extra += " without-Mcp-Name=" + httpFact(t, g, log, nextID+1, method, strings.Replace(body, `"id":`+strconv.Itoa(id), `"id":`+strconv.Itoa(nextID+1), 1), alt).short()
							} else {
								extra = " mirror=-"
								alt.Set("Mcp-Name", "open")
								extra += " stray-Mcp-Name=" + httpFact(t, g, log, nextID+1, method, strings.Replace(body, `"id":`+strconv.Itoa(id), `"id":`+strconv.Itoa(nextID+1), 1), alt).short()
							}
							nextID++
						}
						o = httpFact(t, g, log, id, method, body, h)
					}
					key := strconv.Itoa(id)
					mw := "-"
					if n, ok := log.seen(key); ok {
						mw = n
					}
					lg := "-"
					if r := log.record(key); r != nil {
						lg = strconv.Quote(r["name"])
					}
					line := fmt.Sprintf("%-24s %-8s %-6s %-5s %s mw.Name=%s log.name=%s", method, v.label, era, transport, o.long(), mw, lg) + extra
					if task != "" {
						line = strings.ReplaceAll(line, task, liveTask)
					}
					lines = append(lines, line)
				}
			}
		}
	}
	checkGolden(t, "method_facts.golden", lines)
}

func (o factOutcome) short() string {
	if o.status != 0 {
		return strconv.Itoa(o.status) + "/" + o.code
	}
	return o.code
}

func (o factOutcome) long() string {
	s := "code=" + o.code
	if o.status != 0 {
		s = "status=" + strconv.Itoa(o.status) + " " + s
	}
	if o.scope != "" {
		s += " scope=" + strconv.Quote(o.scope)
	}
	if o.stream != "" {
		s += " stream=" + o.stream
	}
	return s
}

// stdioFact sends one request over a fresh stdio connection (initialized
// first in the legacy era, unless the request is initialize). The
// connection lives in a subtest of its own, closed when the case ends.
// With live, a task is created first and its id replaces liveTask in
// body; that id is returned.
func stdioFact(t *testing.T, srv *Server, log *factLog, id int, method, era, body string, live bool) (o factOutcome, task string) {
	t.Helper()
	t.Run(strconv.Itoa(id), func(t *testing.T) { o, task = stdioCase(t, srv, log, id, method, era, body, live) })
	return o, task
}

func stdioCase(t *testing.T, srv *Server, log *factLog, id int, method, era, body string, live bool) (factOutcome, string) {
	t.Helper()
	p := startStdioServer(t, srv)
	if era == "legacy" && method != MethodInitialize {
		p.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		if m, line := p.next(); m["id"] != "init" || m["result"] == nil {
			t.Fatalf("initialize: %s", line)
		}
		p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	}
	var task string
	if live {
		p.send(createTaskBody(era))
		m, line := p.next()
		if task = createdTask(m); task == "" {
			t.Fatalf("create task: %s", line)
		}
		body = strings.Replace(body, liveTask, task, 1)
	}
	p.send(body)
	for {
		m, line := p.next()
		if m["id"] == float64(id) {
			return factOutcome{code: replyOutcome(t, line)}.withScope(t, line), task
		}
		if m["method"] == NotificationSubscriptionsAck {
			// A stream that stays open: cancel it; it ends without a
			// response, and then writes its access record.
			p.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`, id))
			log.waitRecord(t, strconv.Itoa(id))
			return factOutcome{code: "none", stream: NotificationSubscriptionsAck}, task
		}
	}
}

// createTaskBody calls the tool bg as a task (id "mk").
func createTaskBody(era string) string {
	p := map[string]any{"name": "bg", "arguments": map[string]any{}}
	if era == "modern" {
		p = modern(p, tasksExtCaps, nil)
	} else {
		p["task"] = map[string]any{}
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "mk", "method": MethodToolsCall, "params": p}, json.Deterministic(true))
	return string(b)
}

// createdTask is the task id of a CreateTaskResult (either era's shape).
func createdTask(m map[string]any) string {
	if id, ok := getPath(m, "result", "taskId").(string); ok {
		return id
	}
	id, _ := getPath(m, "result", "task", "taskId").(string)
	return id
}

// httpCreateTask creates a task over Streamable HTTP (in the legacy
// session sid, or statelessly) and returns its id.
func httpCreateTask(t *testing.T, g *goldenHTTPEnv, era, sid string) string {
	t.Helper()
	h := modernHeaders(MethodToolsCall, "bg")
	if era == "legacy" {
		h = hdr("Accept", acceptBoth, "MCP-Protocol-Version", Version20251125, "Mcp-Session-Id", sid)
	}
	r := readAny(t, g.post(createTaskBody(era), h))
	var m map[string]any
	if r.Error != nil || json.Unmarshal(r.Result, &m) != nil {
		t.Fatalf("create task over HTTP (%s): %+v %s", era, r.Error, r.Result)
	}
	task := createdTask(map[string]any{"result": m})
	if task == "" {
		t.Fatalf("create task over HTTP (%s): %s", era, r.Result)
	}
	return task
}

func replyOutcome(t *testing.T, line string) string {
	code, _ := rpcOutcome(decodeReply(t, []byte(line)))
	return code
}

func (o factOutcome) withScope(t *testing.T, line string) factOutcome {
	_, o.scope = rpcOutcome(decodeReply(t, []byte(line)))
	return o
}

// httpFact posts one request and reads its reply (JSON or SSE); a stream
// that stays open is closed after its first message.
func httpFact(t *testing.T, g *goldenHTTPEnv, log *factLog, id int, method, body string, h http.Header) factOutcome {
	t.Helper()
	key := strconv.Itoa(id)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := g.send(ctx, key, http.MethodPost, body, h)
	defer resp.Body.Close()
	o := factOutcome{status: resp.StatusCode, code: "-"}
	if c := resp.Header.Values("WWW-Authenticate"); len(c) > 0 {
		o.scope = strings.Join(c, ", ")
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sr := newSSEReader(t, resp.Body)
		for {
			r, _, ok := sr.nextMessage()
			if !ok {
				o.code = "eof"
				break
			}
			if r.Method == NotificationSubscriptionsAck {
				o.code, o.stream = "none", r.Method
				cancel()
				break
			}
			if r.Method != "" {
				continue
			}
			var sc string
			o.code, sc = rpcOutcome(r)
			if sc != "" {
				o.scope = sc
			}
			break
		}
	} else if b, _ := io.ReadAll(resp.Body); len(b) > 0 {
		var r rpcReply
		if json.Unmarshal(b, &r) == nil {
			var sc string
			o.code, sc = rpcOutcome(&r)
			if sc != "" {
				o.scope = sc
			}
		}
	}
	g.served(t, key)
	if o.stream != "" {
		log.waitRecord(t, key)
	}
	return o
}
