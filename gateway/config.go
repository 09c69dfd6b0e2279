package gateway

import (
	"errors"
	"fmt"
	"math"
)

// Config is the policy part of a `pmcp gateway` configuration file: the
// members next to "mcpServers" (which package proxy and the command
// read). Its JSON form is the file's; unknown members are refused by the
// command, which decodes the whole file strictly.
type Config struct {
	// Policies say which tools, prompts and resources each caller may
	// see and use. Nil (the member absent) means no policy: every caller
	// the listener admits sees everything. Present, even empty, a caller
	// sees only what the policies that match it allow.
	Policies []Policy `json:"policies,omitempty"`
	// RateLimits are token buckets per rule and caller; every rule that
	// applies to a request must admit it.
	RateLimits []RateLimit `json:"rateLimits,omitempty"`
	// Audit configures the audit trail (one record per request).
	Audit *AuditConfig `json:"audit,omitempty"`
}

// Match selects callers: all of its claims equal the token's (a claim
// whose token value is an array matches when the array holds the value),
// and every listed scope is held. The zero Match ({}) matches every
// caller the listener admits: every authenticated caller with an
// authorization server, everyone without one (whose requests carry no
// claims or scopes, so only {} matches them).
type Match struct {
	Claims map[string]any `json:"claims,omitempty"`
	Scopes []string       `json:"scopes,omitempty"`
}

// Policy grants the callers it matches the tools, prompts and resources
// its allow globs name, minus those its deny globs name. A caller's
// allowed set is the union of the allow globs of every matching policy
// minus the union of their deny globs. Tool and prompt globs apply to
// names as the gateway lists them (<server>_<name>), resource globs to
// URIs (and to the URI templates of resources/templates/list). Globs:
// "*" matches any run of characters ("/" included), "?" any one
// character, "\" escapes the next one.
type Policy struct {
	Match          Match    `json:"match"`
	AllowTools     []string `json:"allowTools,omitempty"`
	DenyTools      []string `json:"denyTools,omitempty"`
	AllowPrompts   []string `json:"allowPrompts,omitempty"`
	DenyPrompts    []string `json:"denyPrompts,omitempty"`
	AllowResources []string `json:"allowResources,omitempty"`
	DenyResources  []string `json:"denyResources,omitempty"`
}

// RateLimit is a token bucket per caller: PerSecond tokens a second up to
// Burst, one taken per request it applies to. It applies to the requests
// of the callers Match selects whose target one of its globs names: a
// tools/call of a tool in Tools, a prompts/get of a prompt in Prompts, a
// resources/read of a URI in Resources. A rule without any glob applies
// to every request of its callers.
type RateLimit struct {
	Match     Match    `json:"match"`
	Tools     []string `json:"tools,omitempty"`
	Prompts   []string `json:"prompts,omitempty"`
	Resources []string `json:"resources,omitempty"`
	PerSecond float64  `json:"perSecond"`
	Burst     int      `json:"burst"`
}

// AuditConfig configures the audit trail.
type AuditConfig struct {
	// File is the JSON Lines file records are appended to.
	File string `json:"file,omitempty"`
	// IncludeArguments adds the arguments of tools/call and prompts/get
	// to their records, redacted as logs redact them.
	IncludeArguments bool `json:"includeArguments,omitempty"`
}

// ErrInvalidConfig wraps every reason a Config is refused.
var ErrInvalidConfig = errors.New("gateway: invalid configuration")

// Validate reports the first problem of c, naming where it is (for
// example "rateLimits[1].perSecond").
func (c *Config) Validate() error {
	_, err := compile(c)
	return err
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
}

// compile checks c and builds what requests are checked against.
func compile(c *Config) (*compiled, error) {
	out := &compiled{policies: c.Policies != nil}
	if c.Audit != nil {
		a := *c.Audit
		out.audit = &a
	}
	for i, p := range c.Policies {
		at := fmt.Sprintf("policies[%d]", i)
		if err := checkMatch(at, &p.Match); err != nil {
			return nil, err
		}
		for _, g := range []struct {
			name string
			list []string
		}{
			{"allowTools", p.AllowTools}, {"denyTools", p.DenyTools},
			{"allowPrompts", p.AllowPrompts}, {"denyPrompts", p.DenyPrompts},
			{"allowResources", p.AllowResources}, {"denyResources", p.DenyResources},
		} {
			if err := checkGlobs(at+"."+g.name, g.list); err != nil {
				return nil, err
			}
		}
		out.policy = append(out.policy, p)
	}
	for i, r := range c.RateLimits {
		at := fmt.Sprintf("rateLimits[%d]", i)
		if err := checkMatch(at, &r.Match); err != nil {
			return nil, err
		}
		switch {
		case !validRate(r.PerSecond):
			return nil, invalid("%s.perSecond: want a number above 0, got %v", at, r.PerSecond)
		case r.Burst < 1:
			return nil, invalid("%s.burst: want at least 1, got %d", at, r.Burst)
		}
		for _, g := range []struct {
			name string
			list []string
		}{{"tools", r.Tools}, {"prompts", r.Prompts}, {"resources", r.Resources}} {
			if err := checkGlobs(at+"."+g.name, g.list); err != nil {
				return nil, err
			}
		}
		id, err := ruleID(&r)
		if err != nil {
			return nil, invalid("%s: %v", at, err)
		}
		out.limits = append(out.limits, limitRule{RateLimit: r, id: id})
	}
	return out, nil
}

func checkMatch(at string, m *Match) error {
	for k, v := range m.Claims {
		if k == "" {
			return invalid("%s.match.claims: empty claim name", at)
		}
		if v == nil {
			return invalid("%s.match.claims.%s: null never equals a claim", at, k)
		}
	}
	for i, s := range m.Scopes {
		if s == "" {
			return invalid("%s.match.scopes[%d]: empty scope", at, i)
		}
	}
	return nil
}

func checkGlobs(at string, globs []string) error {
	for i, g := range globs {
		if g == "" {
			return invalid("%s[%d]: empty glob", at, i)
		}
		if len(g) > maxGlobLen {
			return invalid("%s[%d]: longer than %d bytes", at, i, maxGlobLen)
		}
		if g[len(g)-1] == '\\' && !escaped(g, len(g)-1) {
			return invalid("%s[%d]: %q ends in an unfinished escape", at, i, g)
		}
	}
	return nil
}

// escaped reports whether g[i] is escaped by an odd run of backslashes.
func escaped(g string, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && g[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

// validRate reports whether perSecond is a rate a bucket can follow: a
// finite number above 0 (NaN is not).
func validRate(perSecond float64) bool {
	return perSecond > 0 && !math.IsInf(perSecond, 0)
}

// maxGlobLen bounds one glob (matching is linear in its length times the
// name's).
const maxGlobLen = 1024
