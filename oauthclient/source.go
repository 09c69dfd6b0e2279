package oauthclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/internal/peer"
	"github.com/gopmcp/pmcp/oauth"
)

// Token sources: a client acting on its own behalf (a gateway calling its
// upstreams) obtains its access token before the first request, rather
// than after a 401 as Config does, from a token endpoint it is configured
// with (TokenURL) or finds in its authorization server's metadata
// (Issuer, through package oauth). ClientCredentials and TokenExchange
// configure the two grants; NewClientCredentials and NewTokenExchange make
// a *Source of them, a pmcp.HTTPAuthorizer (HTTPClientOptions.Authorizer)
// whose sessions share its tokens (one per MCP endpoint). A token is kept
// until it expires and fetched anew shortly before (a fifth of its
// lifetime, at most a minute, ahead), one fetch at a time: the requests
// that still hold a valid token do not wait for it. A request the server
// answers 401 gets a new token and is sent once more; refused again, it
// fails with an error wrapping pmcp.ErrAuthorizationRequired and the
// *pmcp.HTTPStatusError. Secrets are never logged nor printed (the
// configurations print redacted).

// ClientCredentials configures the client credentials grant (RFC 6749
// §4.4).
type ClientCredentials struct {
	// TokenURL is the token endpoint; or Issuer, the authorization
	// server whose metadata (RFC 8414, OpenID discovery) names it. One is
	// required; TokenURL wins.
	TokenURL string
	Issuer   string
	// ClientID and ClientSecret authenticate the client
	// (client_secret_basic). ClientID is required.
	ClientID     string
	ClientSecret pmcp.Secret
	// Scopes are requested ("scope"); none means the server's default.
	Scopes []string
	// Resource is the RFC 8707 resource indicator sent; empty means the
	// canonical URI of the MCP endpoint (oauth.CanonicalURL).
	Resource string
	// HTTPClient sends the token and metadata requests; nil means one
	// over the session's transport. Redirects are never followed.
	HTTPClient *http.Client
}

// TokenExchange configures the token exchange grant (RFC 8693): a subject
// token the client holds (a workload identity token, another service's
// token) is exchanged for an access token to the MCP server.
type TokenExchange struct {
	// TokenURL or Issuer: as in ClientCredentials.
	TokenURL string
	Issuer   string
	// ClientID and ClientSecret authenticate the client
	// (client_secret_basic); without a secret the client id is sent in
	// the form, and with neither the client is not identified.
	ClientID     string
	ClientSecret pmcp.Secret
	// SubjectToken returns the token to exchange, at each exchange (so a
	// rotated file is read anew). Required.
	SubjectToken func(ctx context.Context) (pmcp.Secret, error)
	// SubjectTokenType is its RFC 8693 token type: a URI, or the last part
	// of one of urn:ietf:params:oauth:token-type:* ("jwt", "access_token",
	// "id_token", ...). Empty means "jwt".
	SubjectTokenType string
	// Audience names the target service ("audience"), if the
	// authorization server wants it; Resource is the resource indicator,
	// empty meaning the canonical URI of the MCP endpoint; Scopes are
	// requested.
	Audience string
	Resource string
	Scopes   []string
	// HTTPClient: as in ClientCredentials.
	HTTPClient *http.Client
}

const (
	tokenTypePrefix      = "urn:ietf:params:oauth:token-type:"
	tokenTypeAccessToken = tokenTypePrefix + "access_token"
	// sourceFetchTimeout bounds one token fetch (discovery included).
	sourceFetchTimeout = 30 * time.Second
	// maxEarlyRefresh bounds how long before its expiry a token is
	// replaced.
	maxEarlyRefresh = time.Minute
)

// NewClientCredentials checks c and returns its token source.
func NewClientCredentials(c ClientCredentials) (*Source, error) {
	if c.ClientID == "" {
		return nil, errors.New("pmcp: oauthclient.ClientCredentials needs ClientID")
	}
	scopes := slices.Clone(c.Scopes)
	return newSource("client credentials", c.TokenURL, c.Issuer, c.Resource, c.HTTPClient, "",
		func(_ context.Context, resource string) (url.Values, func(*http.Request), error) {
			form := url.Values{"grant_type": {string(GrantClientCredentials)}, "resource": {resource}}
			return form, secretAuth(c.ClientID, c.ClientSecret, scopeForm(form, scopes)), nil
		})
}

