// Package wwwauth parses WWW-Authenticate challenges (RFC 9110 §11.6.1),
// for the pmcp client (the challenge of an *HTTPStatusError) and package
// oauthclient (the OAuth flow), one parser for both.
package wwwauth

import "strings"

// Challenge is one challenge of a WWW-Authenticate header (RFC 9110
// §11.6.1): an auth-scheme and its auth-params (names lower-cased).
type Challenge struct {
	Scheme string
	Params map[string]string
}

// Limits of the WWW-Authenticate parser (the header is peer-controlled).
const (
	maxChallenges      = 16
	maxChallengeParams = 32
)

// Parse parses the challenges of one or more
// WWW-Authenticate field values. It is lenient (a malformed part ends the
// parse of its field value, keeping what came before) and bounded.
func Parse(values []string) []Challenge {
	var out []Challenge
	for _, v := range values {
		out = parseChallenges(v, out)
		if len(out) >= maxChallenges {
			return out[:maxChallenges]
		}
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

// Param returns the first value of param among the Bearer and
// DPoP challenges.
func Param(chs []Challenge, param string) string {
	for _, c := range chs {
		if strings.EqualFold(c.Scheme, "Bearer") || strings.EqualFold(c.Scheme, "DPoP") {
			if v, ok := c.Params[param]; ok {
				return v
			}
		}
	}
	return ""
}
