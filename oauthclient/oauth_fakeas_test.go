package oauthclient

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json"
)

// fakeAS is one httptest server acting as MCP server (/mcp), protected
// resource metadata and any number of authorization servers, each at a
// path prefix ("/as1", "" for the root); their issuer is the server URL
// plus the prefix.
type fakeAS struct {
	t   *testing.T
	srv *httptest.Server

	mu sync.Mutex
	// configuration (set before use, or under mu)
	as             string            // prefix of the AS the PRM names
	noPRM          bool              // serve no protected resource metadata
	prmScopes      []string          // PRM scopes_supported
	challengeScope string            // scope of the 401 challenge
	metaOverride   map[string]any    // merged into every AS metadata document
	metaDrop       []string          // members removed from AS metadata
	issMode        string            // "", "omit", "wrong", "slash"
	required       map[string]string // MCP method → scope it needs (403 otherwise)
	always403      bool
	issueRefresh   bool
	refreshError   string // error code the token endpoint gives refresh requests
	tokenError     string // error code the token endpoint gives every request
	mcp            func(w http.ResponseWriter, r *http.Request)

	// observations
	hits       []string
	authorizes []url.Values
	tokenReqs  []tokenReq
	registers  []map[string]any
	tokens     map[string]issued
	refreshes  map[string]issued
	challenges map[string]string // code → code_challenge
	nextID     int
}

type tokenReq struct {
	as    string
	form  url.Values
	basic string // decoded client id of Authorization: Basic
	dpop  string
}

type issued struct {
	as     string
	scopes []string
}

func newFakeAS(t *testing.T) *fakeAS {
	t.Helper()
	f := &fakeAS{t: t, tokens: map[string]issued{}, refreshes: map[string]issued{}, challenges: map[string]string{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.handle))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAS) url() string { return f.srv.URL + "/mcp" }

func (f *fakeAS) prmURL() string { return f.srv.URL + "/.well-known/oauth-protected-resource/mcp" }

func (f *fakeAS) set(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
}

func (f *fakeAS) count(prefix string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, h := range f.hits {
		if strings.HasPrefix(h, prefix) {
			n++
		}
	}
	return n
}

