package interop

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// The authorization code half of ccStorage (op.AuthStorage): requests,
// codes, access and refresh tokens (rotated on every refresh).

type acRequest struct {
	id, clientID, redirectURI, state, nonce string
	scopes, audience                        []string
	challenge                               *oidc.CodeChallenge
	responseType                            oidc.ResponseType
	responseMode                            oidc.ResponseMode
	subject                                 string
	authTime                                time.Time
	done                                    bool
}

func (r *acRequest) GetID() string                         { return r.id }
func (r *acRequest) GetACR() string                        { return "" }
func (r *acRequest) GetAMR() []string                      { return []string{"pwd"} }
func (r *acRequest) GetAudience() []string                 { return r.audience }
func (r *acRequest) GetAuthTime() time.Time                { return r.authTime }
func (r *acRequest) GetClientID() string                   { return r.clientID }
func (r *acRequest) GetCodeChallenge() *oidc.CodeChallenge { return r.challenge }
func (r *acRequest) GetNonce() string                      { return r.nonce }
func (r *acRequest) GetRedirectURI() string                { return r.redirectURI }
func (r *acRequest) GetResponseType() oidc.ResponseType    { return r.responseType }
func (r *acRequest) GetResponseMode() oidc.ResponseMode    { return r.responseMode }
func (r *acRequest) GetScopes() []string                   { return r.scopes }
func (r *acRequest) GetState() string                      { return r.state }
func (r *acRequest) GetSubject() string                    { return r.subject }
func (r *acRequest) Done() bool                            { return r.done }

// acRefresh is what a refresh token stands for (op.RefreshTokenRequest).
type acRefresh struct {
	clientID, subject string
	audience, scopes  []string
	authTime          time.Time
}

func (r *acRefresh) GetAMR() []string             { return []string{"pwd"} }
func (r *acRefresh) GetAudience() []string        { return r.audience }
func (r *acRefresh) GetAuthTime() time.Time       { return r.authTime }
func (r *acRefresh) GetClientID() string          { return r.clientID }
func (r *acRefresh) GetScopes() []string          { return r.scopes }
func (r *acRefresh) GetSubject() string           { return r.subject }
func (r *acRefresh) SetCurrentScopes(sc []string) { r.scopes = sc }

func (s *ccStorage) CreateAuthRequest(_ context.Context, req *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	c, ok := s.clients[req.ClientID]
	if !ok {
		return nil, oidc.ErrInvalidClient()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	aud := c.audience
	if aud == "" {
		aud = s.resources[req.State]
	}
	delete(s.resources, req.State)
	if aud == "" {
		return nil, oidc.ErrInvalidRequest().WithDescription("the request names no resource")
	}
	r := &acRequest{
		id: "ar-" + strconv.FormatUint(s.ids.Add(1), 10), clientID: req.ClientID, redirectURI: req.RedirectURI,
		state: req.State, nonce: req.Nonce, scopes: req.Scopes, audience: []string{aud},
		responseType: req.ResponseType, responseMode: req.ResponseMode,
	}
	if req.CodeChallenge != "" {
		r.challenge = &oidc.CodeChallenge{Challenge: req.CodeChallenge, Method: req.CodeChallengeMethod}
	}
	s.requests[r.id] = r
	return r, nil
}

func (s *ccStorage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.requests[id]; ok {
		return r, nil
	}
	return nil, errors.New("unknown authorization request")
}

func (s *ccStorage) AuthRequestByCode(_ context.Context, code string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.requests[s.codes[code]]; ok {
		return r, nil
	}
	return nil, errors.New("unknown code")
}

func (s *ccStorage) SaveAuthCode(_ context.Context, id, code string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes[code] = id
	return nil
}

func (s *ccStorage) DeleteAuthRequest(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.requests, id)
	for c, rid := range s.codes {
		if rid == id {
			delete(s.codes, c)
		}
	}
	return nil
}

func (s *ccStorage) accessExpiry() time.Time {
	ttl := s.accessTTL
	if ttl == 0 {
		ttl = 5 * time.Minute
	}
	return s.now().Add(ttl)
}

func (s *ccStorage) CreateAccessToken(context.Context, op.TokenRequest) (string, time.Time, error) {
	return "at-" + strconv.FormatUint(s.ids.Add(1), 10), s.accessExpiry(), nil
}

func (s *ccStorage) CreateAccessAndRefreshTokens(_ context.Context, req op.TokenRequest, current string) (string, string, time.Time, error) {
	r := &acRefresh{subject: req.GetSubject(), audience: req.GetAudience(), scopes: req.GetScopes(), authTime: s.now()}
	if c, ok := req.(interface{ GetClientID() string }); ok {
		r.clientID = c.GetClientID()
	}
	rt := "rt-" + strconv.FormatUint(s.ids.Add(1), 10) + "-" + rand.Text()
	s.mu.Lock()
	delete(s.refreshes, current)
	s.refreshes[rt] = r
	s.mu.Unlock()
	return "at-" + strconv.FormatUint(s.ids.Add(1), 10), rt, s.accessExpiry(), nil
}

