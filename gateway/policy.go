package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/gopmcp/pmcp"
)

// compiled is a checked Config, swapped as a whole on reload.
type compiled struct {
	// policies: Config.Policies was present (then only what they grant
	// is visible).
	policies bool
	policy   []Policy
	limits   []limitRule
	audit    *AuditConfig
	// upstreams are the prefixes (name + separator) of the upstreams, for
	// AuditRecord.Upstream.
	upstreams []upstreamPrefix
	// byMatch caches grantsFor's answers by the set of policies that
	// matched (bit i: policy i), since most callers share a few sets;
	// bounded by maxGrantSets, used only with at most 64 policies.
	byMatchMu sync.Mutex
	byMatch   map[uint64]*grants
}

// maxGrantSets bounds compiled.byMatch.
const maxGrantSets = 1024

type upstreamPrefix struct{ name, prefix string }

// limitRule is a RateLimit with the id its buckets are keyed by: a digest
// of the rule, so that a reload that changes a rule gives it fresh buckets
// and one that keeps it keeps them.
type limitRule struct {
	RateLimit
	id string
}

func ruleID(r *RateLimit) (string, error) {
	b, err := json.Marshal(r, json.Deterministic(true))
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8]), nil
}

// caller is what policies and rate limits match on.
type caller struct {
	claims map[string]any
	scopes []string
}

func callerOf(extra *pmcp.RequestHandlerExtra) caller {
	var c caller
	if extra == nil {
		return c
	}
	if a := extra.AuthContext; a != nil {
		c.claims, c.scopes = a.Claims, a.Scopes
		if c.claims == nil && a.Subject != "" {
			c.claims = map[string]any{"sub": a.Subject}
		}
	}
	if c.scopes == nil && extra.AuthInfo != nil {
		c.scopes = extra.AuthInfo.Scopes
	}
	return c
}

// matches reports whether m selects c.
func (m *Match) matches(c caller) bool {
	for _, s := range m.Scopes {
		if !slices.Contains(c.scopes, s) {
			return false
		}
	}
	for k, want := range m.Claims {
		got, ok := c.claims[k]
		if !ok || !claimEqual(got, want) {
			return false
		}
	}
	return true
}

// claimEqual compares a token's claim with a configured value as JSON
// values; a token array matches a configured scalar it holds.
func claimEqual(got, want any) bool {
	if s, ok := want.(string); ok {
		if g, ok := got.(string); ok {
			return g == s
		}
	}
	if arr, ok := got.([]any); ok {
		if _, wantArr := want.([]any); !wantArr {
			for _, e := range arr {
				if jsonEqual(e, want) {
					return true
				}
			}
			return false
		}
	}
	return jsonEqual(got, want)
}

func jsonEqual(a, b any) bool {
	x, err1 := json.Marshal(a, json.Deterministic(true))
	y, err2 := json.Marshal(b, json.Deterministic(true))
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// grants is what one caller may see and use: the allow and deny globs of
// the policies that match it, per kind. nil means no policies: all.
type grants struct {
	tools, prompts, resources globSet
}

type globSet struct{ allow, deny []string }

func (g *globSet) allows(name string) bool {
	for _, d := range g.deny {
		if globMatch(d, name) {
			return false
		}
	}
	for _, a := range g.allow {
		if globMatch(a, name) {
			return true
		}
	}
	return false
}

// grantsFor returns c's grants under cfg, nil when cfg has no policies.
func (cfg *compiled) grantsFor(c caller) *grants {
	if !cfg.policies {
		return nil
	}
	if len(cfg.policy) > 64 {
		return cfg.grantsOf(func(i int) bool { return cfg.policy[i].Match.matches(c) })
	}
	var set uint64
	for i := range cfg.policy {
		if cfg.policy[i].Match.matches(c) {
			set |= 1 << i
		}
	}
	cfg.byMatchMu.Lock()
	g, ok := cfg.byMatch[set]
	cfg.byMatchMu.Unlock()
	if ok {
		return g
	}
	g = cfg.grantsOf(func(i int) bool { return set&(1<<i) != 0 })
	cfg.byMatchMu.Lock()
	if cfg.byMatch == nil {
		cfg.byMatch = make(map[uint64]*grants)
	}
	if len(cfg.byMatch) < maxGrantSets {
		cfg.byMatch[set] = g
	}
	cfg.byMatchMu.Unlock()
	return g
}

// grantsOf joins the grants of the policies i for which matched(i). The
// result is never written afterwards: callers share it.
func (cfg *compiled) grantsOf(matched func(i int) bool) *grants {
	g := &grants{}
	for i := range cfg.policy {
		p := &cfg.policy[i]
		if !matched(i) {
			continue
		}
		g.tools.allow = append(g.tools.allow, p.AllowTools...)
		g.tools.deny = append(g.tools.deny, p.DenyTools...)
		g.prompts.allow = append(g.prompts.allow, p.AllowPrompts...)
		g.prompts.deny = append(g.prompts.deny, p.DenyPrompts...)
		g.resources.allow = append(g.resources.allow, p.AllowResources...)
		g.resources.deny = append(g.resources.deny, p.DenyResources...)
	}
	return g
}

// allows reports whether g lets its caller use the target name of kind;
// a nil g allows everything.
func (g *grants) allows(kind pmcp.TargetKind, name string) bool {
	if g == nil {
		return true
	}
	switch kind {
	case pmcp.TargetTool:
		return g.tools.allows(name)
	case pmcp.TargetPrompt:
		return g.prompts.allows(name)
	case pmcp.TargetResource:
		return g.resources.allows(name)
	}
	return true
}

// globMatch reports whether name matches glob: "*" matches any run of
// characters, "?" one character (a UTF-8 byte sequence counts as its
// bytes), "\" makes the next character literal. Linear backtracking on the
// last "*" keeps it O(len(glob)·len(name)).
func globMatch(glob, name string) bool {
	gi, ni := 0, 0
	star, mark := -1, 0
	for ni < len(name) {
		if gi < len(glob) {
			switch c := glob[gi]; {
			case c == '*':
				star, mark = gi, ni
				gi++
				continue
			case c == '?':
				gi++
				ni++
				continue
			case c == '\\' && gi+1 < len(glob):
				if glob[gi+1] == name[ni] {
					gi += 2
					ni++
					continue
				}
			case c == name[ni]:
				gi++
				ni++
				continue
			}
		}
		if star < 0 {
			return false
		}
		gi = star + 1
		mark++
		ni = mark
	}
	for gi < len(glob) && glob[gi] == '*' {
		gi++
	}
	return gi == len(glob)
}

// upstreamOf names the upstream whose prefix begins name ("" for none).
func (cfg *compiled) upstreamOf(name string) string {
	for _, u := range cfg.upstreams {
		if len(name) >= len(u.prefix) && name[:len(u.prefix)] == u.prefix {
			return u.name
		}
	}
	return ""
}
