package pmcp

import (
	"bytes"
	"context"
	stdjson "encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/jsonrpc"
)

func TestDefaultRequestHandlerExtra(t *testing.T) {
	a, b := DefaultRequestHandlerExtra(), DefaultRequestHandlerExtra()
	if !a.RequestID.IsString() || a.RequestID == b.RequestID {
		t.Fatalf("want distinct random string ids, got %v and %v", a.RequestID, b.RequestID)
	}
	if a.IsCancelled() {
		t.Fatal("default extra must never be cancelled")
	}
	select {
	case <-a.Cancelled():
		t.Fatal("Cancelled channel closed")
	default:
	}
	// No sinks: every emitter is a silent no-op.
	if err := a.Log(LevelEmergency, "x"); err != nil {
		t.Fatal(err)
	}
	if err := a.LogWithData(LevelError, "x", 1); err != nil {
		t.Fatal(err)
	}
	if err := a.ReportProgress(1, 2, "m"); err != nil {
		t.Fatal(err)
	}
	if a.Peer != nil {
		t.Fatalf("Peer = %v, want nil: no back-channel outside a server", a.Peer)
	}
	if a.Era() != EraUnknown || a.ProtocolVersion() != "" || a.ClientInfo() != nil || a.ClientCapabilities() != nil {
		t.Fatal("no protocol context expected")
	}
	if a.InputResponses() != nil || a.MRTRContinuation() != nil {
		t.Fatal("no MRTR state expected")
	}
	if _, ok := a.MRTRRound(); ok {
		t.Fatal("no MRTR round expected")
	}
}

func TestCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	e := NewRequestHandlerExtra(ctx, jsonrpc.Int64ID(7))
	if e.IsCancelled() {
		t.Fatal("cancelled too early")
	}
	cancel()
	<-e.Cancelled()
	if !e.IsCancelled() || e.Context().Err() == nil {
		t.Fatal("not cancelled")
	}
}

type recordingSink struct {
	mu   sync.Mutex
	recs []*LoggingMessageParams
}

func (s *recordingSink) Log(r *LoggingMessageParams) {
	s.mu.Lock()
	s.recs = append(s.recs, r)
	s.mu.Unlock()
}

func TestLogLevelFiltering(t *testing.T) {
	tests := []struct {
		name  string
		level LoggingLevel
		emit  LoggingLevel
		want  bool
	}{
		{"default drops debug", LevelUnset, LevelDebug, false},
		{"default keeps info", LevelUnset, LevelInfo, true},
		{"warning drops notice", LevelWarning, LevelNotice, false},
		{"warning keeps warning", LevelWarning, LevelWarning, true},
		{"warning keeps emergency", LevelWarning, LevelEmergency, true},
		{"debug keeps debug", LevelDebug, LevelDebug, true},
		// "critical" < "debug" as strings; the typed order must win.
		{"critical drops debug", LevelCritical, LevelDebug, false},
		{"off drops emergency", LevelOff, LevelEmergency, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := &recordingSink{}
			e := DefaultRequestHandlerExtra()
			e.LogSink, e.LogLevel = sink, tt.level
			if err := e.Log(tt.emit, "hello"); err != nil {
				t.Fatal(err)
			}
			if got := len(sink.recs) == 1; got != tt.want {
				t.Fatalf("delivered=%v want %v", got, tt.want)
			}
		})
	}
}

func TestLogDroppedBeforeBuilding(t *testing.T) {
	e := DefaultRequestHandlerExtra()
	e.LogSink = &recordingSink{}
	e.LogLevel = LevelError
	data := map[string]any{"k": "v"}
	allocs := testing.AllocsPerRun(100, func() { _ = e.LogWithData(LevelDebug, "dropped", data) })
	if allocs != 0 {
		t.Fatalf("a filtered record allocated %v times", allocs)
	}
}

