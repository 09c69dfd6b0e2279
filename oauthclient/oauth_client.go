package oauthclient

import (
	"context"
	"crypto"
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

// Grant selects how an OAuth client obtains its access tokens.
type Grant string

const (
	// GrantAuthorizationCode is the default: the authorization code
	// grant with PKCE, a user agent completing the authorization request
	// through Config.Authorize.
	GrantAuthorizationCode Grant = "authorization_code"
	// GrantClientCredentials is the client credentials grant of the
	// io.modelcontextprotocol/oauth-client-credentials extension: the
	// client authenticates with ClientSecret or PrivateKey.
	GrantClientCredentials Grant = "client_credentials"
	// GrantJWTBearer is the RFC 7523 JWT bearer grant (workload
	// identity federation, io.modelcontextprotocol/auth/wif): the
	// assertion comes from Config.Assertion.
	GrantJWTBearer Grant = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	// GrantEnterprise is enterprise-managed authorization
	// (io.modelcontextprotocol/enterprise-managed-authorization): an
	// RFC 8693 token exchange of an identity token at the enterprise
	// identity provider for an ID-JAG, then a JWT bearer grant of that
	// ID-JAG at the MCP server's authorization server.
	GrantEnterprise Grant = "enterprise"
)

// Enterprise configures GrantEnterprise.
type Enterprise struct {
	// TokenEndpoint is the identity provider's token endpoint.
	TokenEndpoint string
	// ClientID and ClientSecret are the client's registration at the
	// identity provider (the secret may be empty).
	ClientID     string
	ClientSecret pmcp.Secret
	// IDToken returns the user's identity token from the provider.
	IDToken func(ctx context.Context) (pmcp.Secret, error)
}

// Config turns on MCP authorization in the HTTP client
// (HTTPClientOptions.Authorizer). When the server answers 401, or 403 with
// error="insufficient_scope", the client discovers the protected resource
// metadata and the authorization server, registers (pre-registered
// credentials, then a Client ID Metadata Document, then dynamic
// registration), obtains a token with the configured grant, and sends the
// request again with it; later requests carry it.
type Config struct {
	// Grant selects the grant; empty means GrantAuthorizationCode.
	Grant Grant

	// ClientID and ClientSecret are pre-registered credentials, used
	// first. They belong to the authorization server ClientIssuer names,
	// or, when it is empty, to the first one they are used with: when the
	// server moves to another authorization server they are not presented
	// there (SEP-2352), and the client registers anew if it can.
	ClientID     string
	ClientSecret pmcp.Secret
	ClientIssuer string
	// ClientMetadataURL is the https URL of the client's Client ID
	// Metadata Document, used as client_id with authorization servers
	// that advertise client_id_metadata_document_supported.
	ClientMetadataURL string
	// ClientName and ApplicationType ("native" or "web") go into dynamic
	// registration; empty means "pmcp" and, from RedirectURL, "native" for
	// a loopback redirect and "web" otherwise.
	ClientName      string
	ApplicationType string

	// PrivateKey, when set, authenticates the client with private_key_jwt
	// where the authorization server lists it (ECDSA, RSA or Ed25519;
	// ParsePrivateKeyPEM reads one). PrivateKeyID is its kid, if any.
	PrivateKey   crypto.Signer
	PrivateKeyID string

	// RedirectURL is the redirect URI of the authorization code grant.
	RedirectURL string
	// Authorize performs the user-agent step of the authorization code
	// grant: it takes the user to authURL and returns the URL the
	// authorization server redirected back to (RedirectURL with code,
	// state and iss). Required for GrantAuthorizationCode.
	Authorize func(ctx context.Context, authURL string) (redirectedURL string, err error)

	// Scopes are requested when neither the server's challenge nor its
	// protected resource metadata names any.
	Scopes []string
	// NoOfflineAccess stops the client asking for offline_access (a
	// refresh token) when the authorization server lists that scope.
	NoOfflineAccess bool

	// Assertion returns the JWT of GrantJWTBearer.
	Assertion func(ctx context.Context) (pmcp.Secret, error)
	// Enterprise configures GrantEnterprise.
	Enterprise *Enterprise

	// DPoPKey, when set, binds tokens to this key with DPoP (RFC 9449)
	// where the authorization server advertises a matching
	// dpop_signing_alg_values_supported: proofs go with every token
	// request and every request to the MCP server.
	DPoPKey crypto.Signer

	// TokenStore keeps credentials, keyed by resource and issuer; nil
	// means a MemoryTokenStore of the session's own.
	TokenStore TokenStore
	// MaxAuthorizations caps the authorizations (token requests after a
	// 401 or 403) made for one request, so that a server that keeps
	// refusing does not loop the client. Zero means 3.
	MaxAuthorizations int
	// FlowTimeout bounds one authorization (discovery, registration, the
	// user agent step and the token requests), within the request's own
	// context. Zero means 5 minutes.
	FlowTimeout time.Duration
	// HTTPClient sends the requests to authorization servers and metadata
	// endpoints; nil means one over the session's transport. Redirects
	// are never followed.
	HTTPClient *http.Client
}

// Defaults of Config.MaxAuthorizations and Config.FlowTimeout (their
// godoc states the values).
const (
	defaultMaxAuthorizations = 3
	defaultFlowTimeout       = 5 * time.Minute
)

// ErrPKCEUnsupported: the authorization server does not advertise
// PKCE with S256, so the client refuses the authorization code grant.
var ErrPKCEUnsupported = errors.New("pmcp: the authorization server does not support PKCE S256")

// ErrNoRegistration: the client has no way to obtain a client id at
// the authorization server (no usable pre-registered credentials, no
// Client ID Metadata Document support, no registration endpoint).
var ErrNoRegistration = errors.New("pmcp: no client registration available for the authorization server")

// ErrAuthorizationResponse: the authorization response (the
// redirect back to the client) is unusable: a wrong state, no code, or
// not the configured redirect URI.
var ErrAuthorizationResponse = errors.New("pmcp: invalid OAuth authorization response")

// Error is an error an authorization server answered with (RFC 6749
// §5.2), at the token or registration endpoint or in an authorization
// response.
type Error struct {
	Endpoint    string
	StatusCode  int
	Code        string
	Description string
}

func (e *Error) Error() string {
	s := "pmcp: OAuth error " + e.Code
	if e.Description != "" {
		s += ": " + e.Description
	}
	if e.Endpoint != "" {
		s += " (from " + e.Endpoint
		if e.StatusCode != 0 {
			s += fmt.Sprintf(", HTTP %d", e.StatusCode)
		}
		s += ")"
	}
	return s
}

// oauthTransport is the http.RoundTripper of an OAuth-enabled session: it
// attaches the current token and runs the authorization flow on 401/403.
type oauthTransport struct {
	base     http.RoundTripper
	as       *http.Client
	cfg      *Config
	endpoint *url.URL
	store    TokenStore
	maxAuth  int
	dpop     *dpopSigner
	log      *slog.Logger
	now      func() time.Time

	flowSem chan struct{} // one authorization at a time
	timeout time.Duration

	mu       sync.Mutex
	key      TokenKey
	token    pmcp.Secret
	dpopTok  bool // token is DPoP-bound
	terminal error
	// preIssuer is the issuer the pre-registered client was first used
	// with (when Config.ClientIssuer is empty).
	preIssuer string
}

func newOAuthTransport(base http.RoundTripper, cfg *Config, endpoint string, log *slog.Logger) (*oauthTransport, error) {
	if base == nil {
		base = http.DefaultTransport
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, err
	}
	o := &oauthTransport{base: base, cfg: cfg, endpoint: u, store: cfg.TokenStore, maxAuth: cfg.MaxAuthorizations,
		log: log, now: time.Now, flowSem: make(chan struct{}, 1), timeout: cfg.FlowTimeout}
	if o.timeout <= 0 {
		o.timeout = defaultFlowTimeout
	}
	if o.store == nil {
		o.store = &MemoryTokenStore{}
	}
	if o.maxAuth <= 0 {
		o.maxAuth = defaultMaxAuthorizations
	}
	if cfg.DPoPKey != nil {
		if o.dpop, err = newDPoPSigner(cfg.DPoPKey); err != nil {
			return nil, err
		}
	}
	if cfg.HTTPClient != nil {
		c := *cfg.HTTPClient
		c.CheckRedirect = noRedirect
		o.as = &c
	} else {
		o.as = &http.Client{Transport: base, CheckRedirect: noRedirect}
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// capPeerString bounds a server-controlled string before it enters an
// error or a log record, as the pmcp client does.
func capPeerString(s string) string { return peer.CapString(s, peer.MaxStringBytes) }

func (o *oauthTransport) current() (pmcp.Secret, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.token, o.dpopTok
}

// maxNonceRetries caps the retries of one request for use_dpop_nonce.
const maxNonceRetries = 2

// RoundTrip implements http.RoundTripper.
func (o *oauthTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !peer.SameOrigin(req.URL, o.endpoint) {
		// A redirect elsewhere: the token is for this server only.
		return o.base.RoundTrip(req)
	}
	attempts, nonceRetries := 0, 0
	for first := true; ; first = false {
		tok, bound := o.current()
		r := req
		if tok != "" || !first {
			// A token goes on a copy (the caller's request is not
			// written), and a request sent again needs a new body. Until
			// a server asks for a token (many never do), the request goes
			// out as it is.
			var err error
			if r, err = cloneRequest(req, !first); err != nil {
				return nil, err
			}
		}
		if tok != "" {
			if bound && o.dpop != nil {
				proof, err := o.dpop.proof(r.Method, r.URL, tok.Reveal(), o.now())
				if err != nil {
					return nil, err
				}
				r.Header.Set("Authorization", "DPoP "+tok.Reveal())
				r.Header.Set("DPoP", proof)
			} else {
				r.Header.Set("Authorization", "Bearer "+tok.Reveal())
			}
		}
		resp, err := o.base.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		if o.dpop != nil && bound {
			o.dpop.setNonce(r.URL, resp.Header.Get("DPoP-Nonce"))
		}
		if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
			return resp, nil
		}
		if !replayable(req) {
			return resp, nil
		}
		chs := oauth.ParseChallenges(resp.Header.Values("WWW-Authenticate"))
		errCode := oauth.ChallengeParam(chs, "error")
		if errCode == "use_dpop_nonce" && bound && o.dpop != nil && nonceRetries < maxNonceRetries && resp.Header.Get("DPoP-Nonce") != "" {
			nonceRetries++
			peer.DrainClose(resp.Body)
			continue
		}
		if resp.StatusCode == http.StatusForbidden && errCode != "insufficient_scope" {
			return resp, nil
		}
		if attempts >= o.maxAuth {
			return resp, nil
		}
		attempts++
		peer.DrainClose(resp.Body)
		if err := o.authorize(req.Context(), resp.StatusCode, chs, tok); err != nil {
			return nil, refusal(resp, err)
		}
	}
}

// replayable reports whether req can be sent again (no body, or a
// GetBody to make it anew).
func replayable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// cloneRequest copies req to be sent with headers of its own (again: with
// a new body from GetBody, if it has one). Only the header map is new:
// the rest (URL, values of the headers kept) is shared with req, as the
// base transport only reads it, and a header is changed by replacing its
// values (Header.Set), never by writing them.
func cloneRequest(req *http.Request, again bool) (*http.Request, error) {
	r := new(http.Request)
	*r = *req
	r.Header = make(http.Header, len(req.Header)+2) // + Authorization, DPoP
	for k, vs := range req.Header {
		r.Header[k] = vs
	}
	if again && req.GetBody != nil {
		b, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		r.Body = b
	}
	return r, nil
}

// refusal is the error of a request the server refused (401, or 403
// insufficient_scope) when no token could be obtained: what the server
// said, as an *pmcp.HTTPStatusError with its challenge (for a 401 wrapped in
// pmcp.ErrAuthorizationRequired), and why the flow failed. Reporting only the
// flow's failure would hide why the server refused in the first place (an
// expired token, another audience).
func refusal(resp *http.Response, flowErr error) error {
	se := statusError(resp)
	if resp.StatusCode == http.StatusUnauthorized {
		return fmt.Errorf("%w: %w; obtaining a token failed: %w", pmcp.ErrAuthorizationRequired, se, flowErr)
	}
	return fmt.Errorf("pmcp: %w; obtaining a token failed: %w", se, flowErr)
}

// statusError is what the server said refusing a request: its status
// and challenge (bounded).
func statusError(resp *http.Response) *pmcp.HTTPStatusError {
	return &pmcp.HTTPStatusError{StatusCode: resp.StatusCode, WWWAuthenticate: capPeerString(resp.Header.Get("WWW-Authenticate"))}
}

// authorize obtains a new token after the server refused rejected with
// status (401 or 403) and challenges chs.
func (o *oauthTransport) authorize(ctx context.Context, status int, chs []oauth.Challenge, rejected pmcp.Secret) error {
	select {
	case o.flowSem <- struct{}{}:
		defer func() { <-o.flowSem }()
	case <-ctx.Done():
		return ctx.Err()
	}
	o.mu.Lock()
	if o.terminal != nil {
		err := o.terminal
		o.mu.Unlock()
		return err
	}
	if o.token != rejected {
		// another request obtained a token meanwhile
		o.mu.Unlock()
		return nil
	}
	o.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	err := o.flow(ctx, status, chs, rejected)
	if err != nil {
		o.log.Debug("pmcp: OAuth authorization failed", "error", err)
	}
	return err
}

// flowState carries one authorization.
type flowState struct {
	prm      *oauth.ProtectedResourceMetadata
	meta     *oauth.AuthServerMetadata
	key      TokenKey
	creds    *Credentials
	resource string
}

func (o *oauthTransport) flow(ctx context.Context, status int, chs []oauth.Challenge, rejected pmcp.Secret) error {
	prm, err := oauth.DiscoverProtectedResource(ctx, o.as, o.endpoint.String(), oauth.ChallengeParam(chs, "resource_metadata"))
	if err != nil {
		return err
	}
	fs := &flowState{prm: prm}
	var issuer string
	if prm != nil {
		if len(prm.AuthorizationServers) == 0 {
			return fmt.Errorf("%w: the protected resource metadata lists no authorization server", ErrMetadata)
		}
		issuer, fs.resource = prm.AuthorizationServers[0], prm.Resource
	} else {
		// 2025-03-26: no protected resource metadata; the MCP server's
		// origin is the authorization server.
		issuer = o.endpoint.Scheme + "://" + o.endpoint.Host
		if fs.resource, err = oauth.CanonicalURL(o.endpoint); err != nil {
			return fmt.Errorf("%w: the endpoint is not a resource URI: %w", ErrMetadata, err)
		}
	}
	if fs.meta, err = discoverAS(ctx, o.as, issuer, prm == nil); err != nil {
		return err
	}
	fs.key = TokenKey{Resource: fs.resource, Issuer: fs.meta.Issuer}
	if fs.creds, err = o.store.Load(ctx, fs.key); err != nil {
		return err
	}
	if fs.creds == nil {
		fs.creds = &Credentials{}
	}
	o.mu.Lock()
	if o.key != fs.key && o.key.Issuer != "" {
		o.log.Debug("pmcp: OAuth authorization server changed", "from", o.key.Issuer, "to", issuer)
	}
	o.mu.Unlock()

	if status == http.StatusUnauthorized {
		// A stored token other than the rejected one (another session
		// refreshed it) is tried first, then the refresh token.
		if c := fs.creds; c.AccessToken != "" && c.AccessToken != rejected && (c.Expiry.IsZero() || o.now().Before(c.Expiry)) {
			o.adopt(fs.key, c)
			return nil
		}
		if fs.creds.RefreshToken != "" && fs.creds.ClientID != "" {
			err := o.refresh(ctx, fs)
			if err == nil {
				return nil
			}
			var oe *Error
			if errors.As(err, &oe) && oe.Code == "invalid_grant" {
				fs.creds.clearTokens()
				if err := o.store.Save(ctx, fs.key, fs.creds); err != nil {
					return err
				}
			} else if ctx.Err() != nil {
				return err
			}
			o.log.Debug("pmcp: OAuth refresh failed; authorizing again", "error", err)
		}
	}

	scopes := o.selectScopes(fs, status, oauth.ChallengeParam(chs, "scope"))
	grant := o.cfg.Grant
	if grant == "" {
		grant = GrantAuthorizationCode
	}
	if err := o.ensureClient(ctx, fs, grant); err != nil {
		return err
	}
	var tr *tokenResponse
	switch grant {
	case GrantAuthorizationCode:
		tr, err = o.authorizationCode(ctx, fs, scopes)
	case GrantClientCredentials:
		tr, err = o.clientCredentials(ctx, fs, scopes)
	case GrantJWTBearer:
		tr, err = o.jwtBearer(ctx, fs, scopes)
	case GrantEnterprise:
		tr, err = o.enterprise(ctx, fs, scopes)
	default:
		return fmt.Errorf("pmcp: unknown OAuth grant %q", grant)
	}
	if err != nil {
		var oe *Error
		if grant != GrantAuthorizationCode && errors.As(err, &oe) && permanentGrantError(oe.Code) {
			// Non-interactive grants are not retried: the same
			// credentials would be refused again.
			o.mu.Lock()
			o.terminal = err
			o.mu.Unlock()
		}
		return err
	}
	fs.creds.Scopes = scopes
	return o.accept(ctx, fs, tr)
}

// permanentGrantError reports whether a token endpoint error means the
// same credentials will be refused again (RFC 6749 §5.2, RFC 7523 §3.1).
func permanentGrantError(code string) bool {
	switch code {
	case "invalid_grant", "invalid_client", "invalid_scope", "unauthorized_client", "unsupported_grant_type":
		return true
	}
	return false
}

// selectScopes picks the scopes to request: the challenge's, else the
// protected resource metadata's scopes_supported, else the configured
// ones; on a repeated authorization for the same resource and issuer the
// union with those requested before (SEP-2350). offline_access is asked
// for only when the authorization server lists it (SEP-2207).
func (o *oauthTransport) selectScopes(fs *flowState, status int, challenged string) []string {
	var scopes []string
	switch {
	case strings.TrimSpace(challenged) != "":
		scopes = strings.Fields(challenged)
	case fs.prm != nil && len(fs.prm.ScopesSupported) > 0:
		scopes = slices.Clone(fs.prm.ScopesSupported)
	default:
		scopes = slices.Clone(o.cfg.Scopes)
	}
	if status == http.StatusForbidden || fs.creds.AccessToken != "" {
		for _, s := range fs.creds.Scopes {
			if !slices.Contains(scopes, s) {
				scopes = append(scopes, s)
			}
		}
	}
	offline := slices.Contains(fs.meta.ScopesSupported, "offline_access")
	scopes = slices.DeleteFunc(scopes, func(s string) bool { return s == "offline_access" && !offline })
	grant := o.cfg.Grant
	if offline && !o.cfg.NoOfflineAccess && (grant == "" || grant == GrantAuthorizationCode) && !slices.Contains(scopes, "offline_access") {
		scopes = append(scopes, "offline_access")
	}
	return scopes
}

// accept stores a token response and makes it the session's token.
func (o *oauthTransport) accept(ctx context.Context, fs *flowState, tr *tokenResponse) error {
	c := fs.creds
	c.AccessToken = pmcp.Secret(tr.AccessToken)
	c.TokenType = "Bearer"
	if strings.EqualFold(tr.TokenType, "DPoP") {
		if o.dpop == nil {
			return fmt.Errorf("pmcp: the authorization server issued a DPoP-bound token without a DPoP proof")
		}
		c.TokenType = "DPoP"
	}
	if tr.RefreshToken != "" {
		c.RefreshToken = pmcp.Secret(tr.RefreshToken)
	}
	c.Expiry = time.Time{}
	if tr.ExpiresIn > 0 {
		c.Expiry = o.now().Add(time.Duration(tr.ExpiresIn) * time.Second)
	}
	if err := o.store.Save(ctx, fs.key, c); err != nil {
		return err
	}
	o.adopt(fs.key, c)
	return nil
}

func (o *oauthTransport) adopt(key TokenKey, c *Credentials) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.key, o.token, o.dpopTok = key, c.AccessToken, c.TokenType == "DPoP"
}

var _ pmcp.HTTPAuthorizer = (*Config)(nil)

// Wrap implements pmcp.HTTPAuthorizer: it checks the configuration and
// returns the transport that attaches the session's token to requests to
// endpoint and runs the authorization flow when the server refuses (base,
// nil meaning http.DefaultTransport, sends the requests). A nil *Config
// returns base: no OAuth.
func (cfg *Config) Wrap(base http.RoundTripper, endpoint string, log *slog.Logger) (http.RoundTripper, error) {
	if cfg == nil {
		return base, nil
	}
	if err := validateConfig(cfg); err != nil {
		return nil, err
	}
	return newOAuthTransport(base, cfg, endpoint, log)
}

// validateConfig reports configuration errors before any request.
func validateConfig(cfg *Config) error {
	if cfg == nil {
		return nil
	}
	if cfg.DPoPKey != nil {
		if _, err := oauth.NewSigner(cfg.DPoPKey); err != nil {
			return fmt.Errorf("pmcp: oauthclient.Config.DPoPKey: %w", err)
		}
	}
	if cfg.PrivateKey != nil {
		if _, err := oauth.NewSigner(cfg.PrivateKey); err != nil {
			return fmt.Errorf("pmcp: oauthclient.Config.PrivateKey: %w", err)
		}
	}
	switch cfg.Grant {
	case "", GrantAuthorizationCode:
		if cfg.Authorize == nil || cfg.RedirectURL == "" {
			return errors.New("pmcp: oauthclient.Config: the authorization code grant needs Authorize and RedirectURL")
		}
	case GrantClientCredentials:
		if cfg.ClientID == "" || (cfg.ClientSecret == "" && cfg.PrivateKey == nil) {
			return errors.New("pmcp: oauthclient.Config: the client credentials grant needs ClientID and ClientSecret or PrivateKey")
		}
	case GrantJWTBearer:
		if cfg.Assertion == nil {
			return errors.New("pmcp: oauthclient.Config: the JWT bearer grant needs Assertion")
		}
	case GrantEnterprise:
		if cfg.Enterprise == nil || cfg.Enterprise.IDToken == nil || cfg.Enterprise.TokenEndpoint == "" {
			return errors.New("pmcp: oauthclient.Config: enterprise-managed authorization needs Enterprise.TokenEndpoint and Enterprise.IDToken")
		}
	default:
		return fmt.Errorf("pmcp: oauthclient.Config: unknown grant %q", cfg.Grant)
	}
	return nil
}

// String describes the configuration without its secrets or keys.
func (c Config) String() string {
	grant := c.Grant
	if grant == "" {
		grant = GrantAuthorizationCode
	}
	s := fmt.Sprintf("oauthclient.Config{Grant:%s ClientID:%q RedirectURL:%q ClientMetadataURL:%q Scopes:%q", grant, c.ClientID, c.RedirectURL, c.ClientMetadataURL, c.Scopes)
	redacted := pmcp.Secret("").String() // the one redaction marker
	if c.ClientSecret != "" {
		s += " ClientSecret:" + redacted
	}
	if c.PrivateKey != nil {
		s += " PrivateKey:" + redacted
	}
	if c.DPoPKey != nil {
		s += " DPoPKey:" + redacted
	}
	return s + "}"
}

// GoString implements fmt.GoStringer, as String.
func (c Config) GoString() string { return c.String() }

// Format makes every fmt verb print String.
func (c Config) Format(f fmt.State, _ rune) { fmt.Fprint(f, c.String()) }

// LogValue implements slog.LogValuer, as String.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }
