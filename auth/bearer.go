package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/oauth"
)

// Default limits of the resource server. Each option that uses one says
// so; zero in an option means the default.
const (
	// DefaultMaxTokenBytes caps an access token (and a DPoP proof).
	DefaultMaxTokenBytes = 16 << 10
	// DefaultLeeway is the clock skew allowed on exp, nbf and iat.
	DefaultLeeway = 60 * time.Second
)

// ErrInvalidToken: the access token is not acceptable (bad signature,
// wrong issuer or audience, expired, inactive, ...). Verifiers wrap it;
// errors.Is finds it.
var ErrInvalidToken = errors.New("auth: invalid access token")

// ErrVerifierUnavailable: the token could not be checked because a key
// set or an introspection endpoint could not be read. It is answered
// like an invalid token (401), never with access.
var ErrVerifierUnavailable = errors.New("auth: token verifier unavailable")

// Token is what a TokenVerifier learned from a valid access token.
type Token struct {
	// Subject is the principal (the "sub" claim): legacy sessions and
	// multi-round-trip request state are bound to it.
	Subject string
	// ClientID is the OAuth client the token was issued to.
	ClientID string
	// Issuer is the authorization server that issued the token.
	Issuer string
	// Audience lists the resources the token is valid for.
	Audience []string
	// Scopes are the granted scopes.
	Scopes []string
	// ExpiresAt is the expiry; never zero for a token the shipped
	// verifiers accept.
	ExpiresAt time.Time
	// JKT is the SHA-256 JWK thumbprint the token is bound to
	// ("cnf.jkt", RFC 9449 §6); empty for an unbound bearer token.
	JKT string
	// Claims are the token's claims (JWT payload or introspection
	// response), for authorization decisions beyond scopes. Treat them as
	// read-only: a verifier may cache and share a Token.
	Claims map[string]any
}

// TokenVerifier checks an access token. It returns an error wrapping
// ErrInvalidToken for a token it refuses, and one wrapping
// ErrVerifierUnavailable when it could not decide. It is called
// concurrently.
type TokenVerifier interface {
	VerifyToken(ctx context.Context, token string) (*Token, error)
}

// TokenVerifierFunc adapts a function to TokenVerifier.
type TokenVerifierFunc func(ctx context.Context, token string) (*Token, error)

// VerifyToken calls f.
func (f TokenVerifierFunc) VerifyToken(ctx context.Context, token string) (*Token, error) {
	return f(ctx, token)
}

var _ TokenVerifier = TokenVerifierFunc(nil)

// DPoPMode says whether the Authenticator accepts DPoP-bound tokens.
type DPoPMode int

const (
	// DPoPDisabled (zero) accepts only "Authorization: Bearer". A token
	// bound to a key (cnf.jkt) is still refused when sent as a bearer
	// token.
	DPoPDisabled DPoPMode = iota
	// DPoPAllowed accepts both Bearer and DPoP (RFC 9449) requests.
	DPoPAllowed
	// DPoPRequired accepts only DPoP requests.
	DPoPRequired
)

// Options configure an Authenticator. Verifier and Resource are
// required; every other zero value works.
type Options struct {
	// Verifier checks access tokens (NewJWTVerifier,
	// NewIntrospectionVerifier, or your own).
	Verifier TokenVerifier
	// Resource is the canonical URI of this MCP server (its Streamable
	// HTTP endpoint, such as https://mcp.example.com/mcp). It is the
	// audience the verifier checks, the "resource" of the protected
	// resource metadata and the URI DPoP proofs must name (htu).
	Resource string
	// ResourceMetadataURL is sent in every challenge. Empty means the
	// path-inserted well-known URL of Resource (MetadataURL).
	ResourceMetadataURL string
	// Scopes are required on every request and are the scope of the 401
	// challenge. A token lacking one gets 403 insufficient_scope.
	Scopes []string
	// MaxTokenBytes caps the token in the Authorization header; a longer
	// one gets 401 invalid_token. Zero means DefaultMaxTokenBytes.
	MaxTokenBytes int
	// DPoP enables DPoP (RFC 9449). DPoPDisabled (zero) by default.
	DPoP DPoPMode
	// DPoPOptions tune the checking of DPoP proofs.
	DPoPOptions DPoPOptions
}

