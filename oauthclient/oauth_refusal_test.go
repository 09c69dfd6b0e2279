package oauthclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
)

// TestOAuthFailureKeepsRefusal: when the server refuses the token (here
// one for another audience) and the OAuth flow cannot get another (the
// authorization server offers no registration), the error says both: the
// server's invalid_token and its description, and the flow's failure;
// both are inspectable.
func TestOAuthFailureKeepsRefusal(t *testing.T) {
	var ts *httptest.Server
	ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/mcp":
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="invalid_token", error_description="the token is for another audience", resource_metadata=%q`,
				ts.URL+"/.well-known/oauth-protected-resource/mcp"))
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_token"})
		case "/.well-known/oauth-protected-resource/mcp":
			writeJSON(w, 200, map[string]any{"resource": ts.URL + "/mcp", "authorization_servers": []string{ts.URL}})
		case "/.well-known/oauth-authorization-server":
			writeJSON(w, 200, map[string]any{"issuer": ts.URL, "authorization_endpoint": ts.URL + "/authorize", "token_endpoint": ts.URL + "/token",
				"code_challenge_methods_supported": []string{"S256"}})
		default:
			http.NotFound(w, r)
		}
	}))
	defer ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := pmcp.NewClient(pmcp.ClientOptions{}).ConnectHTTP(ctx, ts.URL+"/mcp", pmcp.HTTPClientOptions{
		Header:     http.Header{"Authorization": {"Bearer for-someone-else"}},
		Authorizer: baseConfig(),
	})
	var se *pmcp.HTTPStatusError
	if !errors.Is(err, pmcp.ErrAuthorizationRequired) || !errors.Is(err, ErrNoRegistration) || !errors.As(err, &se) {
		t.Fatalf("err = %v", err)
	}
	if code, desc := se.Challenge(); se.StatusCode != 401 || code != "invalid_token" || desc != "the token is for another audience" {
		t.Fatalf("refusal %d %q %q", se.StatusCode, code, desc)
	}
	if !strings.Contains(err.Error(), "invalid_token: the token is for another audience") {
		t.Fatalf("message: %v", err)
	}
}
