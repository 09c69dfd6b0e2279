package auth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeIntrospection is an RFC 7662 endpoint: it requires client
// authentication and answers from a table of tokens.
type fakeIntrospection struct {
	ts    *httptest.Server
	mu    sync.Mutex
	resp  map[string]map[string]any
	calls map[string]int
	raw   string // when set, sent verbatim
}

const (
	introClientID     = "rs:mcp" // ':' must be form-encoded before Basic
	introClientSecret = "s3cr%t"
)

func newFakeIntrospection(t *testing.T) *fakeIntrospection {
	f := &fakeIntrospection{resp: map[string]map[string]any{}, calls: map[string]int{}}
	f.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if !ok || id != "rs%3Amcp" || secret != "s3cr%25t" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		tok := r.PostFormValue("token")
		f.mu.Lock()
		f.calls[tok]++
		body, raw := f.resp[tok], f.raw
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if raw != "" {
			_, _ = w.Write([]byte(raw))
			return
		}
		if body == nil {
			body = map[string]any{"active": false}
		}
		_ = json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(f.ts.Close)
	return f
}

func (f *fakeIntrospection) set(tok string, body map[string]any) {
	f.mu.Lock()
	f.resp[tok] = body
	f.mu.Unlock()
}

func (f *fakeIntrospection) count(tok string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[tok]
}

func activeResp(exp time.Time) map[string]any {
	return map[string]any{
		"active": true, "sub": "user-1", "client_id": "client-1", "scope": "mcp:tools",
		"aud": []string{testResource}, "iss": testIssuer, "exp": exp.Unix(), "token_type": "Bearer",
	}
}

func (f *fakeIntrospection) verifier(t *testing.T, mod func(*IntrospectionOptions)) *IntrospectionVerifier {
	t.Helper()
	o := IntrospectionOptions{Endpoint: f.ts.URL, ClientID: introClientID, ClientSecret: introClientSecret, Audience: testResource, Issuer: testIssuer}
	if mod != nil {
		mod(&o)
	}
	v, err := NewIntrospectionVerifier(o)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestIntrospectionActiveCachedUntilExp(t *testing.T) {
	f := newFakeIntrospection(t)
	clock := time.Now()
	f.set("opaque-1", activeResp(clock.Add(10*time.Second)))
	v := f.verifier(t, nil)
	v.now = func() time.Time { return clock }
	ctx := context.Background()
	for range 3 {
		tok, err := v.VerifyToken(ctx, "opaque-1")
		if err != nil {
			t.Fatal(err)
		}
		if tok.Subject != "user-1" || tok.ClientID != "client-1" || tok.Scopes[0] != "mcp:tools" || tok.Claims["iss"] != testIssuer {
			t.Fatalf("token %+v", tok)
		}
	}
	if n := f.count("opaque-1"); n != 1 {
		t.Fatalf("endpoint called %d times for three verifications, want 1", n)
	}
	// The token's exp (10 s) ends the cache entry before CacheTTL (1 min);
	// the endpoint now says it is expired.
	clock = clock.Add(11 * time.Second)
	f.set("opaque-1", map[string]any{"active": false})
	if _, err := v.VerifyToken(ctx, "opaque-1"); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("after exp: %v", err)
	}
	if n := f.count("opaque-1"); n != 2 {
		t.Fatalf("endpoint called %d times, want 2", n)
	}
}

func TestIntrospectionInactiveNotCached(t *testing.T) {
	f := newFakeIntrospection(t)
	v := f.verifier(t, nil)
	for range 2 {
		if _, err := v.VerifyToken(context.Background(), "revoked"); !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("inactive: %v", err)
		}
	}
	if n := f.count("revoked"); n != 2 || v.CacheLen() != 0 {
		t.Fatalf("calls %d, cache %d", n, v.CacheLen())
	}
}