// Authenticator is the resource-server side of MCP authorization for
// pmcp.StreamableHTTPHandler: plug its Authenticate method into
// StreamableHTTPOptions.Authenticate. It is safe for concurrent use.
type Authenticator struct {
	verifier TokenVerifier
	resource string
	prmURL   string
	scopes   []string
	maxToken int
	dpopMode DPoPMode
	dpop     *dpopChecker
}

// NewAuthenticator checks opts and returns an Authenticator.
func NewAuthenticator(opts Options) (*Authenticator, error) {
	if opts.Verifier == nil {
		return nil, errors.New("auth: Options.Verifier is required")
	}
	res, err := oauth.Canonical(opts.Resource)
	if err != nil {
		return nil, fmt.Errorf("auth: Options.Resource: %w", err)
	}
	a := &Authenticator{verifier: opts.Verifier, resource: res, prmURL: opts.ResourceMetadataURL, maxToken: opts.MaxTokenBytes, dpopMode: opts.DPoP}
	if a.prmURL == "" {
		if a.prmURL, err = oauth.ProtectedResourceMetadataURL(res); err != nil {
			return nil, err
		}
	}
	if a.maxToken <= 0 {
		a.maxToken = DefaultMaxTokenBytes
	}
	for _, s := range opts.Scopes {
		if !oauth.IsScopeToken(s) {
			return nil, fmt.Errorf("auth: Options.Scopes: %q is not a valid scope", s)
		}
		if s == "offline_access" {
			return nil, errors.New("auth: Options.Scopes must not contain offline_access")
		}
		a.scopes = append(a.scopes, s)
	}
	switch opts.DPoP {
	case DPoPDisabled:
	case DPoPAllowed, DPoPRequired:
		if a.dpop, err = newDPoPChecker(opts.DPoPOptions, res); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("auth: unknown DPoPMode %d", opts.DPoP)
	}
	return a, nil
}

// Resource returns the canonical resource URI.
func (a *Authenticator) Resource() string { return a.resource }

// ResourceMetadataURL returns the URL sent in challenges.
func (a *Authenticator) ResourceMetadataURL() string { return a.prmURL }

// Authenticate verifies the request's access token. It has the signature
// of pmcp.StreamableHTTPOptions.Authenticate. On failure it returns a
// *pmcp.AuthError carrying the status and challenges of RFC 6750 (and
// RFC 9449): 401 with no error code when no token was sent, 401
// invalid_token for a token that is refused, 400 invalid_request for a
// malformed Authorization header, 403 insufficient_scope when Scopes are
// missing. The token never appears in an error. What it returns is the
// request's own: the scopes, Extra and the claims (at every depth) are
// copies, so a handler may change them without affecting other requests,
// even when the verifier answered from its cache.
func (a *Authenticator) Authenticate(r *http.Request) (*pmcp.AuthInfo, *pmcp.AuthContext, error) {
	tok, c, err := a.verify(r)
	if err != nil {
		return nil, nil, err
	}
	if err := InsufficientScope(a.prmURL, a.scopes, tok.Scopes); err != nil {
		return nil, nil, refusedClient(err, tok.ClientID)
	}
	// tok may be the verifier's cached Token, shared with every request
	// of the same token: what is handed out is copied, claims at every
	// depth, so that a handler changing its copy changes nothing else.
	// The two views of one request share one copy of the scopes.
	secret := pmcp.Secret(c.token)
	scopes := slices.Clip(slices.Clone(tok.Scopes))
	extra := map[string]any{"issuer": tok.Issuer, "scheme": SchemeBearer}
	if c.scheme == SchemeDPoP {
		extra["scheme"] = SchemeDPoP
	}
	if tok.JKT != "" {
		extra["jkt"] = tok.JKT
	}
	var claims map[string]any
	if tok.Claims != nil {
		claims = copyJSON(tok.Claims).(map[string]any)
	}
	info := &pmcp.AuthInfo{
		Token:     secret,
		ClientID:  tok.ClientID,
		Scopes:    scopes,
		ExpiresAt: tok.ExpiresAt,
		Resource:  a.resource,
		Extra:     extra,
	}
	actx := &pmcp.AuthContext{
		Subject:  tok.Subject,
		ClientID: tok.ClientID,
		Scopes:   scopes,
		Claims:   claims,
		Token:    secret,
	}
	return info, actx, nil
}

