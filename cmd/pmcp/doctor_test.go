package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/internal/everything"
	"github.com/gopmcp/pmcp/oauthclient"
)

// doctorLine asserts that out has a line starting with state and name.
func doctorLine(t *testing.T, out, state, name string) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, state) && strings.HasPrefix(strings.TrimSpace(strings.TrimPrefix(l, state)), name) {
			return
		}
	}
	t.Errorf("no %q line for %q in:\n%s", state, name, out)
}

// TestDoctorServe: `pmcp serve` over loopback speaks both eras; every
// check of a server without authorization passes or is skipped.
func TestDoctorServe(t *testing.T) {
	endpoint, _, _ := serveInProcess(t)
	code, out, errs := cli(t, "doctor", "--timeout", "10s", endpoint)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, name := range []string{"dns", "tcp", "http", "host/origin", "legacy era", "modern era", "clock"} {
		doctorLine(t, out, "PASS", name)
	}
	doctorLine(t, out, "SKIP", "tls")
	doctorLine(t, out, "SKIP", "authorization")
}

// TestDoctorHostRefused: a server behind a proxy that forwards its public
// Host refuses it; doctor fails and says what to allow.
func TestDoctorHostRefused(t *testing.T) {
	url := wrappedEverything(t, func(w http.ResponseWriter, r *http.Request, h http.Handler) {
		r.Host = "mcp.example.com" // what a reverse proxy forwards
		h.ServeHTTP(w, r)
	})
	code, out, _ := cli(t, "doctor", "--timeout", "10s", url)
	if code != exitError {
		t.Fatalf("exit %d, want %d\n%s", code, exitError, out)
	}
	doctorLine(t, out, "FAIL", "host/origin")
	if !strings.Contains(out, "--allow-host") || !strings.Contains(out, "AllowedHosts") {
		t.Errorf("no fix for the refused Host:\n%s", out)
	}
}

// TestDoctorUnreachable: nothing listens on the port.
func TestDoctorUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	code, out, _ := cli(t, "doctor", "--timeout", "5s", "http://"+addr+"/mcp")
	if code != exitError {
		t.Fatalf("exit %d\n%s", code, out)
	}
	doctorLine(t, out, "PASS", "dns")
	doctorLine(t, out, "FAIL", "tcp")
	doctorLine(t, out, "SKIP", "http")
}

