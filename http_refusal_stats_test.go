package pmcp

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestHTTPRefusalStats: each refusal a client can provoke over raw HTTP
// counts once in StreamableHTTPStats.Refusals under its reason, and
// nowhere else; every reason is present (zero or not) and the set of
// reasons is fixed: no session id, header value or tool name becomes a
// key.
func TestHTTPRefusalStats(t *testing.T) {
	const ping = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	accept := func(kv ...string) http.Header { return hdr(append([]string{"Accept", acceptBoth}, kv...)...) }
	discard := func(resp *http.Response) {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}

	e := newHTTPEnv(t, newTestServerT(t), &StreamableHTTPOptions{MaxBodyBytes: 256, MaxSessions: 1, MaxListenStreams: 1})
	want := map[string]uint64{}
	for _, r := range refusalReasonNames {
		want[r] = 0
	}
	check := func(name, reason string, resp *http.Response) {
		t.Helper()
		discard(resp)
		want[reason]++
		got := e.h.Stats().Refusals
		if !maps.Equal(got, want) {
			t.Errorf("%s: Refusals = %v, want %v", name, got, want)
			maps.Copy(want, got)
		}
	}
	check("host", "host", e.post(ping, accept("Host", "evil.example")))
	check("origin", "origin", e.post(ping, accept("Origin", "https://evil.example")))
	check("method", "method", e.do(nil, http.MethodPut, ping, accept()))
	check("media type", "media_type", e.post(ping, accept("Content-Type", "text/plain")))
	check("too large", "body_too_large", e.post(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`+strings.Repeat("x", 300)+`"}}`, accept()))
	check("not JSON", "invalid_message", e.post("{", accept()))
	check("no session", "session_required", e.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, accept()))
	check("unknown session", "session_not_found", e.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, accept("Mcp-Session-Id", "session-id-chosen-by-the-client")))
	check("header mismatch", "header_mismatch", e.post(modernBody(1, MethodToolsList, nil, nil), modernHeaders(MethodPromptsList, "")))
	check("modern not acceptable", "not_acceptable", e.post(modernBody(1, MethodToolsList, nil, nil), modernHeaders(MethodToolsList, "", "Accept", "text/plain")))
	sid := e.initSession(nil)
	check("unsupported version", "protocol_version", e.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, accept("Mcp-Session-Id", sid, "MCP-Protocol-Version", "1999-01-01")))
	check("bad Last-Event-ID", "last_event_id", e.do(nil, http.MethodGet, nil, hdr("Accept", "text/event-stream", "Mcp-Session-Id", sid, "Last-Event-ID", "garbage")))
	check("too many sessions", "max_sessions", e.post(initBody, hdr("Accept", acceptBoth)))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	listen := e.do(ctx, http.MethodPost, modernBody(1, MethodSubscriptionsListen, nil, nil), modernHeaders(MethodSubscriptionsListen, ""))
	if _, _, ok := newSSEReader(t, listen.Body).nextMessage(); !ok {
		t.Fatal("listen stream: no acknowledgement")
	}
	if st := e.h.Stats(); st.ListenStreams != 1 || st.Sessions != 1 {
		t.Errorf("Stats: %d listen streams, %d sessions; want 1 and 1", st.ListenStreams, st.Sessions)
	}
	check("too many listen streams", "max_listen_streams", e.post(modernBody(2, MethodSubscriptionsListen, nil, nil), modernHeaders(MethodSubscriptionsListen, "")))
	cancel()
	listen.Body.Close()
	if st := e.h.Stats(); st.Refusals["max_sessions"] != 1 {
		t.Errorf("Refusals[max_sessions] = %d, want 1", st.Refusals["max_sessions"])
	}

	auth := newHTTPEnv(t, newTestServerT(t), &StreamableHTTPOptions{Authenticate: func(*http.Request) (*AuthInfo, *AuthContext, error) {
		return nil, nil, errors.New("bad token")
	}})
	discard(auth.post(ping, accept()))
	if got := auth.h.Stats().Refusals["unauthenticated"]; got != 1 {
		t.Errorf("unauthenticated = %d, want 1", got)
	}

	e.h.Close()
	check("shutting down", "shutting_down", e.post(ping, accept()))
}

// TestHTTPRefusalReasons: every httpRefusal row of http_refusals.go names
// its reason, one of refusalReasonNames (the fixed set the Refusals keys
// come from).
func TestHTTPRefusalReasons(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "http_refusals.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.CompositeLit)
		if !ok {
			return true
		}
		if id, ok := lit.Type.(*ast.Ident); !ok || id.Name != "httpRefusal" {
			return true
		}
		rows++
		for _, el := range lit.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok && kv.Key.(*ast.Ident).Name == "reason" {
				return true
			}
		}
		t.Errorf("an httpRefusal at offset %d has no reason", lit.Pos())
		return true
	})
	if rows < 20 {
		t.Fatalf("found %d httpRefusal rows; the parse is wrong", rows)
	}
	names := slices.Clone(refusalReasonNames[:])
	slices.Sort(names)
	if len(slices.Compact(names)) != len(refusalReasonNames) || slices.Contains(names, "") {
		t.Errorf("reason names are not distinct and non-empty: %q", refusalReasonNames)
	}
}

// TestServerStatsRunningTasks: ServerStats.RunningTasks counts the task
// handlers running in this process.
func TestServerStatsRunningTasks(t *testing.T) {
	srv, err := NewServer(ServerOptions{Tasks: &TaskOptions{InputWindow: -1}})
	if err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}, 1), make(chan struct{})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	if err := AddTool(srv, &Tool{Name: "block", Execution: &ToolExecution{TaskSupport: TaskSupportRequired}}, func(ctx context.Context, _ *RequestHandlerExtra, _ struct{}) (string, error) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return "done", nil
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs := connectOver(t, TransportMemory, srv, NewClient(ClientOptions{Era: EraModern}))
	task, err := cs.CallToolTask(ctx, "block", struct{}{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	recvSignal(t, started, "the task handler")
	if n := srv.Stats().RunningTasks; n != 1 {
		t.Errorf("RunningTasks = %d with one task running, want 1", n)
	}
	close(release)
	if _, err := task.Wait(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// Close waits for the task handlers, which give back their slot.
	_ = srv.Close()
	if n := srv.Stats().RunningTasks; n != 0 {
		t.Errorf("RunningTasks = %d after the task ended, want 0", n)
	}
}
