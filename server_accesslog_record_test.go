package pmcp

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// recordOutput returns the access record that the fixture of
// accessLogFixture writes through a JSON handler with opts, with its time
// and duration replaced by fixed values so that it can be compared.
func recordOutput(t *testing.T, opts slog.HandlerOptions, mod func(req *jsonrpc.Request, rs *reqState) (res any, err error)) string {
	t.Helper()
	var buf bytes.Buffer
	opts.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
		switch a.Key {
		case slog.TimeKey:
			if a.Value.Kind() != slog.KindTime || a.Value.Time().IsZero() {
				t.Errorf("record time %v", a.Value)
			}
			return slog.String(slog.TimeKey, "T")
		case "duration":
			if a.Value.Kind() != slog.KindDuration || a.Value.Duration() < 0 {
				t.Errorf("duration %v", a.Value)
			}
			return slog.String("duration", "D")
		}
		return a
	}
	s := newBenchServerWith(t, ServerOptions{Logger: slog.New(slog.NewJSONHandler(&buf, &opts))})
	req := mustDecodeRequest(t, benchEchoLegacy)
	rs := new(reqState)
	rs.params.scan(req.Params)
	rs.env.httpReq = httptestRequest(t)
	rs.env.sessionID = "sess-1"
	rs.env.authInfo, rs.env.authCtx, _ = benchAuthenticate(&http.Request{Header: http.Header{"Authorization": {"Bearer " + benchBearer}}})
	rs.pc = ProtocolContext{Era: EraLegacy, ProtocolVersion: Version20251125}
	rs.extra.ProtocolContext = &rs.pc
	rs.accessStart = time.Now()
	var res any = textResult("hello")
	var err error
	if mod != nil {
		res, err = mod(req, rs)
	}
	s.logAccess(context.Background(), req, rs, res, err, 79)
	return strings.TrimSuffix(buf.String(), "\n")
}

func httptestRequest(t *testing.T) *http.Request {
	t.Helper()
	r, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:8080/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestAccessLogRecordFields: the exact record, every field in its order
// and with its JSON type (the id a string, the code and size numbers), for
// a success, a tool error and a JSON-RPC error; no token anywhere.
func TestAccessLogRecordFields(t *testing.T) {
	const head = `{"time":"T","level":"INFO","msg":"mcp request","method":"tools/call","name":"echo","era":"legacy","protocol_version":"2025-11-25",`
	for _, c := range []struct {
		name string
		mod  func(req *jsonrpc.Request, rs *reqState) (any, error)
		want string
	}{
		{"ok", nil, head + `"id":"1","session":"sess-1","transport":"http","duration":"D","outcome":"ok","response_bytes":79,"principal":"bench-user"}`},
		{"tool error", func(*jsonrpc.Request, *reqState) (any, error) {
			return &CallToolResult{IsError: true, Content: []Content{&TextContent{Text: "no"}}}, nil
		}, head + `"id":"1","session":"sess-1","transport":"http","duration":"D","outcome":"tool_error","response_bytes":79,"principal":"bench-user"}`},
		{"rpc error, string id, no session, no auth", func(req *jsonrpc.Request, rs *reqState) (any, error) {
			req.ID = jsonrpc.StringID(`a"b`)
			rs.env.sessionID, rs.env.authInfo, rs.env.authCtx = "", nil, nil
			return nil, invalidParams("secret detail")
		}, head + `"id":"\"a\\\"b\"","transport":"http","duration":"D","outcome":"error","code":-32602,"response_bytes":79}`},
	} {
		got := recordOutput(t, slog.HandlerOptions{}, c.mod)
		if got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
		if strings.Contains(got, benchBearer) || strings.Contains(got, "secret detail") {
			t.Errorf("%s: the record holds the token or the error message: %s", c.name, got)
		}
	}
}

// TestAccessLogRecordNoSource: an access record carries no source
// location, even for a handler with AddSource (its PC is zero: it would
// always name pmcp's own logging function).
func TestAccessLogRecordNoSource(t *testing.T) {
	got := recordOutput(t, slog.HandlerOptions{AddSource: true}, nil)
	if strings.Contains(got, `"source"`) || !strings.Contains(got, `"outcome":"ok"`) {
		t.Fatalf("record %s", got)
	}
}

// TestAccessLogLevelRaised: a level raised above Info while a request
// runs suppresses its record (the level is checked again when logging).
func TestAccessLogLevelRaised(t *testing.T) {
	var buf syncBuffer
	level := new(slog.LevelVar)
	srv := newBenchServerWith(t, ServerOptions{Logger: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: level}))})
	req := mustDecodeRequest(t, benchEchoLegacy)
	rs := new(reqState)
	rs.accessStart = time.Now() // the access log was on when the request began
	level.Set(slog.LevelWarn)
	srv.logAccess(context.Background(), req, rs, textResult("x"), nil, 1)
	if buf.String() != "" {
		t.Fatalf("record written above Info: %s", buf.String())
	}
	level.Set(slog.LevelInfo)
	srv.logAccess(context.Background(), req, rs, textResult("x"), nil, 1)
	if recs := accessRecords(t, &buf); len(recs) != 1 {
		t.Fatalf("records %v", recs)
	}
}

// errHandler is a slog handler whose Handle fails.
type errHandler struct{ slog.Handler }

func (errHandler) Handle(context.Context, slog.Record) error { return errors.New("disk full") }

// TestAccessLogHandlerError: a handler's error does not reach the
// request (as with Logger.LogAttrs, it is dropped).
func TestAccessLogHandlerError(t *testing.T) {
	logger := slog.New(errHandler{slog.NewJSONHandler(&bytes.Buffer{}, nil)})
	h, legacy, _ := newBenchHTTPWith(t, ServerOptions{Logger: logger}, StreamableHTTPOptions{}, nil)
	defer h.Close()
	legacy.serve()
	if legacy.w.Status != http.StatusOK || !isEchoResult(legacy.w.Body) {
		t.Fatalf("status %d: %s", legacy.w.Status, legacy.w.Body)
	}
}
