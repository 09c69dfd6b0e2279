package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/transport/stdio"
)

// optionalParamMethods are the methods whose params are all optional: a
// client may send them with no params member at all (the TypeScript SDK
// and go-sdk do for the list methods in the legacy era).
var optionalParamMethods = []string{"ping", "tools/list", "prompts/list", "resources/list", "resources/templates/list"}

// rawExchange sends JSON-RPC lines to the proxy the way a third-party
// client writes them and returns each response's raw "result" or "error".
type rawExchange func(t *testing.T, line string) map[string]json.RawMessage

// rawStream serves the proxy over stdio framing on OS pipes and returns a
// function that writes one line and reads the response with the same id.
func rawStream(t *testing.T, p *Proxy) rawExchange {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = p.Server().Serve(context.Background(), stdio.NewStream(inR, outW, stdio.Options{}))
		_ = outW.Close()
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		go func() { _, _ = io.Copy(io.Discard, outR) }()
		<-done
	})
	r := bufio.NewReader(outR)
	return func(t *testing.T, line string) map[string]json.RawMessage {
		t.Helper()
		if _, err := inW.Write([]byte(line + "\n")); err != nil {
			t.Fatal(err)
		}
		var want struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal([]byte(line), &want)
		if want.ID == nil {
			return nil // a notification: nothing comes back
		}
		for {
			l, err := r.ReadBytes('\n')
			if err != nil {
				t.Fatalf("reading the response to %s: %v", line, err)
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(l, &m); err != nil {
				t.Fatalf("response %q: %v", l, err)
			}
			if bytes.Equal(m["id"], want.ID) {
				return m
			}
		}
	}
}

// rawHTTP serves the proxy over Streamable HTTP and posts each line as a
// client that asks for JSON would; the legacy session id is kept.
func rawHTTP(t *testing.T, p *Proxy) rawExchange {
	h := pmcp.NewStreamableHTTPHandler(p.Server(), pmcp.StreamableHTTPOptions{JSONResponse: true})
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		_ = h.Close()
		ts.Close()
	})
	var session, version string
	return func(t *testing.T, line string) map[string]json.RawMessage {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(line))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		if version != "" {
			req.Header.Set("MCP-Protocol-Version", version)
		}
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Name   string                     `json:"name"`
				TaskID string                     `json:"taskId"`
				Meta   map[string]json.RawMessage `json:"_meta"`
			} `json:"params"`
		}
		_ = json.Unmarshal([]byte(line), &msg)
		if v, ok := msg.Params.Meta[pmcp.MetaProtocolVersion]; ok {
			_ = json.Unmarshal(v, &version)
			req.Header.Set("MCP-Protocol-Version", version)
			req.Header.Set("Mcp-Method", msg.Method)
			if n := msg.Params.Name + msg.Params.TaskID; n != "" {
				req.Header.Set("Mcp-Name", n)
			}
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
			session = id
			version = pmcp.Version20251125
		}
		if resp.StatusCode == http.StatusAccepted {
			return nil
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err == nil && m["error"] != nil {
			return m // a JSON-RPC error, whatever the HTTP status
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: HTTP %d: %s", line, resp.StatusCode, body)
		}
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("response %q: %v", body, err)
		}
		return m
	}
}

// TestBridgeAbsentParams: every method whose params are optional works
// through the bridge when the request has no params member (legacy) or
// only _meta (modern), over both downstream transports and both upstream
// transports, as it does against a pmcp server directly.
func TestBridgeAbsentParams(t *testing.T) {
	for _, down := range []string{"stream", "http"} {
		for _, upT := range []string{"stream", "http"} {
			for _, era := range []pmcp.Era{pmcp.EraLegacy, pmcp.EraModern} {
				t.Run(fmt.Sprintf("%s/down-%s/up-%s", era, down, upT), func(t *testing.T) {
					srv, _ := newUpstream(t, pmcp.EraUnknown, "u")
					var wg sync.WaitGroup
					dial := memDial(srv, &wg)
					if upT == "http" {
						dial = httpDial(t, srv)
					}
					p := newProxy(t, Options{Upstreams: []Upstream{{Dial: dial}}}, &wg)
					send := rawStream(t, p)
					if down == "http" {
						send = rawHTTP(t, p)
					}
					if era == pmcp.EraLegacy {
						m := send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"ts","version":"1"}}}`)
						if m["error"] != nil {
							t.Fatalf("initialize: %s", m["error"])
						}
						send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
					}
					for i, method := range optionalParamMethods {
						line := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q}`, i+1, method)
						if era == pmcp.EraModern {
							if method == "ping" {
								continue // the modern era has no ping
							}
							line = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{"_meta":{%q:%q,%q:{}}}}`,
								i+1, method, pmcp.MetaProtocolVersion, pmcp.Version20260728, pmcp.MetaClientCapabilities)
						}
						m := send(t, line)
						if m["error"] != nil {
							t.Errorf("%s: %s", line, m["error"])
							continue
						}
						if m["result"] == nil {
							t.Errorf("%s: no result: %v", line, m)
						}
					}
				})
			}
		}
	}
}
