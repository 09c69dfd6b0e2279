package pmcp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/gopmcp/pmcp/transport/stdio"
)

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a
// handler's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// accessRecords returns the access records written to buf as JSON.
func accessRecords(t *testing.T, buf *syncBuffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] == "mcp request" {
			out = append(out, m)
		}
	}
	return out
}

func recordFor(t *testing.T, recs []map[string]any, method, id string) map[string]any {
	t.Helper()
	for _, r := range recs {
		if r["method"] == method && r["id"] == id {
			return r
		}
	}
	t.Fatalf("no access record for %s id %s in %v", method, id, recs)
	return nil
}

const (
	secretArg   = "hunter2-secret-argument"
	secretToken = "sk-live-bearer-value"
)

func newAccessLogServer(t *testing.T, buf *syncBuffer, opts ServerOptions) *Server {
	t.Helper()
	opts.Logger = slog.New(slog.NewJSONHandler(buf, nil))
	srv := newTestServer(t, opts)
	if err := AddTool(srv, &Tool{Name: "echo"}, func(ctx context.Context, e *RequestHandlerExtra, in struct {
		Text string `json:"text"`
	}) (string, error) {
		e.SetMetadata("note", in.Text) // Metadata values never reach the log
		return in.Text, nil
	}); err != nil {
		t.Fatal(err)
	}
	return srv
}

