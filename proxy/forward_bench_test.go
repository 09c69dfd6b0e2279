package proxy

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/gopmcp/pmcp"
)

// forwardRig is one tools/call forwarded HTTP → HTTP on loopback, as
// `pmcp gateway` serves it: a downstream Streamable HTTP handler on the
// proxy's server, one HTTP upstream (a pmcp server with an echo tool),
// AnswerUnknown as the gateway sets it. call sends one raw request and
// returns the response body.
type forwardRig struct {
	url    string
	client *http.Client
	sid    string
	body   []byte
	hdr    [][2]string
}

const (
	fwdEchoLegacy = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up_echo","arguments":{"text":"hello"}}}`
	fwdEchoModern = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up_echo","arguments":{"text":"hello"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}}}`
	fwdInitialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`
)

func newForwardRig(t testing.TB, era pmcp.Era) *forwardRig {
	t.Helper()
	return newHopRig(t, era, "proxy")
}

func (r *forwardRig) post(t testing.TB, body []byte, hdr [][2]string) *http.Response {
	req, err := http.NewRequest(http.MethodPost, r.url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for _, h := range hdr {
		req.Header.Set(h[0], h[1])
	}
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// openLegacy opens the legacy session r calls in with the initialize
// request init.
func (r *forwardRig) openLegacy(t testing.TB, init string) {
	resp := r.post(t, []byte(init), nil)
	r.sid = resp.Header.Get("Mcp-Session-Id")
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	r.hdr = [][2]string{{"Mcp-Protocol-Version", "2025-11-25"}, {"Mcp-Session-Id", r.sid}}
	resp = r.post(t, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), r.hdr)
	_ = resp.Body.Close()
}

func (r *forwardRig) call(t testing.TB) string {
	resp := r.post(t, r.body, r.hdr)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// BenchmarkForwardHTTP is one tools/call through the proxy, HTTP → HTTP
// on loopback (the client, the proxy and the upstream in this process).
func BenchmarkForwardHTTP(b *testing.B) {
	for _, era := range []pmcp.Era{pmcp.EraLegacy, pmcp.EraModern} {
		b.Run(era.String(), func(b *testing.B) {
			r := newForwardRig(b, era)
			b.ReportAllocs()
			for b.Loop() {
				r.call(b)
			}
		})
	}
}
