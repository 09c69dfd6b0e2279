package pmcp

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// fuzzStatuses are the only statuses the handler may answer with.
var fuzzStatuses = map[int]bool{200: true, 202: true, 400: true, 401: true, 403: true, 404: true, 405: true, 406: true, 413: true, 415: true, 503: true}

// FuzzStreamableHandler drives ServeHTTP with arbitrary methods, headers
// and bodies. headers holds "Name: value" lines; a line "Authorization:
// Bearer x" passes the test's authenticator. The handler must never panic
// and must answer with a status from fuzzStatuses; the leak check of
// TestMain runs afterwards.
func FuzzStreamableHandler(f *testing.F) {
	discover := modernBody(1, MethodDiscover, nil, nil)
	modern := "MCP-Protocol-Version: 2026-07-28\nMcp-Method: server/discover\nAccept: application/json, text/event-stream\nContent-Type: application/json\nAuthorization: Bearer a"
	legacy := "Accept: application/json, text/event-stream\nContent-Type: application/json\nAuthorization: Bearer a"
	f.Add("POST", modern, []byte(discover))
	f.Add("POST", legacy, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"f","version":"1"}}}`))
	f.Add("POST", legacy+"\nMcp-Session-Id: abc\nMCP-Protocol-Version: 2025-03-26", []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
	f.Add("GET", "Accept: text/event-stream\nMcp-Session-Id: abc\nLast-Event-ID: 1-0\nAuthorization: Bearer a", []byte(nil))
	f.Add("DELETE", "Mcp-Session-Id: abc\nAuthorization: Bearer a", []byte(nil))
	f.Add("POST", strings.Replace(modern, "server/discover", "tools/call", 1)+"\nMcp-Name: echo\nMcp-Param-Region: =?base64?SGVsbG8?=", []byte(modernBody(3, MethodToolsCall, map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}}, nil)))
	f.Add("POST", modern+"\nHost: evil.example.com\nOrigin: http://evil.example.com", []byte(discover))
	f.Add("POST", strings.Replace(modern, "application/json\nAuth", "text/plain\nAuth", 1), []byte(discover))
	f.Add("POST", modern, []byte("["+discover+"]"))
	f.Add("POST", modern, []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	f.Add("POST", strings.Replace(modern, "server/discover", "subscriptions/listen", 1), []byte(modernBody(4, MethodSubscriptionsListen, map[string]any{"notifications": map[string]any{"toolsListChanged": true}}, nil)))
	f.Add("OPTIONS", "Origin: http://localhost\nAuthorization: Bearer a", []byte(nil))
	f.Add("POST", "Content-Type: application/json", []byte(discover))

	srv := newTestServerT(f)
	if err := AddTool(srv, &Tool{Name: "echo", Description: "echo"}, func(ctx context.Context, _ *RequestHandlerExtra, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return in.Text, nil
	}); err != nil {
		f.Fatal(err)
	}
	h := NewStreamableHTTPHandler(srv, StreamableHTTPOptions{
		MaxBodyBytes: 64 << 10,
		MaxSessions:  64,
		Authenticate: func(r *http.Request) (*AuthInfo, *AuthContext, error) {
			if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
				return nil, nil, errFuzzAuth
			}
			return nil, &AuthContext{Subject: r.Header.Get("Authorization")}, nil
		},
	})
	f.Cleanup(func() { h.Close() })
	loopback := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}

	f.Fuzz(func(t *testing.T, method, headers string, body []byte) {
		req, err := http.NewRequest(method, "http://127.0.0.1:8080/mcp", bytes.NewReader(body))
		if err != nil {
			return
		}
		for _, line := range strings.Split(headers, "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok || k == "" {
				continue
			}
			v = strings.TrimSpace(v)
			if strings.EqualFold(k, "Host") {
				req.Host = v
				continue
			}
			req.Header.Add(k, v)
		}
		// Streams (GET, listen) would never end on their own: bound them.
		ctx, cancel := context.WithTimeout(context.WithValue(req.Context(), http.LocalAddrContextKey, loopback), 50*time.Millisecond)
		defer cancel()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req.WithContext(ctx))
		if !fuzzStatuses[rec.Code] {
			t.Fatalf("status %d for %s %q %q: %s", rec.Code, method, headers, body, rec.Body.Bytes())
		}
	})
}

type fuzzAuthError struct{}

func (fuzzAuthError) Error() string { return "unauthenticated" }

var errFuzzAuth error = fuzzAuthError{}