func TestLogWithData(t *testing.T) {
	sink := &recordingSink{}
	e := DefaultRequestHandlerExtra()
	e.LogSink = sink
	_ = e.LogWithData(LevelWarning, "retrying", map[string]any{"attempt": 2})
	b, err := Marshal(sink.recs[0])
	if err != nil {
		t.Fatal(err)
	}
	want := `{"level":"warning","data":{"data":{"attempt":2},"message":"retrying"}}`
	if string(canonicalJSON(b)) != string(canonicalJSON([]byte(want))) {
		t.Fatalf("got %s want %s", b, want)
	}
}

type fakeClock struct{ now time.Time }

func TestProgressReporter(t *testing.T) {
	var mu sync.Mutex
	var sent []float64
	notify := func(ctx context.Context, method string, params any) error {
		mu.Lock()
		sent = append(sent, params.(*ProgressParams).Progress)
		mu.Unlock()
		return nil
	}
	clk := &fakeClock{now: time.Unix(1000, 0)}
	r := newProgressReporter(jsontext.Value(`"tok"`), notify)
	r.now = func() time.Time { return clk.now }
	e := DefaultRequestHandlerExtra()
	e.ProgressReporter = r

	// Non-increasing values are dropped.
	_ = e.ReportProgress(1, 0, "")
	_ = e.ReportProgress(1, 0, "")
	_ = e.ReportProgress(0.5, 0, "")
	if len(sent) != 1 {
		t.Fatalf("non-increasing not dropped: %v", sent)
	}
	// A burst beyond the bucket is rate-limited at the same instant.
	for i := 2; i < 40; i++ {
		_ = e.ReportProgress(float64(i), 100, "")
	}
	if len(sent) != defaultProgressBurst {
		t.Fatalf("burst: sent %d updates, want %d", len(sent), defaultProgressBurst)
	}
	// The final update always goes out.
	_ = e.ReportProgress(100, 100, "done")
	if sent[len(sent)-1] != 100 {
		t.Fatalf("final update not sent: %v", sent)
	}
	// After a second, defaultProgressRate more may go out.
	clk.now = clk.now.Add(time.Second)
	before := len(sent)
	for i := 101; i < 140; i++ {
		_ = e.ReportProgress(float64(i), 0, "")
	}
	if got := len(sent) - before; got != defaultProgressRate {
		t.Fatalf("after 1s: sent %d, want %d", got, defaultProgressRate)
	}
}

func TestProgressHelpers(t *testing.T) {
	var got []Progress
	e := DefaultRequestHandlerExtra()
	e.ProgressReporter = ProgressReporterFunc(func(ctx context.Context, p Progress) error {
		got = append(got, p)
		return nil
	})
	_ = e.ReportPercent(42, "pct")
	_ = e.ReportCount(3, 7, "items")
	if got[0] != (Progress{42, 100, "pct"}) || got[1] != (Progress{3, 7, "items"}) {
		t.Fatalf("got %+v", got)
	}
}

func TestSetResultMeta(t *testing.T) {
	e := DefaultRequestHandlerExtra()
	e.SetResultMeta(map[string]any{"a": 1, "b": 1})
	c := e.Clone() // a clone shares the slot
	c.SetResultMeta(map[string]any{"b": 2, "c": 3})
	base := Meta{"b": 0, "widget": "kept"}
	got := e.mergeResultMeta(base, nil)
	want := Meta{"a": 1, "b": 2, "c": 3, "widget": "kept"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v want %v", got, want)
	}
	if fmt.Sprint(base) != fmt.Sprint(Meta{"b": 0, "widget": "kept"}) {
		t.Fatalf("the result's own _meta was written: %v", base)
	}
}

