package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
)

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A real pmcp server behind the Authenticator, a real pmcp client with a
// token: the tool sees the verified identity in both eras; requests
// without a good token get the exact RFC 6750 answers; the token never
// reaches the logs or the printed request extra.
func TestEndToEndStreamableHTTP(t *testing.T) {
	as := newTestAS(t)
	logs := &syncBuffer{}
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "auth-e2e", Version: "1",
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		subject, printed string
		token            pmcp.Secret
	}
	seenCh := make(chan seen, 4)
	type noArgs struct{}
	if err := pmcp.AddTool(srv, &pmcp.Tool{Name: "whoami", Description: "who is calling"}, func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ noArgs) (string, error) {
		if extra.AuthContext == nil || extra.AuthInfo == nil {
			return "", errors.New("no identity")
		}
		seenCh <- seen{extra.AuthContext.Subject, fmt.Sprintf("%v %+v %+v %#v", extra, extra.AuthInfo, extra.AuthContext, extra.AuthContext.Token), extra.AuthInfo.Token}
		return extra.AuthContext.Subject + "|" + extra.AuthContext.ClientID + "|" + strings.Join(extra.AuthContext.Scopes, " "), nil
	}); err != nil {
		t.Fatal(err)
	}

	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	resource := ts.URL + "/mcp"
	verifier := as.newVerifier(t, func(o *JWTOptions) { o.Audience = resource })
	authn, err := NewAuthenticator(Options{Verifier: verifier, Resource: resource, Scopes: []string{"mcp:tools"}})
	if err != nil {
		t.Fatal(err)
	}
	prmURL, err := MountProtectedResourceMetadata(mux, &ProtectedResourceMetadata{
		Resource: resource, AuthorizationServers: []string{testIssuer}, ScopesSupported: []string{"mcp:tools", "mcp:read"},
	})
	if err != nil {
		t.Fatal(err)
	}
	h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{Authenticate: authn.Authenticate})
	mux.Handle("/mcp", h)
	t.Cleanup(func() {
		_ = h.Close()
		ts.Close()
	})
	if prmURL != authn.ResourceMetadataURL() {
		t.Fatalf("mounted %s, challenges name %s", prmURL, authn.ResourceMetadataURL())
	}

	mint := func(mod func(map[string]any)) string {
		c := claims()
		c["aud"] = resource
		if mod != nil {
			mod(c)
		}
		return as.sign("ec1", c, nil)
	}
	token := mint(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	for _, era := range []pmcp.Era{pmcp.EraLegacy, pmcp.EraModern} {
		t.Run(fmt.Sprint(era), func(t *testing.T) {
			c := pmcp.NewClient(pmcp.ClientOptions{Name: "e2e", Era: era})
			s, err := c.ConnectHTTP(ctx, resource, pmcp.HTTPClientOptions{
				Header: http.Header{"Authorization": {"Bearer " + token}}, NoStandaloneStream: true,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.Era() != era {
				t.Fatalf("era %v", s.Era())
			}
			res, err := s.CallTool(ctx, "whoami", map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Content[0].(*pmcp.TextContent).Text; got != "user-1|client-1|mcp:tools mcp:read" {
				t.Fatalf("whoami = %q", got)
			}
			got := <-seenCh
			if got.subject != "user-1" || got.token.Reveal() != token {
				t.Fatalf("handler saw subject %q", got.subject)
			}
			if strings.Contains(got.printed, token) || strings.Contains(got.printed, strings.Split(token, ".")[2]) {
				t.Fatalf("printed identity leaks the token: %s", got.printed)
			}
		})
	}

	post := func(authz string) *http.Response {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, resource, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if authz != "" {
			req.Header.Set("Authorization", authz)
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	challengeOf := func(resp *http.Response, status int) challenge {
		t.Helper()
		if resp.StatusCode != status {
			t.Fatalf("status %d, want %d", resp.StatusCode, status)
		}
		vals := resp.Header.Values("WWW-Authenticate")
		if len(vals) != 1 {
			t.Fatalf("WWW-Authenticate %q", vals)
		}
		return parseChallenge(t, vals[0])
	}

	// No token: 401, resource_metadata and scope, no error.
	c := challengeOf(post(""), 401)
	if c.scheme != "Bearer" || c.params["resource_metadata"] != ts.URL+"/.well-known/oauth-protected-resource/mcp" ||
		c.params["scope"] != "mcp:tools" || len(c.params) != 2 {
		t.Fatalf("no token: %+v", c)
	}
	// The metadata URL of the challenge serves this resource.
	resp, err := ts.Client().Get(c.params["resource_metadata"])
	if err != nil {
		t.Fatal(err)
	}
	var doc ProtectedResourceMetadata
	err = json.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	if err != nil || doc.Resource != resource || doc.AuthorizationServers[0] != testIssuer {
		t.Fatalf("metadata %+v %v", doc, err)
	}
	// The pmcp client reads the same metadata and accepts its resource.
	_, err = pmcp.NewClient(pmcp.ClientOptions{}).ConnectHTTP(ctx, resource, pmcp.HTTPClientOptions{})
	if !errors.Is(err, pmcp.ErrAuthorizationRequired) || errors.Is(err, pmcp.ErrResourceMismatch) {
		t.Fatalf("client without token: %v", err)
	}

	// A token for another resource, an expired one: 401 invalid_token.
	for name, tok := range map[string]string{
		"other audience": mint(func(c map[string]any) { c["aud"] = "https://other.example.com/mcp" }),
		"expired":        mint(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() }),
	} {
		if c := challengeOf(post("Bearer "+tok), 401); c.params["error"] != ErrorInvalidToken || c.params["resource_metadata"] == "" {
			t.Fatalf("%s: %+v", name, c)
		}
	}
	// Malformed header: 400 invalid_request.
	if c := challengeOf(post("Bearer a b"), 400); c.params["error"] != ErrorInvalidRequest {
		t.Fatalf("malformed: %+v", c)
	}
	// Not enough scope: 403 insufficient_scope with all the scopes needed.
	narrow := mint(func(c map[string]any) { c["scope"] = "mcp:read" })
	if c := challengeOf(post("Bearer "+narrow), 403); c.params["error"] != ErrorInsufficientScope || c.params["scope"] != "mcp:tools" {
		t.Fatalf("narrow: %+v", c)
	}

	if strings.Contains(logs.String(), strings.Split(token, ".")[2]) {
		t.Fatal("the server log contains the token")
	}
}