// NewTokenExchange checks x and returns its token source.
func NewTokenExchange(x TokenExchange) (*Source, error) {
	if x.SubjectToken == nil {
		return nil, errors.New("pmcp: oauthclient.TokenExchange needs SubjectToken")
	}
	scopes := slices.Clone(x.Scopes)
	subjectType := expandTokenType(x.SubjectTokenType, "jwt")
	return newSource("token exchange", x.TokenURL, x.Issuer, x.Resource, x.HTTPClient, tokenTypeAccessToken,
		func(ctx context.Context, resource string) (url.Values, func(*http.Request), error) {
			st, err := x.SubjectToken(ctx)
			if err != nil {
				return nil, nil, fmt.Errorf("pmcp: token exchange: the subject token: %w", err)
			}
			if st == "" {
				return nil, nil, errors.New("pmcp: token exchange: the subject token is empty")
			}
			form := url.Values{
				"grant_type":           {grantTokenExchange},
				"subject_token":        {st.Reveal()},
				"subject_token_type":   {subjectType},
				"requested_token_type": {tokenTypeAccessToken},
				"resource":             {resource},
			}
			if x.Audience != "" {
				form.Set("audience", x.Audience)
			}
			return form, secretAuth(x.ClientID, x.ClientSecret, scopeForm(form, scopes)), nil
		})
}

// expandTokenType turns a short RFC 8693 token type ("jwt") into its URI.
func expandTokenType(t, def string) string {
	if t == "" {
		t = def
	}
	if !strings.Contains(t, ":") {
		t = tokenTypePrefix + t
	}
	return t
}

// Source is a token source (see NewClientCredentials, NewTokenExchange):
// a pmcp.HTTPAuthorizer whose sessions with one MCP endpoint share one
// token.
type Source struct {
	grant    string // for errors and logs
	tokenURL string // "" until discovered from issuer (see tokens.tokenURL)
	issuer   string
	resource string // "" means each endpoint's canonical URI
	client   *http.Client
	// form builds a token request (its form, its client authentication).
	form func(ctx context.Context, resource string) (url.Values, func(*http.Request), error)
	// issued is the issued_token_type required of an answer, if any.
	issued string
	now    func() time.Time

	mu sync.Mutex
	// tokens are the tokens per resource (one per MCP endpoint the
	// source is used with).
	tokens map[string]*tokens
}

var _ pmcp.HTTPAuthorizer = (*Source)(nil)

// tokens is a Source's token for one resource.
type tokens struct {
	fetching chan struct{} // one fetch at a time

	mu        sync.Mutex
	tokenURL  string // discovered once
	token     pmcp.Secret
	expiry    time.Time // zero: no expires_in, kept until refused
	refreshAt time.Time
}

func newSource(grant, tokenURL, issuer, resource string, client *http.Client, issued string,
	form func(context.Context, string) (url.Values, func(*http.Request), error)) (*Source, error) {
	switch {
	case tokenURL != "":
		if _, err := oauth.CheckCredentialURL(tokenURL); err != nil {
			return nil, fmt.Errorf("pmcp: oauthclient %s: tokenURL: %w", grant, err)
		}
	case issuer != "":
		if _, err := oauth.CheckIssuerURL(issuer); err != nil {
			return nil, fmt.Errorf("pmcp: oauthclient %s: issuer: %w", grant, err)
		}
	default:
		return nil, fmt.Errorf("pmcp: oauthclient %s needs TokenURL or Issuer", grant)
	}
	if client != nil {
		c := *client
		c.CheckRedirect = noRedirect
		client = &c
	}
	return &Source{grant: grant, tokenURL: tokenURL, issuer: issuer, resource: resource, client: client, form: form, issued: issued,
		now: time.Now, tokens: map[string]*tokens{}}, nil
}