func TestIntrospectionCacheBounded(t *testing.T) {
	f := newFakeIntrospection(t)
	v := f.verifier(t, func(o *IntrospectionOptions) { o.CacheSize = 3 })
	exp := time.Now().Add(time.Hour)
	toks := []string{"t0", "t1", "t2", "t3", "t4"}
	for _, tok := range toks {
		f.set(tok, activeResp(exp))
		if _, err := v.VerifyToken(context.Background(), tok); err != nil {
			t.Fatal(err)
		}
	}
	if v.CacheLen() != 3 {
		t.Fatalf("cache holds %d, want 3", v.CacheLen())
	}
	// t0 was evicted (least recently used), t4 was not.
	_, _ = v.VerifyToken(context.Background(), "t0")
	_, _ = v.VerifyToken(context.Background(), "t4")
	if f.count("t0") != 2 || f.count("t4") != 1 {
		t.Fatalf("calls t0=%d t4=%d, want 2 and 1", f.count("t0"), f.count("t4"))
	}
}

func TestIntrospectionRejects(t *testing.T) {
	exp := time.Now().Add(time.Hour)
	with := func(k string, v any) map[string]any {
		r := activeResp(exp)
		if v == nil {
			delete(r, k)
		} else {
			r[k] = v
		}
		return r
	}
	cases := []struct {
		name    string
		resp    map[string]any
		raw     string
		mod     func(*IntrospectionOptions)
		wantErr error
	}{
		{name: "wrong audience", resp: with("aud", "https://other.example.com"), wantErr: ErrInvalidToken},
		{name: "missing audience", resp: with("aud", nil), wantErr: ErrInvalidToken},
		{name: "wrong issuer", resp: with("iss", "https://evil.example.com"), wantErr: ErrInvalidToken},
		{name: "expired", resp: with("exp", time.Now().Add(-time.Hour).Unix()), wantErr: ErrInvalidToken},
		{name: "no exp", resp: with("exp", nil), wantErr: ErrInvalidToken},
		{name: "not yet valid", resp: with("nbf", time.Now().Add(time.Hour).Unix()), wantErr: ErrInvalidToken},
		{name: "refresh token", resp: with("token_type", "refresh_token"), wantErr: ErrInvalidToken},
		{name: "active as string", resp: with("active", "true"), wantErr: ErrVerifierUnavailable},
		{name: "no active", resp: with("active", nil), wantErr: ErrVerifierUnavailable},
		{name: "garbage", raw: "<html>", wantErr: ErrVerifierUnavailable},
		{name: "oversize", raw: `{"active":true,"x":"` + strings.Repeat("x", DefaultIntrospectionMaxBytes) + `"}`, wantErr: ErrVerifierUnavailable},
		{name: "bad client credentials", resp: activeResp(exp), mod: func(o *IntrospectionOptions) { o.ClientSecret = "wrong" }, wantErr: ErrVerifierUnavailable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeIntrospection(t)
			f.set("tok", tc.resp)
			f.raw = tc.raw
			v := f.verifier(t, tc.mod)
			if _, err := v.VerifyToken(context.Background(), "tok"); !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
		})
	}
	// AllowMissingAudience accepts a response without aud, never a wrong one.
	f := newFakeIntrospection(t)
	f.set("no-aud", with("aud", nil))
	f.set("bad-aud", with("aud", "https://other.example.com"))
	v := f.verifier(t, func(o *IntrospectionOptions) { o.AllowMissingAudience = true })
	if _, err := v.VerifyToken(context.Background(), "no-aud"); err != nil {
		t.Fatal(err)
	}
	if _, err := v.VerifyToken(context.Background(), "bad-aud"); !errors.Is(err, ErrInvalidToken) {
		t.Fatal(err)
	}
	if _, err := NewIntrospectionVerifier(IntrospectionOptions{Endpoint: f.ts.URL}); err == nil {
		t.Fatal("verifier without Audience accepted")
	}
}

// The token is in the POST body: a redirect from the endpoint must not
// carry it elsewhere.
func TestIntrospectionFollowsNoRedirect(t *testing.T) {
	var leaked atomic.Int64
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Add(1)
		_ = json.NewEncoder(w).Encode(activeResp(time.Now().Add(time.Hour)))
	}))
	defer elsewhere.Close()
	f := newFakeIntrospection(t)
	f.ts.Config.Handler = http.RedirectHandler(elsewhere.URL, http.StatusTemporaryRedirect)
	v := f.verifier(t, nil)
	if _, err := v.VerifyToken(context.Background(), "tok"); !errors.Is(err, ErrVerifierUnavailable) {
		t.Fatalf("err %v", err)
	}
	if leaked.Load() != 0 {
		t.Fatal("the introspection request followed the redirect")
	}
}
