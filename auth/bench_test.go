package auth

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/internal/benchcpu"
)

// BenchmarkAuthenticateJWT is the per-request cost of a JWT bearer token
// with a warm JWKS cache (the same token each time, so after the first
// request it is a hit of the verified-token cache). The request is built
// once, as net/http hands the handler a parsed one.
func BenchmarkAuthenticateJWT(b *testing.B) {
	for _, kid := range []string{"ec1", "rsa1", "ed1"} {
		b.Run(kid, func(b *testing.B) {
			as := newTestAS(b)
			v := as.newVerifier(b, nil)
			a := newTestAuthenticator(b, v, nil)
			tok := as.sign(kid, claims(), nil)
			if _, err := v.VerifyToken(context.Background(), tok); err != nil {
				b.Fatal(err)
			}
			r := bearerRequest(tok)
			b.ReportAllocs()
			benchcpu.PerOp(b, func() {
				if _, _, err := a.Authenticate(r); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkAuthenticateJWTUncached is the same with the verified-token
// cache off: every request verifies the signature (each token is new).
func BenchmarkAuthenticateJWTUncached(b *testing.B) {
	for _, kid := range []string{"ec1", "rsa1", "ed1"} {
		b.Run(kid, func(b *testing.B) {
			as := newTestAS(b)
			v := as.newVerifier(b, func(o *JWTOptions) { o.VerifiedTokenCacheSize = -1 })
			a := newTestAuthenticator(b, v, nil)
			tok := as.sign(kid, claims(), nil)
			if _, err := v.VerifyToken(context.Background(), tok); err != nil {
				b.Fatal(err)
			}
			r := bearerRequest(tok)
			b.ReportAllocs()
			benchcpu.PerOp(b, func() {
				if _, _, err := a.Authenticate(r); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkVerifyJWTHit is the verifier alone on a remembered token (no
// request to build or parse): the cost of a verified-token cache hit.
func BenchmarkVerifyJWTHit(b *testing.B) {
	as := newTestAS(b)
	v := as.newVerifier(b, nil)
	tok := as.sign("ec1", claims(), nil)
	if _, err := v.VerifyToken(context.Background(), tok); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	benchcpu.PerOp(b, func() {
		if _, err := v.VerifyToken(context.Background(), tok); err != nil {
			b.Fatal(err)
		}
	})
}

// benchRW is a reusable http.ResponseWriter with the deadline and flush
// methods of a real connection (so http.ResponseController works).
type benchRW struct {
	h      http.Header
	status int
	body   []byte
}

func (w *benchRW) Header() http.Header { return w.h }
func (w *benchRW) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *benchRW) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.body = append(w.body, p...)
	return len(p), nil
}
func (w *benchRW) SetReadDeadline(time.Time) error  { return nil }
func (w *benchRW) SetWriteDeadline(time.Time) error { return nil }
func (w *benchRW) FlushError() error                { return nil }

type benchBody struct{ bytes.Reader }

func (*benchBody) Close() error { return nil }

// benchCall replays one request on a handler, reusing the request, its
// body and the response writer.
type benchCall struct {
	h    http.Handler
	r    *http.Request
	body *benchBody
	data []byte
	w    *benchRW
}

func newBenchCall(tb testing.TB, h http.Handler, data string, hdr http.Header) *benchCall {
	tb.Helper()
	r, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:8080/mcp", nil)
	if err != nil {
		tb.Fatal(err)
	}
	r.Header = hdr
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	c := &benchCall{h: h, r: r, body: new(benchBody), data: []byte(data), w: &benchRW{h: http.Header{}}}
	r.Body = c.body
	return c
}

func (c *benchCall) serve() {
	clear(c.w.h)
	c.w.status, c.w.body = 0, c.w.body[:0]
	c.body.Reset(c.data)
	c.r.ContentLength = int64(len(c.data))
	c.h.ServeHTTP(c.w, c.r)
}

const (
	benchInitialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`
	benchEchoLegacy = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`
	benchEchoModern = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}}}`
)

// BenchmarkHTTPToolsCallJWT is a Streamable HTTP tools/call (JSON
// responses, as in bench/) without authentication ("plain") and with this
// package's Authenticator and an ES256 JWT ("jwt", the verified-token
// cache on and warm): the in-process counterpart of the jwt row of the
// bench features leg.
func BenchmarkHTTPToolsCallJWT(b *testing.B) {
	as := newTestAS(b)
	tok := as.sign("ec1", claims(), nil)
	for _, mode := range []string{"plain", "jwt"} {
		srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "bench", Version: "1"})
		if err != nil {
			b.Fatal(err)
		}
		type echoIn struct {
			Text string `json:"text"`
		}
		if err := pmcp.AddTool(srv, &pmcp.Tool{Name: "echo"}, func(_ context.Context, _ *pmcp.RequestHandlerExtra, in echoIn) (string, error) {
			return in.Text, nil
		}); err != nil {
			b.Fatal(err)
		}
		opts := pmcp.StreamableHTTPOptions{JSONResponse: true}
		hdr := func() http.Header { return http.Header{} }
		if mode == "jwt" {
			opts.Authenticate = newTestAuthenticator(b, as.newVerifier(b, nil), nil).Authenticate
			hdr = func() http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }
		}
		h := pmcp.NewStreamableHTTPHandler(srv, opts)
		init := newBenchCall(b, h, benchInitialize, hdr())
		init.serve()
		sid := init.w.h.Get("Mcp-Session-Id")
		if init.w.status != http.StatusOK || sid == "" {
			b.Fatalf("initialize: %d %s", init.w.status, init.w.body)
		}
		lh, mh := hdr(), hdr()
		lh.Set("Mcp-Session-Id", sid)
		lh.Set("Mcp-Protocol-Version", "2025-11-25")
		mh.Set("Mcp-Protocol-Version", "2026-07-28")
		mh.Set("Mcp-Method", "tools/call")
		mh.Set("Mcp-Name", "echo")
		for _, c := range []struct {
			era  string
			call *benchCall
		}{{"legacy", newBenchCall(b, h, benchEchoLegacy, lh)}, {"modern", newBenchCall(b, h, benchEchoModern, mh)}} {
			b.Run(mode+"/"+c.era, func(b *testing.B) {
				b.ReportAllocs()
				benchcpu.PerOp(b, c.call.serve)
				if c.call.w.status != http.StatusOK || !strings.Contains(string(c.call.w.body), `"text":"hello"`) {
					b.Fatalf("status %d: %s", c.call.w.status, c.call.w.body)
				}
			})
		}
		h.Close()
	}
}
