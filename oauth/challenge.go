package oauth

import "strings"

// Error codes of RFC 6750 §3.1 and RFC 9449 §7.1, as sent in the "error"
// parameter of a challenge.
const (
	ErrorInvalidRequest    = "invalid_request"
	ErrorInvalidToken      = "invalid_token"
	ErrorInsufficientScope = "insufficient_scope"
	ErrorInvalidDPoPProof  = "invalid_dpop_proof"
)

// Authentication schemes.
const (
	SchemeBearer = "Bearer"
	SchemeDPoP   = "DPoP"
)

// Challenge is one WWW-Authenticate challenge (RFC 6750 §3; RFC 9449 §7.1
// for DPoP). String renders it; parameters that are empty are left out,
// and characters the grammar does not allow in a quoted value are dropped,
// so a challenge can never break the header.
type Challenge struct {
	// Scheme is SchemeBearer (when empty) or SchemeDPoP.
	Scheme string
	// ResourceMetadata is the URL of the protected resource metadata
	// (RFC 9728 §5.1).
	ResourceMetadata string
	// Scope lists the scopes the request needs.
	Scope []string
	// Error is one of the Error* codes; empty when no credentials were
	// sent.
	Error string
	// ErrorDescription is a human-readable explanation (ASCII).
	ErrorDescription string
	// Algs lists the DPoP proof algorithms accepted (DPoP only).
	Algs []string
}

// String renders the challenge as one WWW-Authenticate value.
func (c Challenge) String() string {
	var b strings.Builder
	scheme := c.Scheme
	if scheme == "" {
		scheme = SchemeBearer
	}
	b.WriteString(scheme)
	sep := " "
	param := func(name, value string) {
		if value == "" {
			return
		}
		b.WriteString(sep)
		b.WriteString(name)
		b.WriteString(`="`)
		b.WriteString(value)
		b.WriteByte('"')
		sep = ", "
	}
	param("resource_metadata", quotable(c.ResourceMetadata, false))
	param("scope", joinTokens(c.Scope))
	param("error", quotable(c.Error, false))
	param("error_description", quotable(c.ErrorDescription, true))
	param("algs", joinTokens(c.Algs))
	return b.String()
}

// quotable keeps the characters RFC 6750 allows inside the quoted values
// (%x20-21 / %x23-5B / %x5D-7E); the space only where space is true.
func quotable(s string, space bool) string {
	ok := func(c byte) bool {
		return (c == ' ' && space) || c == 0x21 || (c >= 0x23 && c <= 0x5B) || (c >= 0x5D && c <= 0x7E)
	}
	clean := true
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if ok(s[i]) {
			b = append(b, s[i])
		}
	}
	return string(b)
}

// joinTokens joins scope-tokens with single spaces, dropping those that
// are empty or not valid scope-tokens (RFC 6749 §3.3).
func joinTokens(ts []string) string {
	var b strings.Builder
	for _, t := range ts {
		if t == "" || quotable(t, false) != t {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t)
	}
	return b.String()
}

// IsScopeToken reports whether s is a scope-token (RFC 6749 §3.3):
// one or more of the characters %x21 / %x23-5B / %x5D-7E.
func IsScopeToken(s string) bool { return s != "" && quotable(s, false) == s }
