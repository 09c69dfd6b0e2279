package pmcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/jsonrpc"
)

func TestClientHTTPEraDetection(t *testing.T) {
	rpcErr := func(status int, code int64, data string) func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Request) bool {
		return func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Request) bool {
			if m.Method != MethodDiscover {
				return false
			}
			e := &jsonrpc.Error{Code: code, Message: "no"}
			if data != "" {
				e.Data = jsontext.Value(data)
			}
			writeRPC(w, status, &jsonrpc.Response{ID: m.ID, Error: e})
			return true
		}
	}
	plain := func(status int, body string) func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Request) bool {
		return func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Request) bool {
			if m.Method != MethodDiscover {
				return false
			}
			if body == "" {
				w.WriteHeader(status)
			} else {
				http.Error(w, body, status)
			}
			return true
		}
	}
	for name, tc := range map[string]struct {
		probe func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Request) bool
		era   Era
		err   bool
	}{
		"400 text":             {plain(400, "Bad Request: no session"), EraLegacy, false},
		"404":                  {plain(404, ""), EraLegacy, false},
		"405":                  {plain(405, ""), EraLegacy, false},
		"400 legacy -32000":    {rpcErr(400, -32000, ""), EraLegacy, false},
		"200 -32601":           {rpcErr(200, jsonrpc.CodeMethodNotFound, ""), EraLegacy, false},
		"400 -32022 legacy":    {rpcErr(400, jsonrpc.CodeUnsupportedProtocolVersion, `{"supported":["2025-11-25"]}`), EraLegacy, false},
		"400 -32020 is modern": {rpcErr(400, jsonrpc.CodeHeaderMismatch, ""), EraUnknown, true},
		"400 -32021 is modern": {rpcErr(400, jsonrpc.CodeMissingRequiredClientCapability, `{"requiredCapabilities":{}}`), EraUnknown, true},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakeHTTP(t, legacyServer("s1", tc.probe))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := NewClient(ClientOptions{}).ConnectHTTP(ctx, f.url(), HTTPClientOptions{})
			if tc.err {
				if err == nil || len(f.requests(MethodInitialize)) != 0 {
					t.Fatalf("err %v, %d initialize", err, len(f.requests(MethodInitialize)))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.Era() != tc.era {
				t.Fatalf("era %v", s.Era())
			}
		})
	}

	// The -32022 retry against our own server is in
	// TestClientHTTPModernErrorsRealServer.
}

func TestClientHTTPEraCache(t *testing.T) {
	f := newFakeHTTP(t, legacyServer("s1", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Request) bool {
		if m.Method == MethodDiscover {
			w.WriteHeader(http.StatusNotFound)
			return true
		}
		return false
	}))
	c := NewClient(ClientOptions{})
	for i := 0; i < 3; i++ {
		s := connectFake(t, c, f, HTTPClientOptions{})
		if s.Era() != EraLegacy {
			t.Fatalf("era %v", s.Era())
		}
		_ = s.Close()
	}
	if n := len(f.requests(MethodDiscover)); n != 1 {
		t.Fatalf("%d discover probes, want 1 (the era is cached per origin)", n)
	}
	// A server that changed its era: the cached entry is dropped.
	f.serve = modernServer(`[]`)
	if s := connectFake(t, c, f, HTTPClientOptions{}); s.Era() != EraModern {
		t.Fatalf("era after upgrade %v", s.Era())
	}
}

// TestClientHTTPAuthorizationPlainText: a front end that is no MCP
// server (an authenticating proxy) answers 401 in plain text; the client
// still reads the protected resource metadata and reports
// ErrAuthorizationRequired. Our own server's 401 is covered by
// TestClientHTTPAuthorization.
func TestClientHTTPAuthorizationPlainText(t *testing.T) {
	var base string
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+base+`/.well-known/oauth-protected-resource/mcp"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	})
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"resource":%q,"authorization_servers":["https://as.example.com"]}`, base+"/mcp")
	})
	ts := httptest.NewServer(mux)
	defer ts.Close()
	base = ts.URL
	_, err := NewClient(ClientOptions{}).ConnectHTTP(context.Background(), ts.URL+"/mcp", HTTPClientOptions{})
	var se *HTTPStatusError
	if !errors.Is(err, ErrAuthorizationRequired) || !errors.As(err, &se) || se.StatusCode != 401 || se.RPC != nil || !strings.Contains(err.Error(), "https://as.example.com") {
		t.Fatalf("err %v, want ErrAuthorizationRequired", err)
	}
}
