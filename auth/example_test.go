package auth_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/auth"
	"github.com/gopmcp/pmcp/oauth"
)

// Protect an MCP server with bearer tokens and publish its protected
// resource metadata. A real deployment uses auth.NewJWTVerifier or
// auth.NewIntrospectionVerifier; this example accepts one fixed token.
func ExampleNewAuthenticator() {
	const resource = "https://mcp.example.com/mcp"
	verifier := auth.TokenVerifierFunc(func(_ context.Context, token string) (*auth.Token, error) {
		if token != "let-me-in" {
			return nil, auth.ErrInvalidToken
		}
		return &auth.Token{Subject: "alice", Scopes: []string{"mcp:tools"}, ExpiresAt: time.Now().Add(time.Hour)}, nil
	})
	authn, err := auth.NewAuthenticator(auth.Options{
		Verifier: verifier,
		Resource: resource,
		Scopes:   []string{"mcp:tools"},
	})
	if err != nil {
		log.Fatal(err)
	}
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "protected"})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	prm, err := auth.MountProtectedResourceMetadata(mux, &oauth.ProtectedResourceMetadata{
		Resource:             resource,
		AuthorizationServers: []string{"https://as.example.com"},
		ScopesSupported:      []string{"mcp:tools"},
	})
	if err != nil {
		log.Fatal(err)
	}
	h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{Authenticate: authn.Authenticate})
	defer h.Close()
	mux.Handle("/mcp", h)
	fmt.Println("metadata:", prm)

	for _, authz := range []string{"", "Bearer wrong"} {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
		if authz != "" {
			req.Header.Set("Authorization", authz)
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		fmt.Println(rec.Code, rec.Header().Get("WWW-Authenticate"))
	}
	// Output:
	// metadata: https://mcp.example.com/.well-known/oauth-protected-resource/mcp
	// 401 Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="mcp:tools"
	// 401 Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="mcp:tools", error="invalid_token", error_description="the access token is invalid"
}
