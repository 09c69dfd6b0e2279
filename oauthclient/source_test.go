package oauthclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
)

// sourceServer is one loopback server with a token endpoint (/token), the
// authorization server metadata naming it, and a protected endpoint
// (/mcp) that accepts the tokens it issued and not revoked.
type sourceServer struct {
	t   *testing.T
	srv *httptest.Server

	mu        sync.Mutex
	expiresIn int    // expires_in of the tokens issued; 0: none
	tokenErr  string // the token endpoint's error code, if set
	issued    string // issued_token_type answered, if set
	huge      bool   // answer a token response over the bound
	refuseAll bool   // /mcp refuses every token
	forms     []url.Values
	basics    []string // "id:secret" of each token request's Basic auth
	live      map[string]bool
	seen      []string // tokens /mcp got
	n         int
}

func newSourceServer(t *testing.T) *sourceServer {
	s := &sourceServer{t: t, live: map[string]bool{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *sourceServer) handle(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"issuer":%q,"token_endpoint":%q}`, s.srv.URL, s.srv.URL+"/token")
	case "/token":
		_ = r.ParseForm()
		s.forms = append(s.forms, r.PostForm)
		id, secret, _ := r.BasicAuth()
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
		s.basics = append(s.basics, id+":"+secret)
		w.Header().Set("Content-Type", "application/json")
		if s.tokenErr != "" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":%q}`, s.tokenErr)
			return
		}
		if s.huge {
			fmt.Fprintf(w, `{"access_token":"%s"}`, strings.Repeat("x", tokenResponseMaxBytes))
			return
		}
		s.n++
		tok := "tok-" + strconv.Itoa(s.n)
		s.live[tok] = true
		out := fmt.Sprintf(`{"access_token":%q,"token_type":"Bearer"`, tok)
		if s.expiresIn > 0 {
			out += `,"expires_in":` + strconv.Itoa(s.expiresIn)
		}
		if s.issued != "" {
			out += fmt.Sprintf(`,"issued_token_type":%q`, s.issued)
		}
		fmt.Fprint(w, out+"}")
	case "/mcp":
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.seen = append(s.seen, tok)
		if s.refuseAll || !s.live[tok] {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, "ok "+tok)
	default:
		http.NotFound(w, r)
	}
}

func (s *sourceServer) with(fn func(s *sourceServer)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s)
}

func (s *sourceServer) tokenRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.forms)
}

// client returns an HTTP client whose transport src wraps for /mcp.
func (s *sourceServer) client(t *testing.T, src *Source, err error, log *slog.Logger) *http.Client {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	rt, err := src.Wrap(s.srv.Client().Transport, s.srv.URL+"/mcp", log)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: rt}
}

func (s *sourceServer) get(c *http.Client) (string, error) {
	resp, err := c.Post(s.srv.URL+"/mcp", "application/json", bytes.NewReader([]byte(`{}`)))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return b.String(), nil
}