func (s *ccStorage) TokenRequestByRefreshToken(_ context.Context, rt string) (op.RefreshTokenRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.refreshes[rt]; ok {
		s.refreshGrants.Add(1)
		c := *r
		return &c, nil
	}
	return nil, op.ErrInvalidRefreshToken
}

// completeLogin is the login page's decision: user signed in for the
// request id; the scopes granted are those requested that the user may
// grant.
func (s *ccStorage) completeLogin(id, user string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.requests[id]
	if !ok {
		return errors.New("unknown authorization request")
	}
	if s.users != nil {
		allowed, known := s.users[user]
		if !known {
			return errors.New("unknown user")
		}
		r.scopes = slices.DeleteFunc(slices.Clone(r.scopes), func(sc string) bool {
			return sc != oidc.ScopeOfflineAccess && sc != oidc.ScopeOpenID && !slices.Contains(allowed, sc)
		})
	}
	r.subject, r.authTime, r.done = user, s.now(), true
	return nil
}

// startACProvider runs the zitadel/oidc provider on loopback with st
// behind a login page (/login: GET shows a form, POST id and username
// signs the user in and returns to the provider's callback). It returns
// the issuer.
func startACProvider(t *testing.T, st *ccStorage) (issuer string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer = "http://" + ln.Addr().String()
	var cryptoKey [32]byte
	if _, err := rand.Read(cryptoKey[:]); err != nil {
		t.Fatal(err)
	}
	provider, err := op.NewProvider(&op.Config{CryptoKey: cryptoKey, CodeMethodS256: true, GrantTypeRefreshToken: true}, st, op.StaticIssuer(issuer), op.WithAllowInsecure())
	if err != nil {
		t.Fatal(err)
	}
	callback := op.AuthCallbackURL(provider)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/login":
			if r.Method == http.MethodGet {
				fmt.Fprintf(w, `<form method="post"><input name="id" value="%s"><input name="username"></form>`, r.URL.Query().Get("authRequestID"))
				return
			}
			if err := r.ParseForm(); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			id := r.PostForm.Get("id")
			if err := st.completeLogin(id, r.PostForm.Get("username")); err != nil {
				http.Error(w, err.Error(), http.StatusForbidden)
				return
			}
			http.Redirect(w, r, callback(r.Context(), id), http.StatusFound)
			return
		case "/authorize":
			// zitadel/oidc does not read RFC 8707's resource: keep it for
			// CreateAuthRequest, keyed by the request's state.
			q := r.URL.Query()
			if res := q.Get("resource"); res != "" {
				st.mu.Lock()
				st.resources[q.Get("state")] = res
				st.mu.Unlock()
			}
		}
		provider.ServeHTTP(w, r)
	})
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: h}}
	srv.Start()
	t.Cleanup(srv.Close)
	return issuer
}

// acLogin is the scripted user agent: it follows the authorization
// request to the login page, signs in as user, and returns the provider's
// redirect back to the client (nothing listens there).
func acLogin(user string) func(ctx context.Context, authURL string) (string, error) {
	return func(ctx context.Context, authURL string) (string, error) {
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		do := func(req *http.Request) (*url.URL, error) {
			resp, err := c.Do(req)
			if err != nil {
				return nil, err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusFound && resp.StatusCode != http.StatusSeeOther {
				var e struct{ Error, ErrorDescription string }
				_ = json.NewDecoder(resp.Body).Decode(&e)
				return nil, fmt.Errorf("%s: %s %+v", req.URL, resp.Status, e)
			}
			return req.URL.Parse(resp.Header.Get("Location"))
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
		if err != nil {
			return "", err
		}
		login, err := do(req)
		if err != nil {
			return "", fmt.Errorf("authorize: %w", err)
		}
		if login.Path != "/login" {
			// An error redirect straight back to the client.
			return login.String(), nil
		}
		form := url.Values{"id": {login.Query().Get("authRequestID")}, "username": {user}}
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, login.String(), strings.NewReader(form.Encode()))
		if err != nil {
			return "", err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		cb, err := do(req)
		if err != nil {
			return "", fmt.Errorf("login: %w", err)
		}
		if req, err = http.NewRequestWithContext(ctx, http.MethodGet, cb.String(), nil); err != nil {
			return "", err
		}
		back, err := do(req)
		if err != nil {
			return "", fmt.Errorf("callback: %w", err)
		}
		return back.String(), nil
	}
}