func TestTraceContext(t *testing.T) {
	valid := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tests := []struct {
		name string
		meta string
		ok   bool
	}{
		{"valid", `{"traceparent":"` + valid + `","tracestate":"a=b","baggage":"k=v"}`, true},
		{"no meta", ``, false},
		{"missing", `{"tracestate":"a=b"}`, false},
		{"uppercase", `{"traceparent":"` + strings.ToUpper(valid) + `"}`, false},
		{"zero trace id", `{"traceparent":"00-00000000000000000000000000000000-00f067aa0ba902b7-01"}`, false},
		{"version ff", `{"traceparent":"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`, false},
		{"too long", `{"traceparent":"` + valid + strings.Repeat("x", MaxTraceValueLen) + `"}`, false},
		{"not a string", `{"traceparent":1}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := DefaultRequestHandlerExtra()
			if tt.meta != "" {
				e.RequestMeta = jsontext.Value(tt.meta)
			}
			tc, ok := e.TraceContext()
			if ok != tt.ok {
				t.Fatalf("ok=%v want %v", ok, tt.ok)
			}
			if ok && (tc.TraceParent != valid || tc.TraceState != "a=b" || tc.Baggage != "k=v") {
				t.Fatalf("got %+v", tc)
			}
		})
	}
	// Oversized tracestate is dropped, traceparent kept.
	e := DefaultRequestHandlerExtra()
	e.RequestMeta = jsontext.Value(`{"traceparent":"` + valid + `","tracestate":"` + strings.Repeat("a", MaxTraceValueLen+1) + `"}`)
	if tc, ok := e.TraceContext(); !ok || tc.TraceState != "" {
		t.Fatalf("oversized tracestate kept: %v %v", ok, len(tc.TraceState))
	}
}

type secretThing struct{ password string }

func TestExtensionsPrintTypeNamesOnly(t *testing.T) {
	e := DefaultRequestHandlerExtra()
	SetExtension(&e.Extensions, secretThing{password: "hunter2"})
	SetExtension(&e.Extensions, uint64(987654321))
	if v, ok := GetExtension[uint64](&e.Extensions); !ok || v != 987654321 {
		t.Fatalf("get: %v %v", v, ok)
	}
	if _, ok := GetExtension[string](&e.Extensions); ok {
		t.Fatal("string not stored")
	}
	for _, s := range []string{e.Extensions.String(), fmt.Sprintf("%v %+v %#v", e.Extensions, e.Extensions, e.Extensions), fmt.Sprint(e)} {
		if strings.Contains(s, "hunter2") || strings.Contains(s, "987654321") {
			t.Fatalf("extension value printed: %s", s)
		}
	}
	if !strings.Contains(e.Extensions.String(), "pmcp.secretThing") {
		t.Fatalf("type name missing: %s", e.Extensions.String())
	}
	RemoveExtension[uint64](&e.Extensions)
	if e.Extensions.Len() != 1 {
		t.Fatal("remove failed")
	}
}

func TestRedaction(t *testing.T) {
	const tok = "sk-live-verysecret"
	e := DefaultRequestHandlerExtra()
	e.SetMetadata("oauth_token", tok)
	e.SetMetadata("X-Api-Key", tok)
	e.SetMetadata("tenant", "acme")
	// Secret by type under a key that names nothing sensitive.
	e.SetSecretMetadata("note", Secret(tok))
	e.AuthInfo = &AuthInfo{Token: Secret(tok), ClientID: "c1", Extra: Attributes{"hint": Secret(tok)}}
	e.AuthContext = &AuthContext{Subject: "alice", Token: Secret(tok), Claims: Attributes{"note": Secret(tok), "md": e.Metadata}}
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	logger.Info("extra", "extra", e, "meta", e.Metadata, "auth", e.AuthInfo, "token", e.AuthInfo.Token)
	forms := []string{
		e.String(), fmt.Sprint(e), fmt.Sprintf("%v", e), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e),
		fmt.Sprintf("%v %+v %#v %s %q", e.Metadata, e.Metadata, e.Metadata, e.Metadata, e.Metadata),
		fmt.Sprintf("%v %+v %#v", e.AuthInfo, e.AuthInfo, *e.AuthInfo),
		fmt.Sprintf("%v %+v %#v", e.AuthContext, e.AuthContext, *e.AuthContext),
		fmt.Sprintf("%v %s %q %#v %x", e.AuthInfo.Token, e.AuthInfo.Token, e.AuthInfo.Token, e.AuthInfo.Token, e.AuthInfo.Token),
		buf.String(),
		fmt.Sprintf("%v %+v %#v %q %x", e.AuthContext.Claims, e.AuthContext.Claims, e.AuthContext.Claims, e.AuthContext.Claims, e.AuthContext.Claims),
	}
	for _, v := range []any{e, e.Metadata, e.AuthInfo, e.AuthContext, e.AuthContext.Claims} {
		b1, err := stdjson.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		b2, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		forms = append(forms, string(b1), string(b2))
	}
	for i, s := range forms {
		if strings.Contains(s, tok) || strings.Contains(s, fmt.Sprintf("%x", tok)) {
			t.Fatalf("form %d leaks the token: %s", i, s)
		}
	}
	if !strings.Contains(e.Metadata.String(), "tenant:acme") {
		t.Fatalf("non-sensitive value hidden: %s", e.Metadata)
	}
	if v, _ := e.GetMetadata("oauth_token"); v != tok {
		t.Fatal("GetMetadata must return the real value")
	}
	if v, ok := e.GetMetadata("note"); ok || v != "" {
		t.Fatalf("GetMetadata returned a secret value as a string: %q", v)
	}
	if s, ok := e.GetSecretMetadata("note"); !ok || s.Reveal() != tok {
		t.Fatal("GetSecretMetadata().Reveal() must return the real value")
	}
}

func TestIsTaskRequest(t *testing.T) {
	e := DefaultRequestHandlerExtra()
	if e.IsTaskRequest() {
		t.Fatal("no task")
	}
	e.TaskRequest = jsontext.Value(`{"ttl":1000}`)
	if !e.IsTaskRequest() {
		t.Fatal("task expected")
	}
}

func TestClientCapabilitiesNeverFabricated(t *testing.T) {
	e := DefaultRequestHandlerExtra()
	e.ProtocolContext = &ProtocolContext{Era: EraModern, ProtocolVersion: Version20260728}
	if e.ClientCapabilities() != nil || e.ClientInfo() != nil {
		t.Fatal("absent signals must read as nil")
	}
	if e.Era() != EraModern || e.ProtocolVersion() != Version20260728 {
		t.Fatal("era/version")
	}
}

// TestExtraMarshalsItsLogView checks that json.Marshal of the extra, with
// encoding/json or json v2, prints the same redacted view as its log form:
// the request id as its JSON value, never an empty object, and no raw
// sinks, peers or _meta bytes.
func TestExtraMarshalsItsLogView(t *testing.T) {
	e := DefaultRequestHandlerExtra()
	e.RequestID = jsonrpc.StringID("req-7")
	e.SessionID = "s1"
	e.ProtocolContext = &ProtocolContext{Era: EraModern, ProtocolVersion: Version20260728}
	e.AuthContext = &AuthContext{Subject: "alice", Token: Secret("sk-live")}
	e.RequestMeta = jsontext.Value(`{"k":"v"}`)
	e.SetMetadata("tenant", "acme")
	e.LogSink = LogSinkFunc(func(*LoggingMessageParams) {})
	const want = `{"id":"req-7","session":"s1","era":"modern","version":"` + Version20260728 + `","subject":"alice","metadata":{"tenant":"acme"},"logLevel":"info","progress":false,"logSink":true,"peer":false,"task":false}`
	b1, err := stdjson.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	b2, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range []string{string(b1), string(b2)} {
		if got != want {
			t.Fatalf("marshalled extra\n got %s\nwant %s", got, want)
		}
	}
	e.RequestID = jsonrpc.Int64ID(3)
	if b, _ := stdjson.Marshal(e.RequestID); string(b) != "3" {
		t.Fatalf("encoding/json of an ID: %s", b)
	}
}