// fakeJWT is an unsigned token with the claims given (doctor only reads
// them; the server is what verifies tokens).
func fakeJWT(t *testing.T, claims map[string]any) string {
	t.Helper()
	b, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"ES256","typ":"at+jwt"}`)) + "." + enc(b) + "." + enc([]byte("sig"))
}

// TestDoctorAuth: a server that answers 401 gets its protected-resource
// and authorization-server metadata and registration options checked,
// and the stored token judged: none, valid, expired, wrong audience.
func TestDoctorAuth(t *testing.T) {
	as := newLoginAS(t)
	p := newProtectedEverything(t, as)
	store := filepath.Join(t.TempDir(), "tokens.json")
	doctor := func() (int, string) {
		code, out, errs := cli(t, "doctor", "--timeout", "10s", "--token-store", store, p.url)
		return code, out + errs
	}
	code, out := doctor()
	if code != exitError {
		t.Fatalf("exit %d\n%s", code, out)
	}
	doctorLine(t, out, "PASS", "authorization")
	doctorLine(t, out, "PASS", "resource metadata")
	doctorLine(t, out, "PASS", "server metadata")
	doctorLine(t, out, "PASS", "registration")
	doctorLine(t, out, "FAIL", "token")
	if !strings.Contains(out, "pmcp login --url "+p.url) || !strings.Contains(out, as.ts.URL+"/register") {
		t.Errorf("missing the login fix or the registration endpoint:\n%s", out)
	}

	save := func(tok string, exp time.Time) {
		t.Helper()
		err := oauthclient.NewFileTokenStore(store).Save(context.Background(), oauthclient.TokenKey{Resource: p.url, Issuer: as.ts.URL},
			&oauthclient.Credentials{ClientID: "pre", AccessToken: pmcp.Secret(tok), TokenType: "Bearer", Expiry: exp})
		if err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	save(as.mint(t, p.url, now.Add(time.Hour)), now.Add(time.Hour))
	code, out = doctor()
	doctorLine(t, out, "PASS", "token")
	doctorLine(t, out, "PASS", "token use")
	if code != 0 {
		t.Errorf("exit %d with a valid token\n%s", code, out)
	}

	// Valid by its claims, refused by the server (its signature).
	save(fakeJWT(t, map[string]any{"aud": p.url, "exp": now.Add(time.Hour).Unix()}), now.Add(time.Hour))
	code, out = doctor()
	doctorLine(t, out, "PASS", "token")
	doctorLine(t, out, "FAIL", "token use")
	if code != exitError || !strings.Contains(out, "invalid_token") {
		t.Errorf("exit %d with a forged token\n%s", code, out)
	}

	save(fakeJWT(t, map[string]any{"aud": p.url, "exp": now.Add(-time.Hour).Unix()}), now.Add(-time.Hour))
	_, out = doctor()
	doctorLine(t, out, "FAIL", "token")
	if !strings.Contains(out, "expired") {
		t.Errorf("not said expired:\n%s", out)
	}

	save(fakeJWT(t, map[string]any{"aud": "https://other.example/mcp", "exp": now.Add(time.Hour).Unix()}), now.Add(time.Hour))
	_, out = doctor()
	doctorLine(t, out, "FAIL", "token")
	if !strings.Contains(out, "audience") || !strings.Contains(out, "https://other.example/mcp") {
		t.Errorf("not said wrong audience:\n%s", out)
	}
}

// TestDoctorStdio: the child starts, answers initialize, and writes only
// JSON-RPC; a child that prints to stdout fails the last check.
func TestDoctorStdio(t *testing.T) {
	good := []string{"--", "env", "PMCP_TEST_RUN_MAIN=1", os.Args[0], "serve", "--stdio", "--log-level", "off"}
	code, out, errs := cli(t, append([]string{"doctor", "--timeout", "20s"}, good...)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, name := range []string{"start", "initialize", "stdout"} {
		doctorLine(t, out, "PASS", name)
	}

	noisy := []string{"--", "sh", "-c", "echo 'server starting on stdio'; exec env PMCP_TEST_RUN_MAIN=1 \"$0\" serve --stdio --log-level off", os.Args[0]}
	code, out, _ = cli(t, append([]string{"doctor", "--timeout", "20s"}, noisy...)...)
	if code != exitError {
		t.Fatalf("exit %d\n%s", code, out)
	}
	doctorLine(t, out, "FAIL", "stdout")
	if !strings.Contains(out, "stderr") || !strings.Contains(out, `"server starting on stdio"`) {
		t.Errorf("no quote and fix for stdout output:\n%s", out)
	}

	code, out, _ = cli(t, "doctor", "--timeout", "5s", "--", filepath.Join(t.TempDir(), "no-such-server"))
	if code != exitError {
		t.Fatalf("exit %d\n%s", code, out)
	}
	doctorLine(t, out, "FAIL", "start")
}

// TestDoctorTLS: a certificate this machine does not trust, and plain
// HTTP on an https:// URL, each fail the TLS check with their own fix.
func TestDoctorTLS(t *testing.T) {
	ts := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(ts.Close)
	code, out, _ := cli(t, "doctor", "--timeout", "5s", ts.URL+"/mcp")
	if code != exitError {
		t.Fatalf("exit %d\n%s", code, out)
	}
	doctorLine(t, out, "FAIL", "tls")
	if !strings.Contains(out, "not signed by an authority this machine trusts") {
		t.Errorf("no fix for the untrusted certificate:\n%s", out)
	}

	plain := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(plain.Close)
	_, out, _ = cli(t, "doctor", "--timeout", "5s", strings.Replace(plain.URL, "http://", "https://", 1)+"/mcp")
	doctorLine(t, out, "FAIL", "tls")
	if !strings.Contains(out, "use http://") {
		t.Errorf("no fix for plain HTTP:\n%s", out)
	}
}

// TestDoctorAuthNoMetadata: a server that answers 401 but publishes no
// protected-resource metadata fails that check, with where it was looked
// for and how to publish it.
func TestDoctorAuthNoMetadata(t *testing.T) {
	srv, err := everything.New(everything.Options{Step: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{
		Authenticate: func(*http.Request) (*pmcp.AuthInfo, *pmcp.AuthContext, error) {
			return nil, nil, errors.New("no token")
		},
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	ts := httptest.NewServer(mux)
	t.Cleanup(func() { _ = h.Close(); ts.Close() })
	code, out, _ := cli(t, "doctor", "--timeout", "5s", "--token-store", filepath.Join(t.TempDir(), "t.json"), ts.URL+"/mcp")
	if code != exitError {
		t.Fatalf("exit %d\n%s", code, out)
	}
	doctorLine(t, out, "FAIL", "resource metadata")
	doctorLine(t, out, "SKIP", "server metadata")
	if !strings.Contains(out, "/.well-known/oauth-protected-resource/mcp") || !strings.Contains(out, "auth.MountProtectedResourceMetadata") {
		t.Errorf("no place or fix:\n%s", out)
	}
}

// TestDoctorReadme: the README's doctor output has the lines (state and
// check) of a real run against pmcp serve.
func TestDoctorReadme(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(raw), "<!-- doctor output -->\n```text\n")
	if !ok {
		t.Fatal("README.md has no doctor output block")
	}
	block, _, _ = strings.Cut(block, "```")
	endpoint, _, _ := serveInProcess(t)
	_, out, errs := cli(t, "doctor", "--timeout", "10s", endpoint)
	heads := func(s string) []string {
		var h []string
		for _, l := range strings.Split(s, "\n") {
			if len(l) > 24 {
				h = append(h, strings.TrimSpace(l[:24]))
			}
		}
		return h
	}
	if got, want := heads(out), heads(block); !slices.Equal(got, want) {
		t.Errorf("README doctor lines %q\nreal run %q\n%s%s", want, got, out, errs)
	}
}