// sharingVerifier is a TokenVerifier that can return a Token it keeps
// (shared true), which the caller reads and copies but never modifies.
type sharingVerifier interface {
	verifyShared(ctx context.Context, token string) (t *Token, shared bool, err error)
}

var _ sharingVerifier = (*JWTVerifier)(nil)

// verify checks the credentials of r and returns the token and the
// credentials it came in.
func (a *Authenticator) verify(r *http.Request) (*Token, credentials, error) {
	c, err := parseAuthorization(r.Header, a.maxToken)
	switch {
	case errors.Is(err, errTokenTooLarge):
		return nil, credentials{}, a.fail(http.StatusUnauthorized, SchemeBearer, ErrorInvalidToken, "the access token is too large", err)
	case err != nil:
		return nil, credentials{}, a.fail(http.StatusBadRequest, SchemeBearer, ErrorInvalidRequest, "malformed Authorization header", err)
	case c.scheme == "" || (c.scheme == SchemeDPoP && a.dpop == nil):
		return nil, credentials{}, a.fail(http.StatusUnauthorized, "", "", "", errNoToken)
	case c.scheme == SchemeBearer && a.dpopMode == DPoPRequired:
		return nil, credentials{}, a.fail(http.StatusUnauthorized, SchemeDPoP, ErrorInvalidToken, "a DPoP-bound token is required", errBearerRefused)
	}
	if a.dpop != nil && c.scheme == SchemeBearer && len(r.Header.Values("DPoP")) > 0 {
		// A proof with a bearer scheme is a confused or downgraded client.
		return nil, credentials{}, a.fail(http.StatusBadRequest, SchemeBearer, ErrorInvalidRequest, "a DPoP proof needs the DPoP scheme", errBearerRefused)
	}
	var tok *Token
	if sv, ok := a.verifier.(sharingVerifier); ok {
		tok, _, err = sv.verifyShared(r.Context(), c.token)
	} else {
		tok, err = a.verifier.VerifyToken(r.Context(), c.token)
	}
	if err != nil {
		desc := "the access token is invalid"
		if errors.Is(err, ErrVerifierUnavailable) {
			desc = "the access token could not be verified"
		}
		return nil, credentials{}, a.fail(http.StatusUnauthorized, c.scheme, ErrorInvalidToken, desc, err)
	}
	if tok == nil || (tok.Subject == "" && tok.ClientID == "") {
		return nil, credentials{}, a.fail(http.StatusUnauthorized, c.scheme, ErrorInvalidToken, "the access token names no principal", fmt.Errorf("%w: no subject or client_id", ErrInvalidToken))
	}
	switch c.scheme {
	case SchemeBearer:
		if tok.JKT != "" {
			// RFC 9449 §7.2: a bound token is never accepted as a bearer token.
			return nil, credentials{}, refusedClient(a.fail(http.StatusUnauthorized, SchemeBearer, ErrorInvalidToken, "the access token is DPoP-bound", fmt.Errorf("%w: DPoP-bound token sent as bearer", ErrInvalidToken)), tok.ClientID)
		}
	case SchemeDPoP:
		if err := a.dpop.check(r, c.token, tok.JKT); err != nil {
			return nil, credentials{}, refusedClient(a.fail(http.StatusUnauthorized, SchemeDPoP, ErrorInvalidDPoPProof, "the DPoP proof is invalid", err), tok.ClientID)
		}
	}
	return tok, c, nil
}

