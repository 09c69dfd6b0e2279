package oauth

import (
	"strings"
)

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
	// Params is every auth-param of a parsed challenge (ParseChallenges),
	// names in lower case, the fields above included. String does not
	// write it.
	Params map[string]string
}

// Param returns the auth-param name (lower case) of a parsed challenge.
func (c Challenge) Param(name string) string { return c.Params[name] }

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

// Limits of ParseChallenges (the header is peer-controlled).
const (
	maxChallenges      = 16
	maxChallengeParams = 32
)

// ParseChallenges parses the challenges of one or more WWW-Authenticate
// field values (RFC 9110 §11.6.1), the grammar String writes: an
// auth-scheme and its auth-params, names lower-cased, the first of a
// repeated name kept, and the fields of Challenge filled from theirs
// (scope and algs split at spaces). It is lenient (a malformed part ends
// the parse of its field value, keeping what came before) and bounded
// (16 challenges of 32 auth-params); a token68 (Basic abc==) is skipped.
func ParseChallenges(values []string) []Challenge {
	var out []Challenge
	for _, v := range values {
		out = parseChallenges(v, out)
		if len(out) >= maxChallenges {
			out = out[:maxChallenges]
			break
		}
	}
	for i := range out {
		c := &out[i]
		c.ResourceMetadata = c.Params["resource_metadata"]
		c.Scope = strings.Fields(c.Params["scope"])
		c.Error = c.Params["error"]
		c.ErrorDescription = c.Params["error_description"]
		c.Algs = strings.Fields(c.Params["algs"])
	}
	return out
}

func parseChallenges(s string, out []Challenge) []Challenge {
	var cur *Challenge
	for len(out) < maxChallenges {
		s = skipSeparators(s)
		if s == "" {
			return out
		}
		tok, rest := readToken(s)
		if tok == "" {
			return out // not a token: malformed
		}
		r := strings.TrimLeft(rest, " \t")
		if strings.HasPrefix(r, "=") && cur != nil && !isToken68Tail(r) {
			// auth-param of the current challenge
			val, rest2, ok := readParamValue(strings.TrimLeft(r[1:], " \t"))
			if !ok {
				return out
			}
			if len(cur.Params) < maxChallengeParams {
				name := strings.ToLower(tok)
				if _, dup := cur.Params[name]; !dup {
					cur.Params[name] = val
				}
			}
			s = rest2
			continue
		}
		// a new challenge: tok is its scheme
		out = append(out, Challenge{Scheme: tok, Params: map[string]string{}})
		cur = &out[len(out)-1]
		s = rest
		// a token68 form (Scheme abc123==) is skipped: MCP uses params
		r = strings.TrimLeft(s, " \t")
		if t68, rest2 := readToken68(r); t68 != "" {
			after := strings.TrimLeft(rest2, " \t")
			if after == "" || after[0] == ',' {
				s = rest2
			}
		}
	}
	return out
}

// isToken68Tail reports whether r (starting with '=') is the padding of a
// token68 rather than the '=' of an auth-param.
func isToken68Tail(r string) bool {
	t := strings.TrimLeft(r, "=")
	t = strings.TrimLeft(t, " \t")
	return t == "" || t[0] == ','
}

func skipSeparators(s string) string {
	return strings.TrimLeft(s, " \t,")
}

func isTchar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func readToken(s string) (string, string) {
	i := 0
	for i < len(s) && isTchar(s[i]) {
		i++
	}
	return s[:i], s[i:]
}

// readToken68 reads a token68 (RFC 9110 §11.2) at the start of s.
func readToken68(s string) (string, string) {
	i := 0
	for i < len(s) {
		c := s[i]
		if (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strings.IndexByte("-._~+/", c) >= 0 {
			i++
			continue
		}
		break
	}
	if i == 0 {
		return "", s
	}
	for i < len(s) && s[i] == '=' {
		i++
	}
	return s[:i], s[i:]
}

// readParamValue reads a token or a quoted-string.
func readParamValue(s string) (string, string, bool) {
	if !strings.HasPrefix(s, `"`) {
		tok, rest := readToken(s)
		return tok, rest, true
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			}
		case '"':
			return b.String(), s[i+1:], true
		default:
			b.WriteByte(c)
		}
	}
	return "", "", false // unterminated
}

// ChallengeParam returns the first value of the auth-param name among
// the Bearer and DPoP challenges of chs (the schemes MCP uses), "" when
// none has it.
func ChallengeParam(chs []Challenge, name string) string {
	for _, c := range chs {
		if strings.EqualFold(c.Scheme, SchemeBearer) || strings.EqualFold(c.Scheme, SchemeDPoP) {
			if v, ok := c.Params[name]; ok {
				return v
			}
		}
	}
	return ""
}