// TestClientCredentialsSource: the client credentials source fetches one
// token for many concurrent requests (client_secret_basic, the scopes,
// the endpoint's canonical URI as resource), keeps it until shortly
// before it expires, then fetches its successor once; a token the server
// refuses is replaced and the request sent once more, and a server that
// refuses the fresh token too fails the request with
// ErrAuthorizationRequired. The token endpoint is found through the
// issuer's metadata.
func TestClientCredentialsSource(t *testing.T) {
	s := newSourceServer(t)
	s.with(func(s *sourceServer) { s.expiresIn = 300 })
	secret := pmcp.Secret("s3cret")
	src, err := NewClientCredentials(ClientCredentials{Issuer: s.srv.URL, ClientID: "gw", ClientSecret: secret, Scopes: []string{"mcp:tools", "x"}})
	c := s.client(t, src, err, nil)
	clock := time.Now()
	var cmu sync.Mutex
	src.now = func() time.Time { cmu.Lock(); defer cmu.Unlock(); return clock }
	advance := func(d time.Duration) { cmu.Lock(); clock = clock.Add(d); cmu.Unlock() }

	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got, err := s.get(c); err != nil || got != "ok tok-1" {
				errs <- fmt.Errorf("%q %v", got, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a concurrent request: %v", err)
	}
	if n := s.tokenRequests(); n != 1 {
		t.Fatalf("%d token requests for 20 concurrent requests, want 1", n)
	}
	// Another session of the same source shares the token.
	if got, err := s.get(s.client(t, src, nil, nil)); err != nil || got != "ok tok-1" || s.tokenRequests() != 1 {
		t.Fatalf("another session: %q %v, %d token requests", got, err, s.tokenRequests())
	}
	s.with(func(s *sourceServer) {
		f := s.forms[0]
		if f.Get("grant_type") != "client_credentials" || f.Get("scope") != "mcp:tools x" || f.Get("resource") != s.srv.URL+"/mcp" || f.Get("client_secret") != "" {
			t.Errorf("token request form %v", f)
		}
		if s.basics[0] != "gw:s3cret" {
			t.Errorf("client authentication %q, want Basic gw:s3cret", s.basics[0])
		}
	})

	// Four minutes in, a fifth of 300 s (60 s) before expiry: still tok-1.
	advance(239 * time.Second)
	if got, _ := s.get(c); got != "ok tok-1" || s.tokenRequests() != 1 {
		t.Fatalf("before the refresh time: %q, %d token requests", got, s.tokenRequests())
	}
	advance(2 * time.Second)
	if got, _ := s.get(c); got != "ok tok-2" || s.tokenRequests() != 2 {
		t.Fatalf("past the refresh time: %q, %d token requests, want tok-2 fetched before expiry", got, s.tokenRequests())
	}

	// Revoked: refused once, a new token, sent again.
	s.with(func(s *sourceServer) { delete(s.live, "tok-2") })
	if got, err := s.get(c); err != nil || got != "ok tok-3" || s.tokenRequests() != 3 {
		t.Fatalf("after a revocation: %q %v, %d token requests", got, err, s.tokenRequests())
	}

	// Refused whatever the token: one new token, then the error.
	s.with(func(s *sourceServer) { s.refuseAll = true })
	_, err = s.get(c)
	var se *pmcp.HTTPStatusError
	if !errors.Is(err, pmcp.ErrAuthorizationRequired) || !errors.As(err, &se) || se.StatusCode != 401 || !strings.Contains(err.Error(), s.srv.URL+"/token") {
		t.Fatalf("a server refusing every token: %v", err)
	}
	if n := s.tokenRequests(); n != 4 {
		t.Fatalf("%d token requests, want one more for the refusal", n)
	}

	// The secret is never printed.
	cfg := ClientCredentials{TokenURL: s.srv.URL + "/token", ClientID: "gw", ClientSecret: secret}
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("cfg", "cfg", cfg)
	for _, out := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v %#v %s %q", cfg, cfg, cfg, cfg), fmt.Sprint(&cfg), logs.String()} {
		if strings.Contains(out, "s3cret") || !strings.Contains(out, "REDACTED") {
			t.Errorf("printed %q", out)
		}
	}
}