var (
	errNoToken       = errors.New("auth: no access token")
	errBearerRefused = errors.New("auth: bearer scheme refused")
)

// refusedClient names, in the refusal err (a *pmcp.AuthError this package
// just built), the client of the verified token it refuses, for the
// transport's log line.
func refusedClient(err error, clientID string) error {
	var ae *pmcp.AuthError
	if errors.As(err, &ae) {
		ae.ClientID = clientID
	}
	return err
}

// fail builds the refusal: the challenge of scheme carries the error
// code, and when DPoP is enabled both schemes are offered.
func (a *Authenticator) fail(status int, scheme, code, desc string, cause error) error {
	if a.dpopMode == DPoPRequired && scheme == SchemeBearer {
		scheme = SchemeDPoP // the only challenge sent
	}
	bearer := Challenge{Scheme: SchemeBearer, ResourceMetadata: a.prmURL, Scope: a.scopes}
	var dpop Challenge
	if a.dpop != nil {
		dpop = Challenge{Scheme: SchemeDPoP, ResourceMetadata: a.prmURL, Scope: a.scopes, Algs: a.dpop.algNames}
	}
	switch scheme {
	case SchemeBearer:
		bearer.Error, bearer.ErrorDescription = code, desc
	case SchemeDPoP:
		dpop.Error, dpop.ErrorDescription = code, desc
	}
	var chs []string
	if a.dpopMode != DPoPRequired {
		chs = append(chs, bearer.String())
	}
	if a.dpop != nil {
		chs = append(chs, dpop.String())
	}
	return &pmcp.AuthError{Status: status, Challenges: chs, Err: cause}
}

// InsufficientScope returns nil when actx holds every scope of required,
// else the 403 step-up *pmcp.AuthError whose challenge names every scope
// the operation needs: Options.Scopes (needed by every request) followed
// by required, so that the token a client obtains for it passes both
// checks (see the package function InsufficientScope). It has the
// signature of pmcp.StreamableHTTPOptions.InsufficientScope: plug it in
// there, and per-tool, per-prompt and per-resource scopes (Tool.Scopes,
// ...) are answered with this challenge.
//
// For a DPoP-bound token (its claims carry cnf.jkt, as the verifiers of
// this package keep them) the challenge uses the DPoP scheme, with algs,
// since that is the scheme the token is used with (RFC 9449 §7.1).
func (a *Authenticator) InsufficientScope(actx *pmcp.AuthContext, required ...string) error {
	var granted []string
	if actx != nil {
		granted = actx.Scopes
	}
	if len(MissingScopes(required, granted)) == 0 {
		return nil
	}
	err := InsufficientScope(a.prmURL, append(slices.Clip(a.scopes), required...), granted)
	var ae *pmcp.AuthError
	var se *ScopeError
	if a.dpop == nil || actx == nil || !dpopBound(actx.Claims) || !errors.As(err, &ae) || !errors.As(err, &se) {
		return err
	}
	ch := Challenge{Scheme: SchemeDPoP, ResourceMetadata: a.prmURL, Scope: se.Required, Error: ErrorInsufficientScope,
		ErrorDescription: "the request needs scope " + strings.Join(se.Required, " "), Algs: a.dpop.algNames}
	ae.Challenges = []string{ch.String()}
	return ae
}

// dpopBound reports whether token claims carry a cnf.jkt key binding.
func dpopBound(claims pmcp.Attributes) bool {
	cnf, ok := claims["cnf"].(map[string]any)
	if !ok {
		return false
	}
	jkt, ok := cnf["jkt"].(string)
	return ok && jkt != ""
}
