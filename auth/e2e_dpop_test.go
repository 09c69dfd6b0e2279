package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/gopmcp/pmcp"
)

// protectedServer serves a pmcp server behind an Authenticator built by
// mk (given the resource URI) on loopback at /mcp.
func protectedServer(t *testing.T, mk func(resource string) *Authenticator) (resource string, ts *httptest.Server) {
	t.Helper()
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "auth", Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	ts = httptest.NewServer(mux)
	resource = ts.URL + "/mcp"
	h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{Authenticate: mk(resource).Authenticate})
	mux.Handle("/mcp", h)
	t.Cleanup(func() {
		_ = h.Close()
		ts.Close()
	})
	return resource, ts
}

const (
	discoverBody   = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	pingBody       = `{"jsonrpc":"2.0","id":2,"method":"ping"}`
)

func rawPost(t *testing.T, ts *httptest.Server, url, body string, hdr http.Header) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header = hdr.Clone()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if strings.Contains(body, "server/discover") {
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "server/discover")
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// DPoP through the real handler: a JWT bound with cnf.jkt and a proof
// for the request is served; a replayed proof gets 401 with a DPoP
// challenge; the bound token as a bearer token gets 401.
func TestEndToEndDPoP(t *testing.T) {
	as := newTestAS(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var token string
	resource, ts := protectedServer(t, func(resource string) *Authenticator {
		v := as.newVerifier(t, func(o *JWTOptions) { o.Audience = resource })
		a, err := NewAuthenticator(Options{Verifier: v, Resource: resource, DPoP: DPoPAllowed})
		if err != nil {
			t.Fatal(err)
		}
		c := claims()
		c["aud"] = resource
		c["cnf"] = map[string]any{"jkt": thumbprint(t, key.Public())}
		token = as.sign("rsa1", c, nil)
		return a
	})
	mkProof := func(jti string) string {
		return proof(t, key, jose.ES256, "dpop+jwt", map[string]any{
			"jti": jti, "htm": "POST", "htu": resource, "iat": time.Now().Unix(), "ath": athOf(token),
		})
	}
	p := mkProof("one")
	hdr := http.Header{"Authorization": {"DPoP " + token}, "Dpop": {p}}
	if resp := rawPost(t, ts, resource, discoverBody, hdr); resp.StatusCode != 200 {
		t.Fatalf("valid DPoP: %d", resp.StatusCode)
	}
	resp := rawPost(t, ts, resource, discoverBody, hdr) // same proof again
	vals := resp.Header.Values("WWW-Authenticate")
	if resp.StatusCode != 401 || len(vals) != 2 {
		t.Fatalf("replay: %d %q", resp.StatusCode, vals)
	}
	if c := parseChallenge(t, vals[1]); c.scheme != "DPoP" || c.params["error"] != ErrorInvalidDPoPProof || !strings.Contains(c.params["algs"], "ES256") {
		t.Fatalf("replay challenge %+v", c)
	}
	resp = rawPost(t, ts, resource, discoverBody, http.Header{"Authorization": {"Bearer " + token}})
	if c := parseChallenge(t, resp.Header.Values("WWW-Authenticate")[0]); resp.StatusCode != 401 || c.params["error"] != ErrorInvalidToken {
		t.Fatalf("bound token as bearer: %d %+v", resp.StatusCode, c)
	}
}

// A legacy session is bound to the token's subject: another subject's
// valid token on the same session id gets the 404 of an unknown session.
func TestEndToEndSessionBoundToSubject(t *testing.T) {
	users := map[string]string{"tok-alice": "alice", "tok-bob": "bob"}
	v := TokenVerifierFunc(func(_ context.Context, tok string) (*Token, error) {
		if sub, ok := users[tok]; ok {
			return &Token{Subject: sub, ExpiresAt: time.Now().Add(time.Hour)}, nil
		}
		return nil, ErrInvalidToken
	})
	resource, ts := protectedServer(t, func(resource string) *Authenticator {
		a, err := NewAuthenticator(Options{Verifier: v, Resource: resource})
		if err != nil {
			t.Fatal(err)
		}
		return a
	})
	resp := rawPost(t, ts, resource, initializeBody, http.Header{"Authorization": {"Bearer tok-alice"}})
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: %d %q", resp.StatusCode, sid)
	}
	session := func(tok string) int {
		return rawPost(t, ts, resource, pingBody, http.Header{"Authorization": {"Bearer " + tok}, "Mcp-Session-Id": {sid}, "Mcp-Protocol-Version": {"2025-11-25"}}).StatusCode
	}
	if got := session("tok-bob"); got != http.StatusNotFound {
		t.Fatalf("bob on alice's session: %d, want 404", got)
	}
	if got := session("tok-alice"); got != http.StatusOK {
		t.Fatalf("alice on her session: %d", got)
	}
}
