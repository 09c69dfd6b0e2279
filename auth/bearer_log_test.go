package auth

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
)

// Every refused request leaves one log line with the status, why, and the
// client when the token named one: at Info when a credential was refused,
// at Debug when there was none (every OAuth client's first request). An
// operator can see the 401s and 403s and their reasons. The token never
// appears (issue 18, item 10).
func TestRefusedTokensAreLogged(t *testing.T) {
	as := newTestAS(t)
	logs := &syncBuffer{}
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "auth-log", Version: "1",
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(nil)
	resource := ts.URL + "/mcp"
	authn, err := NewAuthenticator(Options{Verifier: as.newVerifier(t, func(o *JWTOptions) { o.Audience = resource }), Resource: resource, Scopes: []string{"mcp:tools"}})
	if err != nil {
		t.Fatal(err)
	}
	h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{Authenticate: authn.Authenticate})
	ts.Config.Handler = h
	t.Cleanup(func() {
		_ = h.Close()
		ts.Close()
	})
	mint := func(mod func(map[string]any)) string {
		c := claims()
		c["aud"] = resource
		mod(c)
		return as.sign("ec1", c, nil)
	}
	cases := []struct {
		name, authz    string
		status         int
		reason, client string
	}{
		{"no token", "", 401, "no access token", ""}, // logged at Debug
		{"garbage", "Bearer not-a-jwt-at-all", 401, "invalid", ""},
		{"expired", "Bearer " + mint(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() }), 401, "exp", ""},
		{"other audience", "Bearer " + mint(func(c map[string]any) { c["aud"] = resource + "/" }), 401, "aud", ""},
		{"malformed", "Bearer a b", 400, "malformed", ""},
		{"narrow", "Bearer " + mint(func(c map[string]any) { c["scope"] = "mcp:read"; c["client_id"] = "narrow-client" }), 403, "mcp:tools", "narrow-client"},
	}
	for _, c := range cases {
		before := len(logs.String())
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, resource, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if c.authz != "" {
			req.Header.Set("Authorization", c.authz)
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Fatalf("%s: status %d, want %d", c.name, resp.StatusCode, c.status)
		}
		line := strings.TrimSpace(logs.String()[before:])
		if line == "" || strings.Contains(line, "\n") {
			t.Fatalf("%s: log %q, want exactly one line", c.name, line)
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		wantLevel := "INFO"
		if c.authz == "" {
			wantLevel = "DEBUG"
		}
		if rec["level"] != wantLevel || rec["status"] != float64(c.status) || !strings.Contains(rec["reason"].(string), c.reason) {
			t.Errorf("%s: log %s, want level %s, status %d and a reason with %q", c.name, line, wantLevel, c.status, c.reason)
		}
		if got, _ := rec["client_id"].(string); got != c.client {
			t.Errorf("%s: client_id %q, want %q", c.name, got, c.client)
		}
		if tok, ok := strings.CutPrefix(c.authz, "Bearer "); ok && strings.Contains(logs.String(), tok) {
			t.Errorf("%s: the log has the token: %s", c.name, line)
		}
	}
}