func (f *fakeAS) handle(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.hits = append(f.hits, r.Method+" "+r.URL.Path)
	f.mu.Unlock()
	p := r.URL.Path
	switch {
	case p == "/mcp":
		f.resource(w, r)
	case p == "/.well-known/oauth-protected-resource/mcp":
		f.mu.Lock()
		no, as, scopes := f.noPRM, f.as, f.prmScopes
		f.mu.Unlock()
		if no {
			http.NotFound(w, r)
			return
		}
		doc := map[string]any{"resource": f.url(), "authorization_servers": []string{f.srv.URL + as}}
		if scopes != nil {
			doc["scopes_supported"] = scopes
		}
		writeJSON(w, 200, doc)
	case strings.HasPrefix(p, "/.well-known/oauth-authorization-server"):
		f.metadata(w, strings.TrimPrefix(p, "/.well-known/oauth-authorization-server"))
	case strings.HasSuffix(p, "/authorize"):
		f.authorize(w, r, strings.TrimSuffix(p, "/authorize"))
	case strings.HasSuffix(p, "/token"):
		f.token(w, r, strings.TrimSuffix(p, "/token"))
	case strings.HasSuffix(p, "/register"):
		f.register(w, r, strings.TrimSuffix(p, "/register"))
	default:
		http.NotFound(w, r)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func (f *fakeAS) metadata(w http.ResponseWriter, prefix string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	iss := f.srv.URL + prefix
	doc := map[string]any{
		"issuer":                                         iss,
		"authorization_endpoint":                         iss + "/authorize",
		"token_endpoint":                                 iss + "/token",
		"registration_endpoint":                          iss + "/register",
		"response_types_supported":                       []string{"code"},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          []string{"none"},
		"authorization_response_iss_parameter_supported": true,
	}
	for k, v := range f.metaOverride {
		doc[k] = v
	}
	for _, k := range f.metaDrop {
		delete(doc, k)
	}
	writeJSON(w, 200, doc)
}

func (f *fakeAS) authorize(w http.ResponseWriter, r *http.Request, prefix string) {
	q := r.URL.Query()
	f.mu.Lock()
	f.authorizes = append(f.authorizes, q)
	f.nextID++
	code := fmt.Sprintf("code-%d", f.nextID)
	f.challenges[code] = q.Get("code_challenge")
	mode := f.issMode
	f.mu.Unlock()
	ru, err := url.Parse(q.Get("redirect_uri"))
	if err != nil {
		http.Error(w, "bad redirect", 400)
		return
	}
	rq := url.Values{"code": {code}, "state": {q.Get("state")}}
	iss := f.srv.URL + prefix
	switch mode {
	case "":
		rq.Set("iss", iss)
	case "wrong":
		rq.Set("iss", "https://evil.example")
	case "slash":
		rq.Set("iss", iss+"/")
	}
	ru.RawQuery = rq.Encode()
	http.Redirect(w, r, ru.String(), http.StatusFound)
}

func (f *fakeAS) token(w http.ResponseWriter, r *http.Request, prefix string) {
	_ = r.ParseForm()
	tr := tokenReq{as: prefix, form: r.PostForm, dpop: r.Header.Get("DPoP")}
	if id, _, ok := r.BasicAuth(); ok {
		tr.basic = id
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tokenReqs = append(f.tokenReqs, tr)
	if f.tokenError != "" {
		writeJSON(w, 400, map[string]string{"error": f.tokenError})
		return
	}
	scopes := strings.Fields(r.PostForm.Get("scope"))
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		ch, ok := f.challenges[r.PostForm.Get("code")]
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != ch {
			writeJSON(w, 400, map[string]string{"error": "invalid_grant", "error_description": "PKCE"})
			return
		}
		delete(f.challenges, r.PostForm.Get("code"))
		if n := len(f.authorizes); n > 0 {
			scopes = strings.Fields(f.authorizes[n-1].Get("scope"))
		}
	case "refresh_token":
		if f.refreshError != "" {
			writeJSON(w, 400, map[string]string{"error": f.refreshError})
			return
		}
		old, ok := f.refreshes[r.PostForm.Get("refresh_token")]
		if !ok {
			writeJSON(w, 400, map[string]string{"error": "invalid_grant"})
			return
		}
		scopes = old.scopes
	}
	f.nextID++
	tok := fmt.Sprintf("tok%s-%d", strings.ReplaceAll(prefix, "/", "-"), f.nextID)
	f.tokens[tok] = issued{as: prefix, scopes: scopes}
	resp := map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600}
	if f.issueRefresh {
		rt := "refresh-" + tok
		f.refreshes[rt] = issued{as: prefix, scopes: scopes}
		resp["refresh_token"] = rt
	}
	writeJSON(w, 200, resp)
}

func (f *fakeAS) register(w http.ResponseWriter, r *http.Request, prefix string) {
	var body map[string]any
	b, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(b, &body)
	f.mu.Lock()
	f.registers = append(f.registers, body)
	f.nextID++
	id := fmt.Sprintf("client%s-%d", strings.ReplaceAll(prefix, "/", "-"), f.nextID)
	f.mu.Unlock()
	writeJSON(w, 201, map[string]any{"client_id": id, "token_endpoint_auth_method": "none"})
}

// resource is the protected MCP endpoint: 401 without a token the current
// AS issued, 403 when the token lacks the scope the method needs.
func (f *fakeAS) resource(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var m struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(b, &m)
	f.mu.Lock()
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	is, ok := f.tokens[tok]
	ok = ok && is.as == f.as
	need := f.required[m.Method]
	always403, scope, next := f.always403, f.challengeScope, f.mcp
	f.mu.Unlock()
	if !ok {
		c := fmt.Sprintf(`Bearer resource_metadata=%q`, f.prmURL())
		if scope != "" {
			c += fmt.Sprintf(`, scope=%q`, scope)
		}
		w.Header().Set("WWW-Authenticate", c)
		writeJSON(w, 401, map[string]string{"error": "invalid_token"})
		return
	}
	if always403 || (need != "" && !slices.Contains(is.scopes, need)) {
		if need == "" {
			need = "admin"
		}
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q, resource_metadata=%q`, need, f.prmURL()))
		writeJSON(w, 403, map[string]string{"error": "insufficient_scope"})
		return
	}
	if next != nil {
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		next(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = io.WriteString(w, "ok "+m.Method)
}

// autoApprove is the user agent of the tests: it sends the
// authorization request and returns where the server redirects.
func autoApprove(ctx context.Context, authURL string) (string, error) {
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	loc, err := resp.Location()
	if err != nil {
		return "", err
	}
	return loc.String(), nil
}