// mint signs an access token for resource the way the token endpoint
// does.
func (as *loginAS) mint(t *testing.T, resource string, exp time.Time) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: as.key}, (&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(map[string]any{"iss": as.ts.URL, "aud": resource, "sub": "cli-user", "client_id": "pre",
		"scope": "mcp:tools", "iat": time.Now().Unix(), "exp": exp.Unix(), "jti": "doctor"}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestDoctorClockSkew: a server whose Date is five minutes off fails the
// clock check.
func TestDoctorClockSkew(t *testing.T) {
	url := wrappedEverything(t, func(w http.ResponseWriter, r *http.Request, h http.Handler) {
		w.Header().Set("Date", time.Now().Add(5*time.Minute).UTC().Format(http.TimeFormat))
		h.ServeHTTP(w, r)
	})
	code, out, _ := cli(t, "doctor", "--timeout", "10s", url)
	if code != exitError {
		t.Fatalf("exit %d\n%s", code, out)
	}
	doctorLine(t, out, "FAIL", "clock")
	if !strings.Contains(out, "behind the server's") || !strings.Contains(out, "NTP") {
		t.Errorf("no direction or fix:\n%s", out)
	}
}

// wrappedEverything serves the everything server over Streamable HTTP
// through wrap (a stand-in for what sits in front of a server: a proxy,
// a wrong clock) and returns its endpoint URL.
func wrappedEverything(t *testing.T, wrap func(http.ResponseWriter, *http.Request, http.Handler)) string {
	t.Helper()
	srv, err := everything.New(everything.Options{Step: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { wrap(w, r, h) }))
	t.Cleanup(func() { _ = h.Close(); ts.Close() })
	return ts.URL + "/mcp"
}
