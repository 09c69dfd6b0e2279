package auth

import (
	"errors"
	"net/http"
	"strings"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/oauth"
)

// Error codes of RFC 6750 §3.1 and RFC 9449 §7.1, as sent in the "error"
// parameter of a challenge. They are oauth's.
const (
	ErrorInvalidRequest    = oauth.ErrorInvalidRequest
	ErrorInvalidToken      = oauth.ErrorInvalidToken
	ErrorInsufficientScope = oauth.ErrorInsufficientScope
	ErrorInvalidDPoPProof  = oauth.ErrorInvalidDPoPProof
)

// Authentication schemes. They are oauth's.
const (
	SchemeBearer = oauth.SchemeBearer
	SchemeDPoP   = oauth.SchemeDPoP
)

// Challenge is one WWW-Authenticate challenge: oauth.Challenge, which
// formats and parses them.
type Challenge = oauth.Challenge

// credentials is what an Authorization header carried.
type credentials struct {
	scheme string // SchemeBearer or SchemeDPoP; "" for none or another scheme
	token  string
}

// Errors of parseAuthorization; each answers 400 invalid_request.
var (
	errMultipleAuthorization = errors.New("auth: more than one Authorization header")
	errMalformedToken        = errors.New("auth: malformed access token")
	errTokenTooLarge         = errors.New("auth: access token too large")
)

// parseAuthorization reads the Authorization header (RFC 6750 §2.1,
// RFC 9449 §7.1): at most one, of the form `scheme 1*SP b64token`. A
// missing header or another scheme (Basic, ...) gives empty credentials
// and no error. A token over maxBytes gives errTokenTooLarge.
func parseAuthorization(h http.Header, maxBytes int) (credentials, error) {
	vs := h.Values("Authorization")
	switch len(vs) {
	case 0:
		return credentials{}, nil
	case 1:
	default:
		return credentials{}, errMultipleAuthorization
	}
	v := strings.Trim(vs[0], " \t")
	sp := strings.IndexByte(v, ' ')
	if sp < 0 {
		if strings.EqualFold(v, SchemeBearer) || strings.EqualFold(v, SchemeDPoP) {
			return credentials{}, errMalformedToken
		}
		return credentials{}, nil
	}
	var c credentials
	switch name := v[:sp]; {
	case strings.EqualFold(name, SchemeBearer):
		c.scheme = SchemeBearer
	case strings.EqualFold(name, SchemeDPoP):
		c.scheme = SchemeDPoP
	default:
		return credentials{}, nil
	}
	tok := strings.TrimLeft(v[sp+1:], " ")
	if maxBytes > 0 && len(tok) > maxBytes {
		return credentials{}, errTokenTooLarge
	}
	if !isB64Token(tok) {
		return credentials{}, errMalformedToken
	}
	c.token = tok
	return c, nil
}

// isB64Token reports whether s is a b64token (RFC 6750 §2.1):
// 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
func isB64Token(s string) bool {
	i := 0
	for i < len(s) && b64TokenChar[s[i]] {
		i++
	}
	if i == 0 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] != '=' {
			return false
		}
	}
	return true
}

// b64TokenChar tells the characters of a b64token before its padding
// (one table lookup per byte of every request's token). Never written.
var b64TokenChar = func() (t [256]bool) {
	for c := range 256 {
		t[c] = ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/'
	}
	return t
}()

// MissingScopes returns the scopes of required that granted lacks, in
// the order of required, without duplicates.
func MissingScopes(required, granted []string) []string {
	var missing []string
	for _, r := range required {
		if r == "" || contains(granted, r) || contains(missing, r) {
			continue
		}
		missing = append(missing, r)
	}
	return missing
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// InsufficientScope returns nil when granted holds every scope of
// required. Otherwise it returns the 403 step-up answer: an
// *pmcp.AuthError whose Bearer challenge has error="insufficient_scope"
// and lists every scope of required in one scope parameter (never one
// missing scope at a time, so a client asks for all of them at once).
// resourceMetadata is the protected resource metadata URL.
func InsufficientScope(resourceMetadata string, required, granted []string) error {
	missing := MissingScopes(required, granted)
	if len(missing) == 0 {
		return nil
	}
	var all []string
	for _, r := range required {
		if r != "" && !contains(all, r) {
			all = append(all, r)
		}
	}
	ch := Challenge{
		ResourceMetadata: resourceMetadata,
		Scope:            all,
		Error:            ErrorInsufficientScope,
		ErrorDescription: "the request needs scope " + strings.Join(all, " "),
	}
	return &pmcp.AuthError{
		Status:     http.StatusForbidden,
		Challenges: []string{ch.String()},
		Err:        &ScopeError{Required: all, Missing: missing},
	}
}

// ScopeError is the cause inside the 403 of InsufficientScope.
type ScopeError struct {
	Required []string
	Missing  []string
}

func (e *ScopeError) Error() string {
	return "auth: insufficient scope: missing " + strings.Join(e.Missing, " ")
}

// Is reports pmcp.ErrInsufficientScope, the cause of every scope refusal.
func (e *ScopeError) Is(target error) bool { return target == pmcp.ErrInsufficientScope }