// Wrap implements pmcp.HTTPAuthorizer: the transport it returns gives
// the requests to endpoint the source's token for endpoint (base, nil
// meaning http.DefaultTransport, sends them, and the token requests
// unless the configuration has an HTTPClient).
func (src *Source) Wrap(base http.RoundTripper, endpoint string, log *slog.Logger) (http.RoundTripper, error) {
	if base == nil {
		base = http.DefaultTransport
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, err
	}
	resource := src.resource
	if resource == "" {
		if resource, err = oauth.CanonicalURL(u); err != nil {
			return nil, fmt.Errorf("pmcp: oauthclient %s: the endpoint is not a resource URI: %w", src.grant, err)
		}
	}
	src.mu.Lock()
	tk := src.tokens[resource]
	if tk == nil {
		tk = &tokens{fetching: make(chan struct{}, 1), tokenURL: src.tokenURL}
		src.tokens[resource] = tk
	}
	src.mu.Unlock()
	s := &sourceTransport{src: src, tk: tk, base: base, endpoint: u, resource: resource, log: log, as: src.client}
	if s.as == nil {
		s.as = &http.Client{Transport: base, CheckRedirect: noRedirect}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// String names the source's grant and token endpoint (never a secret).
func (src *Source) String() string {
	return fmt.Sprintf("oauthclient.Source{%s TokenURL:%q Issuer:%q}", src.grant, src.tokenURL, src.issuer)
}

// sourceTransport is the http.RoundTripper of one session of a Source.
type sourceTransport struct {
	src      *Source
	tk       *tokens
	base     http.RoundTripper
	as       *http.Client
	endpoint *url.URL
	resource string
	log      *slog.Logger
}

// RoundTrip implements http.RoundTripper.
func (s *sourceTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !peer.SameOrigin(req.URL, s.endpoint) {
		// A redirect elsewhere: the token is for this server only.
		return s.base.RoundTrip(req)
	}
	tok, err := s.get(req.Context(), "")
	if err != nil {
		return nil, err
	}
	resp, err := s.send(req, tok, false)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	if !replayable(req) {
		return resp, nil // cannot be sent again
	}
	peer.DrainClose(resp.Body)
	if tok, err = s.get(req.Context(), tok); err != nil {
		return nil, err
	}
	if resp, err = s.send(req, tok, true); err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	se := statusError(resp)
	peer.DrainClose(resp.Body)
	return nil, fmt.Errorf("%w: %w: the server refused a token just obtained with the %s grant from %s", pmcp.ErrAuthorizationRequired, se, s.src.grant, s.tokenURL())
}

// send sends req (again) with tok.
func (s *sourceTransport) send(req *http.Request, tok pmcp.Secret, again bool) (*http.Response, error) {
	r, err := cloneRequest(req, again)
	if err != nil {
		return nil, err
	}
	r.Header.Set("Authorization", "Bearer "+tok.Reveal())
	return s.base.RoundTrip(r)
}

func (s *sourceTransport) tokenURL() string {
	s.tk.mu.Lock()
	defer s.tk.mu.Unlock()
	if s.tk.tokenURL != "" {
		return s.tk.tokenURL
	}
	return s.src.issuer
}

// get returns the token to send: the one held while it is valid, not
// due for refresh and not rejected (a token the server just refused),
// else a new one.
func (s *sourceTransport) get(ctx context.Context, rejected pmcp.Secret) (pmcp.Secret, error) {
	tok, valid, due := s.held(rejected)
	if valid && !due {
		return tok, nil
	}
	select {
	case s.tk.fetching <- struct{}{}:
	default:
		if valid {
			return tok, nil // another request is fetching its successor
		}
		select {
		case s.tk.fetching <- struct{}{}:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	defer func() { <-s.tk.fetching }()
	if t, v, d := s.held(rejected); v && !d {
		return t, nil // fetched while this request waited
	}
	fresh, err := s.fetch(ctx)
	if err != nil {
		if valid && ctx.Err() == nil {
			s.log.Warn("pmcp: OAuth token refresh failed; the current token is used until it expires", "grant", s.src.grant, "error", err)
			return tok, nil
		}
		return "", err
	}
	return fresh, nil
}

// held reports the token held, whether it may be sent, and whether it is
// due for refresh.
func (s *sourceTransport) held(rejected pmcp.Secret) (tok pmcp.Secret, valid, due bool) {
	now := s.src.now()
	t := s.tk
	t.mu.Lock()
	defer t.mu.Unlock()
	valid = t.token != "" && t.token != rejected && (t.expiry.IsZero() || now.Before(t.expiry))
	due = !t.refreshAt.IsZero() && !now.Before(t.refreshAt)
	return t.token, valid, due
}

// fetch obtains a new token and keeps it; called by the one request
// holding tk.fetching.
func (s *sourceTransport) fetch(ctx context.Context) (pmcp.Secret, error) {
	ctx, cancel := context.WithTimeout(ctx, sourceFetchTimeout)
	defer cancel()
	src, t := s.src, s.tk
	t.mu.Lock()
	endpoint := t.tokenURL
	t.mu.Unlock()
	if endpoint == "" {
		meta, err := discoverAS(ctx, s.as, src.issuer, false)
		if err != nil {
			return "", fmt.Errorf("pmcp: %s: discovering the token endpoint of %s: %w", src.grant, src.issuer, err)
		}
		if _, err := oauth.CheckCredentialURL(meta.TokenEndpoint); err != nil {
			return "", fmt.Errorf("pmcp: %s: %w", src.grant, err)
		}
		endpoint = meta.TokenEndpoint
		t.mu.Lock()
		t.tokenURL = endpoint
		t.mu.Unlock()
	}
	form, auth, err := src.form(ctx, s.resource)
	if err != nil {
		return "", err
	}
	var tr tokenResponse
	if err := postForm(ctx, s.as, endpoint, form, auth, nil, src.now, &tr); err != nil {
		return "", err
	}
	if err := tr.check(endpoint); err != nil {
		return "", err
	}
	if src.issued != "" && tr.IssuedTokenType != "" && tr.IssuedTokenType != src.issued {
		return "", fmt.Errorf("pmcp: %s: the %s issued %q, not an access token", endpoint, src.grant, capPeerString(tr.IssuedTokenType))
	}
	now := src.now()
	tok := pmcp.Secret(tr.AccessToken)
	t.mu.Lock()
	t.token, t.expiry, t.refreshAt = tok, time.Time{}, time.Time{}
	if tr.ExpiresIn > 0 {
		life := time.Duration(tr.ExpiresIn) * time.Second
		t.expiry = now.Add(life)
		t.refreshAt = t.expiry.Add(-min(life/5, maxEarlyRefresh))
	}
	t.mu.Unlock()
	s.log.Debug("pmcp: OAuth token obtained", "grant", src.grant, "token_endpoint", endpoint, "expires_in", int64(tr.ExpiresIn))
	return tok, nil
}

// String describes the configuration without its secret.
func (c ClientCredentials) String() string {
	return fmt.Sprintf("oauthclient.ClientCredentials{TokenURL:%q Issuer:%q ClientID:%q ClientSecret:%v Scopes:%q Resource:%q}",
		c.TokenURL, c.Issuer, c.ClientID, c.ClientSecret, c.Scopes, c.Resource)
}

// GoString implements fmt.GoStringer, as String.
func (c ClientCredentials) GoString() string { return c.String() }

// Format makes every fmt verb print String.
func (c ClientCredentials) Format(f fmt.State, _ rune) { fmt.Fprint(f, c.String()) }

// LogValue implements slog.LogValuer, as String.
func (c ClientCredentials) LogValue() slog.Value { return slog.StringValue(c.String()) }

// String describes the configuration without its secrets.
func (x TokenExchange) String() string {
	return fmt.Sprintf("oauthclient.TokenExchange{TokenURL:%q Issuer:%q ClientID:%q ClientSecret:%v SubjectTokenType:%q Audience:%q Resource:%q Scopes:%q}",
		x.TokenURL, x.Issuer, x.ClientID, x.ClientSecret, x.SubjectTokenType, x.Audience, x.Resource, x.Scopes)
}

// GoString implements fmt.GoStringer, as String.
func (x TokenExchange) GoString() string { return x.String() }

// Format makes every fmt verb print String.
func (x TokenExchange) Format(f fmt.State, _ rune) { fmt.Fprint(f, x.String()) }

// LogValue implements slog.LogValuer, as String.
func (x TokenExchange) LogValue() slog.Value { return slog.StringValue(x.String()) }
