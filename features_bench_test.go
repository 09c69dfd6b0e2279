package pmcp

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gopmcp/pmcp/internal/benchkit"
)

// The benchmarks of this file measure what the optional features of the
// bench/ features leg add to a Streamable HTTP tools/call, in process:
// the access log (a JSON slog handler at Info writing to io.Discard) and a
// bearer token checked by an Authenticate hook (the pmcp side of it: the
// hook here does no cryptography; auth/ measures its JWT verifier on the
// same handler). Compare each with "plain" of the same run:
//
//	go test -run XXX -bench 'HTTPToolsCallFeatures|AccessLogRecord' -count=6

// benchBearer is a bearer token of the size of the bench's ES256 JWT.
var benchBearer = "eyJhbGciOiJFUzI1NiJ9." + strings.Repeat("x", 280) + ".sig"

// benchAuthenticate is an Authenticate hook that accepts benchBearer and
// returns what the auth package returns for a token with a subject.
func benchAuthenticate(r *http.Request) (*AuthInfo, *AuthContext, error) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok != benchBearer {
		return nil, nil, &AuthError{}
	}
	secret := Secret(tok)
	scopes := []string{"mcp:tools"}
	return &AuthInfo{Token: secret, ClientID: "bench-load", Scopes: scopes},
		&AuthContext{Subject: "bench-user", ClientID: "bench-load", Scopes: scopes, Token: secret}, nil
}

func discardJSONLogger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// benchFeatures are the configurations of the features leg.
func benchFeatures() []struct {
	name  string
	sopts ServerOptions
	hopts StreamableHTTPOptions
	hdr   http.Header
} {
	return []struct {
		name  string
		sopts ServerOptions
		hopts StreamableHTTPOptions
		hdr   http.Header
	}{
		{name: "plain"},
		{name: "accesslog", sopts: ServerOptions{Logger: discardJSONLogger()}},
		{name: "bearer", hopts: StreamableHTTPOptions{Authenticate: benchAuthenticate}, hdr: http.Header{"Authorization": {"Bearer " + benchBearer}}},
	}
}

// BenchmarkHTTPToolsCallFeatures is BenchmarkHTTPToolsCall with each
// feature of the bench features leg on.
func BenchmarkHTTPToolsCallFeatures(b *testing.B) {
	for _, f := range benchFeatures() {
		h, legacy, modern := newBenchHTTPWith(b, f.sopts, f.hopts, f.hdr)
		for _, c := range []struct {
			name string
			hb   *httpBench
		}{{"legacy", legacy}, {"modern", modern}} {
			b.Run(f.name+"/"+c.name, func(b *testing.B) {
				b.ReportAllocs()
				benchkit.PerOp(b, c.hb.serve)
				if c.hb.w.Status != http.StatusOK || !isEchoResult(c.hb.w.Body) {
					b.Fatalf("status %d: %s", c.hb.w.Status, c.hb.w.Body)
				}
			})
		}
		h.Close()
	}
}

// accessLogFixture is the state of a legacy HTTP tools/call as the
// transport hands it to logAccess after encoding the response: every
// field of the record is present (name, era, version, id, session,
// transport, duration, outcome, size, principal).
func accessLogFixture(tb testing.TB, logger *slog.Logger) (*Server, func()) {
	tb.Helper()
	s := newBenchServerWith(tb, ServerOptions{Logger: logger})
	req := mustDecodeRequest(tb, benchEchoLegacy)
	hreq, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:8080/mcp", nil)
	if err != nil {
		tb.Fatal(err)
	}
	rs := new(reqState)
	rs.params.scan(req.Params)
	rs.env.httpReq = hreq
	rs.env.sessionID = "8c5bd1f0e3a54b7c9d2e6f10a3b4c5d6"
	rs.env.authInfo, rs.env.authCtx, _ = benchAuthenticate(&http.Request{Header: http.Header{"Authorization": {"Bearer " + benchBearer}}})
	rs.pc = ProtocolContext{Era: EraLegacy, ProtocolVersion: Version20251125}
	rs.extra.ProtocolContext = &rs.pc
	rs.accessStart = time.Now()
	res := textResult("hello")
	ctx := context.Background()
	return s, func() { s.logAccess(ctx, req, rs, res, nil, 79) }
}

// BenchmarkAccessLogRecord is the access record alone (logAccess): the
// attributes, the slog record and the JSON handler formatting it.
func BenchmarkAccessLogRecord(b *testing.B) {
	_, record := accessLogFixture(b, discardJSONLogger())
	b.ReportAllocs()
	benchkit.PerOp(b, record)
}

// BenchmarkAccessLogRecordEra is the access record alone as the bench
// features leg's server writes it for each era's tools/call of echo over
// Streamable HTTP: legacy with its session and the negotiated version,
// modern with its _meta version and no session; no principal (the leg's
// accesslog server has no auth). The modern record has one attribute
// fewer and no session string to escape, so it must not cost more.
func BenchmarkAccessLogRecordEra(b *testing.B) {
	for _, era := range []struct {
		name    string
		body    string
		pc      ProtocolContext
		session string
	}{
		{"legacy", benchEchoLegacy, ProtocolContext{Era: EraLegacy, ProtocolVersion: Version20251125}, newSessionID()},
		{"modern", benchEchoModern, ProtocolContext{Era: EraModern, ProtocolVersion: Version20260728}, ""},
	} {
		b.Run(era.name, func(b *testing.B) {
			s := newBenchServerWith(b, ServerOptions{Logger: discardJSONLogger()})
			req := mustDecodeRequest(b, era.body)
			hreq, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:8080/mcp", nil)
			if err != nil {
				b.Fatal(err)
			}
			rs := new(reqState)
			rs.params.scan(req.Params)
			rs.env.httpReq = hreq
			rs.env.sessionID = era.session
			rs.pc = era.pc
			rs.extra.ProtocolContext = &rs.pc
			rs.accessStart = time.Now()
			res := textResult("hello")
			ctx := context.Background()
			b.ReportAllocs()
			benchkit.PerOp(b, func() { s.logAccess(ctx, req, rs, res, nil, 79) })
		})
	}
}
