package auth

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/internal/benchkit"
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
			benchkit.PerOp(b, func() {
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
			benchkit.PerOp(b, func() {
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
	benchkit.PerOp(b, func() {
		if _, err := v.VerifyToken(context.Background(), tok); err != nil {
			b.Fatal(err)
		}
	})
}

// benchCall replays one request on a handler, reusing the request, its
// body and the response writer.
type benchCall struct {
	h    http.Handler
	r    *http.Request
	body *benchkit.Body
	data []byte
	w    *benchkit.ResponseWriter
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
	c := &benchCall{h: h, r: r, body: new(benchkit.Body), data: []byte(data), w: benchkit.NewResponseWriter()}
	r.Body = c.body
	return c
}

func (c *benchCall) serve() {
	c.w.Reset()
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
		sid := init.w.H.Get("Mcp-Session-Id")
		if init.w.Status != http.StatusOK || sid == "" {
			b.Fatalf("initialize: %d %s", init.w.Status, init.w.Body)
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
				benchkit.PerOp(b, c.call.serve)
				if c.call.w.Status != http.StatusOK || !strings.Contains(string(c.call.w.Body), `"text":"hello"`) {
					b.Fatalf("status %d: %s", c.call.w.Status, c.call.w.Body)
				}
			})
		}
		h.Close()
	}
}
