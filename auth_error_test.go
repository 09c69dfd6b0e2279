package pmcp

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// An Authenticate error carrying an *AuthError (possibly wrapped) chooses
// the status and the WWW-Authenticate lines; any other error keeps the
// bare Bearer 401.
func TestAuthErrorStatusAndChallenges(t *testing.T) {
	srv, err := NewServer(ServerOptions{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		err    error
		status int
		want   []string
	}{
		{"plain", errors.New("nope"), 401, []string{"Bearer"}},
		{"forbidden", &AuthError{Status: 403, Challenges: []string{`Bearer error="insufficient_scope", scope="a b"`}}, 403, []string{`Bearer error="insufficient_scope", scope="a b"`}},
		{"wrapped-400", fmt.Errorf("ctx: %w", &AuthError{Status: 400, Challenges: []string{`Bearer error="invalid_request"`}}), 400, []string{`Bearer error="invalid_request"`}},
		{"two", &AuthError{Challenges: []string{`Bearer realm="x"`, `DPoP algs="ES256"`}}, 401, []string{`Bearer realm="x"`, `DPoP algs="ES256"`}},
		{"bad-status", &AuthError{Status: 500}, 401, []string{"Bearer"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := NewStreamableHTTPHandler(srv, StreamableHTTPOptions{
				Authenticate: func(*http.Request) (*AuthInfo, *AuthContext, error) { return nil, nil, tc.err },
			})
			defer h.Close()
			req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(`{}`))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d", rec.Code, tc.status)
			}
			got := rec.Header().Values("WWW-Authenticate")
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("WWW-Authenticate %q, want %q", got, tc.want)
			}
		})
	}
	var ae *AuthError
	if !errors.As(fmt.Errorf("x: %w", &AuthError{Err: errNotAuth}), &ae) || !errors.Is(ae, errNotAuth) {
		t.Fatal("AuthError does not unwrap to its cause")
	}
}

var errNotAuth = errors.New("cause")

// A refusal is logged at Info with its status, reason and client; an
// Authenticate that puts the credentials in its error does not get them
// into the log.
func TestAuthRefusalLoggedWithoutCredentials(t *testing.T) {
	var logs strings.Builder
	srv, err := NewServer(ServerOptions{Name: "a", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	const secret = "s3cr3t-t0ken-value"
	h := NewStreamableHTTPHandler(srv, StreamableHTTPOptions{
		Authenticate: func(r *http.Request) (*AuthInfo, *AuthContext, error) {
			return nil, nil, &AuthError{Status: 401, ClientID: "cli-7", Err: fmt.Errorf("token %s is revoked", strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))}
		},
	})
	defer h.Close()
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+secret)
	h.ServeHTTP(httptest.NewRecorder(), req)
	got := logs.String()
	for _, want := range []string{"level=INFO", "status=401", `reason="token [REDACTED] is revoked"`, "client_id=cli-7"} {
		if !strings.Contains(got, want) {
			t.Errorf("log %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, secret) {
		t.Errorf("log has the token: %q", got)
	}
}
