package pmcp

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"
)

// Secret holds a credential such as a bearer token. Every printed form
// (String, %v, %+v, %#v, %q, slog, JSON) is "[REDACTED]"; call Reveal to
// get the value.
type Secret string

const redacted = "[REDACTED]"

// Reveal returns the secret value. Never log its result.
func (s Secret) Reveal() string { return string(s) }

func (s Secret) String() string { return redacted }

// Format makes every fmt verb print the redaction marker.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'q' || (verb == 'v' && f.Flag('#')) {
		fmt.Fprint(f, `"`+redacted+`"`)
		return
	}
	fmt.Fprint(f, redacted)
}

// LogValue implements slog.LogValuer.
func (s Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalText keeps secrets out of JSON and text encodings.
func (s Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// AuthInfo describes the credential a request arrived with.
//
// pmcp fills none of these fields itself: every field is filled by your
// [StreamableHTTPOptions].Authenticate hook (package auth validates tokens,
// their audience and expiry there) or a middleware, and AuthInfo is nil
// over stream transports (stdio, in-memory) and when neither sets it. pmcp
// only reads Token and ClientID (the session principal when
// AuthContext.Subject is empty) and, when AuthContext is nil, Scopes (for
// Tool.Scopes and the other per-operation scopes).
type AuthInfo struct {
	Token     Secret
	ClientID  string
	Scopes    []string
	ExpiresAt time.Time
	// Resource is the audience (RFC 8707) the token was minted for.
	Resource string
	// Extra holds what the authentication layer extracted besides the
	// fields above. Its printed and marshalled forms are redacted (see
	// Attributes).
	Extra Attributes
}

// AuthContext is the validated identity of a request when auth is enabled.
// Subject is the principal that server-side state (modern requestStates,
// legacy HTTP sessions) is bound to; without a Subject the bearer token
// is, so state then does not survive a token refresh.
//
// Like [AuthInfo], it is filled only by your
// [StreamableHTTPOptions].Authenticate hook or a middleware (nil
// otherwise). pmcp reads Subject, Token and ClientID (to name the
// principal, see above) and Scopes (the per-operation scopes of
// Tool.Scopes and the like); Claims are carried for your handlers.
type AuthContext struct {
	Subject  string
	ClientID string
	Scopes   []string
	// Claims are the validated token's claims. Their printed and
	// marshalled forms are redacted (see Attributes).
	Claims Attributes
	Token  Secret
}

// Format prints AuthInfo without its token.
func (a AuthInfo) Format(f fmt.State, _ rune) {
	fmt.Fprintf(f, "AuthInfo{ClientID:%q Scopes:%v Resource:%q ExpiresAt:%s Token:%s}", a.ClientID, a.Scopes, a.Resource, a.ExpiresAt.Format("2006-01-02T15:04:05Z07:00"), redacted)
}

// LogValue prints AuthInfo without its token.
func (a AuthInfo) LogValue() slog.Value {
	return slog.GroupValue(slog.String("client_id", a.ClientID), slog.Any("scopes", a.Scopes), slog.String("token", redacted))
}

// Format prints AuthContext without its token or claims values.
func (a AuthContext) Format(f fmt.State, _ rune) {
	fmt.Fprintf(f, "AuthContext{Subject:%q ClientID:%q Scopes:%v Claims:%d Token:%s}", a.Subject, a.ClientID, a.Scopes, len(a.Claims), redacted)
}

// LogValue prints AuthContext without its token or claims values.
func (a AuthContext) LogValue() slog.Value {
	return slog.GroupValue(slog.String("subject", a.Subject), slog.String("client_id", a.ClientID), slog.Any("scopes", a.Scopes), slog.String("token", redacted))
}

// AuthError is an authentication or authorization failure that tells the
// HTTP transport how to answer: StreamableHTTPOptions.Authenticate may
// return one (or wrap one; errors.As finds it) to choose the status and
// the WWW-Authenticate challenges. Any other error gets 401 with a bare
// "Bearer" challenge.
type AuthError struct {
	// Status is 400 (malformed request), 401 (missing or invalid
	// credentials) or 403 (insufficient scope). Zero, or any status
	// outside 400-499, means 401.
	Status int
	// Challenges are the WWW-Authenticate header values, one header line
	// each (for example a Bearer and a DPoP challenge). Empty means the
	// bare "Bearer" challenge.
	Challenges []string
	// Err is the cause, for logs and errors.Is; it is never sent to the
	// peer. The transport logs every refusal at Info with Err as the
	// reason (the request's credentials cut out of it, should they appear).
	Err error
	// ClientID is the OAuth client the refused credentials belong to, when
	// the authenticator knows it (a valid token lacking a scope, a
	// DPoP-bound token sent as a bearer token, ...): logged, never sent.
	ClientID string
}

func (e *AuthError) Error() string {
	msg := "pmcp: " + http.StatusText(e.status())
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the cause.
func (e *AuthError) Unwrap() error { return e.Err }

func (e *AuthError) status() int {
	if e.Status < 400 || e.Status > 499 {
		return http.StatusUnauthorized
	}
	return e.Status
}
