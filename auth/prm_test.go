package auth

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestMetadataURL(t *testing.T) {
	cases := map[string]string{
		"https://example.com/public/mcp":   "https://example.com/.well-known/oauth-protected-resource/public/mcp",
		"HTTPS://Example.COM:443/mcp":      "https://example.com/.well-known/oauth-protected-resource/mcp",
		"https://example.com/mcp/":         "https://example.com/.well-known/oauth-protected-resource/mcp/",
		"https://example.com":              "https://example.com/.well-known/oauth-protected-resource",
		"https://example.com/":             "https://example.com/.well-known/oauth-protected-resource",
		"http://127.0.0.1:8080/mcp":        "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp",
		"https://[::1]:8443/a/b":           "https://[::1]:8443/.well-known/oauth-protected-resource/a/b",
		"https://example.com/mcp?tenant=a": "https://example.com/.well-known/oauth-protected-resource/mcp?tenant=a",
	}
	for in, want := range cases {
		got, err := MetadataURL(in)
		if err != nil || got != want {
			t.Errorf("MetadataURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "mcp.example.com/mcp", "ftp://example.com/mcp", "https://example.com/mcp#frag", "https://user@example.com/mcp"} {
		if _, err := MetadataURL(bad); !errors.Is(err, ErrInvalidResource) {
			t.Errorf("MetadataURL(%q): %v", bad, err)
		}
	}
}

func TestProtectedResourceMetadataServedAtBothURLs(t *testing.T) {
	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	defer ts.Close()
	resource := ts.URL + "/public/mcp"
	u, err := MountProtectedResourceMetadata(mux, &ProtectedResourceMetadata{
		Resource:             "HTTP" + strings.TrimPrefix(resource, "http"),
		AuthorizationServers: []string{"https://as.example.com"},
		ScopesSupported:      []string{"mcp:tools", "mcp:read"},
		ResourceName:         "test",
	})
	if err != nil {
		t.Fatal(err)
	}
	if u != ts.URL+"/.well-known/oauth-protected-resource/public/mcp" {
		t.Fatalf("url %q", u)
	}
	for _, path := range []string{"/.well-known/oauth-protected-resource/public/mcp", "/.well-known/oauth-protected-resource"} {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("%s: %d %v", path, resp.StatusCode, resp.Header)
		}
		var doc map[string]any
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{
			"resource":                 resource,
			"authorization_servers":    []any{"https://as.example.com"},
			"scopes_supported":         []any{"mcp:tools", "mcp:read"},
			"bearer_methods_supported": []any{"header"},
			"resource_name":            "test",
		}
		if got, _ := json.Marshal(doc); string(got) != string(mustJSON(t, want)) {
			t.Fatalf("%s: document %s, want %s", path, got, mustJSON(t, want))
		}
	}
	req, _ := http.NewRequest(http.MethodPost, u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST: %d", resp.StatusCode)
	}
	http.DefaultClient.CloseIdleConnections()
}

func TestProtectedResourceMetadataRefusesBadDocuments(t *testing.T) {
	good := ProtectedResourceMetadata{Resource: testResource, AuthorizationServers: []string{testIssuer}}
	bad := []func(*ProtectedResourceMetadata){
		func(m *ProtectedResourceMetadata) { m.ScopesSupported = []string{"mcp:tools", "offline_access"} },
		func(m *ProtectedResourceMetadata) { m.AuthorizationServers = nil },
		func(m *ProtectedResourceMetadata) { m.AuthorizationServers = []string{"as.example.com"} },
		func(m *ProtectedResourceMetadata) { m.Resource = "https://mcp.example.com/mcp#x" },
		func(m *ProtectedResourceMetadata) { m.ScopesSupported = []string{`a"b`} },
	}
	for i, mod := range bad {
		m := good
		mod(&m)
		if _, err := ProtectedResourceMetadataHandler(&m); !errors.Is(err, ErrInvalidMetadata) {
			t.Errorf("case %d: %v", i, err)
		}
	}
	if _, err := ProtectedResourceMetadataHandler(&good); err != nil {
		t.Fatal(err)
	}
	if _, err := NewAuthenticator(Options{Verifier: TokenVerifierFunc(nil), Resource: testResource, Scopes: []string{"offline_access"}}); err == nil {
		t.Fatal("Authenticator with offline_access in Scopes accepted")
	}
}