// TestSourceRefusals: a token endpoint error is an *Error that does not
// carry the secret; an oversized token response is refused; a refresh
// that fails leaves the current token in use until it expires; an
// incomplete configuration is refused by Wrap.
func TestSourceRefusals(t *testing.T) {
	s := newSourceServer(t)
	s.with(func(s *sourceServer) { s.tokenErr = "invalid_client" })
	var logs bytes.Buffer
	src, err := NewClientCredentials(ClientCredentials{TokenURL: s.srv.URL + "/token", ClientID: "gw", ClientSecret: "s3cret"})
	c := s.client(t, src, err, slog.New(slog.NewTextHandler(&logs, nil)))
	_, err = s.get(c)
	var oe *Error
	if !errors.As(err, &oe) || oe.Code != "invalid_client" || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("token endpoint error: %v", err)
	}
	s.with(func(s *sourceServer) { s.tokenErr, s.huge = "", true })
	if _, err := s.get(c); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("an oversized token response: %v", err)
	}
	s.with(func(s *sourceServer) { s.huge, s.expiresIn = false, 100 })
	if got, err := s.get(c); err != nil || got != "ok tok-1" {
		t.Fatalf("%q %v", got, err)
	}
	clock := time.Now().Add(90 * time.Second) // due (20 s before expiry), not expired
	src.now = func() time.Time { return clock }
	s.with(func(s *sourceServer) { s.tokenErr = "temporarily_unavailable" })
	if got, err := s.get(c); err != nil || got != "ok tok-1" {
		t.Fatalf("a failed refresh: %q %v, want the current token", got, err)
	}
	if !strings.Contains(logs.String(), "refresh failed") || strings.Contains(logs.String(), "s3cret") || strings.Contains(logs.String(), "tok-1") {
		t.Fatalf("log %s", logs.String())
	}
	clock = clock.Add(time.Minute) // expired
	if _, err := s.get(c); !errors.As(err, &oe) || oe.Code != "temporarily_unavailable" {
		t.Fatalf("an expired token and no new one: %v", err)
	}
	for _, cc := range []ClientCredentials{
		{TokenURL: s.srv.URL + "/token"},
		{ClientID: "gw"},
		{TokenURL: "http://example.com/token", ClientID: "gw"},
		{Issuer: s.srv.URL + "/?q", ClientID: "gw"},
	} {
		if _, err := NewClientCredentials(cc); err == nil {
			t.Errorf("%v: accepted", cc)
		}
	}
	if _, err := NewTokenExchange(TokenExchange{TokenURL: s.srv.URL + "/token"}); err == nil {
		t.Error("a token exchange without SubjectToken accepted")
	}
}

// TestTokenExchangeSource: the token exchange source sends the subject
// token (read at each exchange) with its type, asks for an access token
// for the audience and resource, and refuses an answer of another token
// type.
func TestTokenExchangeSource(t *testing.T) {
	s := newSourceServer(t)
	var reads int
	var rmu sync.Mutex
	subject := func(context.Context) (pmcp.Secret, error) {
		rmu.Lock()
		defer rmu.Unlock()
		reads++
		return pmcp.Secret("subject-" + strconv.Itoa(reads)), nil
	}
	src, err := NewTokenExchange(TokenExchange{TokenURL: s.srv.URL + "/token", ClientID: "gw", ClientSecret: "s3cret", SubjectToken: subject,
		SubjectTokenType: "access_token", Audience: "upstream", Resource: "https://up.example/mcp", Scopes: []string{"a"}})
	c := s.client(t, src, err, nil)
	if got, err := s.get(c); err != nil || got != "ok tok-1" {
		t.Fatalf("%q %v", got, err)
	}
	s.with(func(s *sourceServer) {
		delete(s.live, "tok-1")
		s.issued = "urn:ietf:params:oauth:token-type:access_token"
	})
	if got, err := s.get(c); err != nil || got != "ok tok-2" {
		t.Fatalf("after a refusal: %q %v", got, err)
	}
	s.with(func(s *sourceServer) {
		want := url.Values{
			"grant_type":           {"urn:ietf:params:oauth:grant-type:token-exchange"},
			"subject_token":        {"subject-2"},
			"subject_token_type":   {"urn:ietf:params:oauth:token-type:access_token"},
			"requested_token_type": {"urn:ietf:params:oauth:token-type:access_token"},
			"audience":             {"upstream"},
			"resource":             {"https://up.example/mcp"},
			"scope":                {"a"},
		}
		if got := s.forms[1]; got.Encode() != want.Encode() {
			t.Errorf("token exchange form\n got %v\nwant %v", got, want)
		}
		if s.basics[1] != "gw:s3cret" {
			t.Errorf("client authentication %q", s.basics[1])
		}
		delete(s.live, "tok-2")
		s.issued = "urn:ietf:params:oauth:token-type:id_token"
	})
	if _, err := s.get(c); err == nil || !strings.Contains(err.Error(), "not an access token") {
		t.Fatalf("an id_token issued: %v", err)
	}
}