// TestAccessLogHTTP: one Info record per request with every field, in both
// eras, and no argument, token or Authorization value anywhere in the log.
func TestAccessLogHTTP(t *testing.T) {
	var buf syncBuffer
	srv := newAccessLogServer(t, &buf, ServerOptions{})
	e := newHTTPEnv(t, srv, &StreamableHTTPOptions{
		JSONResponse: true,
		Authenticate: func(r *http.Request) (*AuthInfo, *AuthContext, error) {
			if r.Header.Get("Authorization") != "Bearer "+secretToken {
				return nil, nil, errors.New("no")
			}
			return &AuthInfo{Token: Secret(secretToken), ClientID: "cli"}, &AuthContext{Subject: "alice", Token: Secret(secretToken)}, nil
		},
	})
	auth := "Bearer " + secretToken
	sid := e.initSession(hdr("Authorization", auth))
	legacyHdr := hdr("Accept", "application/json", "Mcp-Session-Id", sid, "MCP-Protocol-Version", Version20251125, "Authorization", auth)
	_, legacyBody := body(t, e.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`+secretArg+`"}}}`, legacyHdr))
	_, _ = body(t, e.post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fail"}}`, legacyHdr))
	_, _ = body(t, e.post(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nosuch"}}`, legacyHdr))
	_, modernBodyBytes := body(t, e.post(modernBody(5, MethodToolsCall, map[string]any{"name": "echo", "arguments": map[string]any{"text": secretArg}}, nil),
		modernHeaders(MethodToolsCall, "echo", "Accept", "application/json", "Authorization", auth)))

	recs := accessRecords(t, &buf)
	legacy := recordFor(t, recs, MethodToolsCall, "2")
	want := map[string]any{
		"level": "INFO", "name": "echo", "era": "legacy", "protocol_version": Version20251125,
		"session": sid, "transport": TransportHTTP, "outcome": "ok",
		"response_bytes": float64(len(legacyBody)), "principal": "alice",
	}
	for k, v := range want {
		if legacy[k] != v {
			t.Errorf("legacy record %s = %v, want %v (%v)", k, legacy[k], v, legacy)
		}
	}
	if d, ok := legacy["duration"].(float64); !ok || d <= 0 {
		t.Errorf("legacy duration %v", legacy["duration"])
	}
	modernRec := recordFor(t, recs, MethodToolsCall, "5")
	want = map[string]any{
		"name": "echo", "era": "modern", "protocol_version": Version20260728, "transport": TransportHTTP,
		"outcome": "ok", "response_bytes": float64(len(modernBodyBytes)), "principal": "alice",
	}
	for k, v := range want {
		if modernRec[k] != v {
			t.Errorf("modern record %s = %v, want %v (%v)", k, modernRec[k], v, modernRec)
		}
	}
	if _, ok := modernRec["session"]; ok {
		t.Errorf("modern record has a session: %v", modernRec)
	}
	if r := recordFor(t, recs, MethodToolsCall, "3"); r["outcome"] != "tool_error" {
		t.Errorf("tool error record %v", r)
	}
	if r := recordFor(t, recs, MethodToolsCall, "4"); r["outcome"] != "error" || r["code"] != float64(-32602) {
		t.Errorf("unknown tool record %v", r)
	}
	if r := recordFor(t, recs, MethodInitialize, "1"); r["protocol_version"] != Version20251125 || r["era"] != "legacy" {
		t.Errorf("initialize record %v", r)
	}
	log := buf.String()
	for _, secret := range []string{secretArg, secretToken} {
		if strings.Contains(log, secret) {
			t.Fatalf("the log holds %q:\n%s", secret, log)
		}
	}
}

// TestAccessLogStdio: over stdio the record counts the bytes of the
// response line (without its newline).
func TestAccessLogStdio(t *testing.T) {
	var buf syncBuffer
	srv := newAccessLogServer(t, &buf, ServerOptions{})
	toSrvR, toSrvW := io.Pipe()
	fromSrvR, fromSrvW := io.Pipe()
	st := stdio.NewStream(toSrvR, fromSrvW, stdio.Options{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(context.Background(), st)
	}()
	defer func() {
		_ = toSrvW.Close()
		<-done
	}()
	rd := bufio.NewReader(fromSrvR)
	line := func(msg string) string {
		t.Helper()
		if _, err := io.WriteString(toSrvW, msg+"\n"); err != nil {
			t.Fatal(err)
		}
		l, err := rd.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSuffix(l, "\n")
	}
	modern := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + secretArg + `"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	resp := line(modern)
	rec := recordFor(t, accessRecords(t, &buf), MethodToolsCall, "9")
	if rec["response_bytes"] != float64(len(resp)) || rec["transport"] != TransportStdio || rec["era"] != "modern" {
		t.Fatalf("record %v for response of %d bytes", rec, len(resp))
	}
	if _, ok := rec["principal"]; ok {
		t.Fatalf("principal without auth: %v", rec)
	}
	if strings.Contains(buf.String(), secretArg) {
		t.Fatal("argument logged")
	}
	if !strings.Contains(resp, secretArg) {
		t.Fatalf("response %s", resp) // the log step must not change the reply
	}
}

// TestAccessLogOff: DisableAccessLog, a Logger above Info, and no Logger
// write no records.
func TestAccessLogOff(t *testing.T) {
	for i, opts := range []ServerOptions{{DisableAccessLog: true}, {}} {
		var buf syncBuffer
		srv := newAccessLogServer(t, &buf, opts)
		if i == 1 {
			srv.logger = slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
		}
		c := startServer(t, srv, nil)
		c.mustCall(MethodToolsCall, modern(map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}}, nil, nil))
		if recs := accessRecords(t, &buf); len(recs) != 0 {
			t.Fatalf("case %d: records %v", i, recs)
		}
	}
	if srv, _ := NewServer(ServerOptions{}); srv.accessLog {
		t.Fatal("access log on without a Logger")
	}
}

// TestAccessLogHTTPStreams: requests answered on SSE streams (legacy) and
// through the modern stream path are logged too.
func TestAccessLogHTTPStreams(t *testing.T) {
	var buf syncBuffer
	srv := newAccessLogServer(t, &buf, ServerOptions{})
	e := newHTTPEnv(t, srv, nil)
	sid := e.initSession(nil)
	resp := e.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"work"}}`,
		hdr("Accept", acceptBoth, "Mcp-Session-Id", sid, "MCP-Protocol-Version", Version20251125))
	_, sse := body(t, resp)
	resp = e.post(modernBody(3, MethodToolsCall, map[string]any{"name": "work"}, nil), modernHeaders(MethodToolsCall, "work"))
	_, _ = body(t, resp)
	recs := accessRecords(t, &buf)
	legacy := recordFor(t, recs, MethodToolsCall, "2")
	if n, _ := legacy["response_bytes"].(float64); n <= 0 || !strings.Contains(string(sse), `"id":2`) || legacy["session"] != sid {
		t.Fatalf("legacy SSE record %v", legacy)
	}
	if r := recordFor(t, recs, MethodToolsCall, "3"); r["era"] != "modern" || r["outcome"] != "ok" {
		t.Fatalf("modern stream record %v", r)
	}
}

// TestNotificationMiddlewarePanicContained: a panicking notification
// middleware is logged and the connection keeps serving.
func TestNotificationMiddlewarePanicContained(t *testing.T) {
	nmw := func(next NotificationHandler) NotificationHandler {
		return func(ctx context.Context, n *Notification) error { panic("notification middleware bug") }
	}
	var buf syncBuffer
	srv := newAccessLogServer(t, &buf, ServerOptions{NotificationMiddleware: []NotificationMiddleware{nmw}})
	c := startServer(t, srv, nil)
	c.initialize(nil) // sends notifications/initialized
	c.mustCall(MethodToolsList, nil)
	if !strings.Contains(buf.String(), "notification middleware panicked") {
		t.Fatalf("panic not logged: %s", buf.String())
	}
}
