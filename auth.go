package pmcp

import (
	"fmt"
	"log/slog"
	"time"
)

// Secret holds a credential such as a bearer token. Every printed form
// (String, %v, %+v, %#v, %q, slog, JSON) is "[REDACTED]"; call Reveal to
// get the value.
type Secret string

const redacted = "[REDACTED]"

// Reveal returns the secret value. Never log its result.
func (s Secret) Reveal() string { return string(s) }

func (s Secret) String() string   { return redacted }
func (s Secret) GoString() string { return `"` + redacted + `"` }

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

// AuthInfo describes the credential a request arrived with, as extracted by
// the transport's authentication layer.
type AuthInfo struct {
	Token     Secret
	ClientID  string
	Scopes    []string
	ExpiresAt time.Time
	// Resource is the audience (RFC 8707) the token was minted for.
	Resource string
	Extra    map[string]any
}

// AuthContext is the validated identity of a request when auth is enabled.
// Subject is the principal that server-side state (modern requestStates,
// legacy HTTP sessions) is bound to; without a Subject the bearer token
// is, so state then does not survive a token refresh.
type AuthContext struct {
	Subject  string
	ClientID string
	Scopes   []string
	Claims   map[string]any
	Token    Secret
}

// HasScope reports whether the context carries scope s.
func (a *AuthContext) HasScope(s string) bool {
	if a == nil {
		return false
	}
	for _, x := range a.Scopes {
		if x == s {
			return true
		}
	}
	return false
}
