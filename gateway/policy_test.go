package gateway

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
)

func TestGlobMatch(t *testing.T) {
	for _, c := range []struct {
		glob, name string
		want       bool
	}{
		{"*", "", true}, {"*", "a/b", true}, {"ts_*", "ts_add", true}, {"ts_*", "web_add", false},
		{"file:///docs/*", "file:///docs/a/b.md", true}, {"a?c", "abc", true}, {"a?c", "ac", false},
		{`a\*`, "a*", true}, {`a\*`, "ab", false}, {"*_drop_*", "web_drop_table", true}, {"a*b*c", "axxbyyc", true}, {"a*b*c", "axxbyy", false},
	} {
		if got := globMatch(c.glob, c.name); got != c.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", c.glob, c.name, got, c.want)
		}
	}
}

// TestGrants: the allowed set is the union of the allows of the matching
// policies minus the union of their denies; policies present and none
// matching allows nothing; no policies allows all.
func TestGrants(t *testing.T) {
	cfg := Config{Policies: []Policy{
		{Match: Match{Claims: map[string]any{"sub": "alice"}}, AllowTools: []string{"ts_*"}, AllowResources: []string{"file:///pub/*"}},
		{Match: Match{Scopes: []string{"admin"}}, AllowTools: []string{"*"}, DenyTools: []string{"web_drop_*"}},
		{Match: Match{Claims: map[string]any{"groups": "ops", "level": float64(3)}}, AllowPrompts: []string{"*"}},
	}}
	c, err := compile(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	alice := caller{claims: map[string]any{"sub": "alice"}}
	admin := caller{claims: map[string]any{"sub": "root"}, scopes: []string{"admin", "x"}}
	both := caller{claims: map[string]any{"sub": "alice"}, scopes: []string{"admin"}}
	ops := caller{claims: map[string]any{"sub": "o", "groups": []any{"dev", "ops"}, "level": float64(3)}}
	nobody := caller{claims: map[string]any{"sub": "eve"}}
	for _, c2 := range []struct {
		who  caller
		kind pmcp.TargetKind
		name string
		want bool
	}{
		{alice, pmcp.TargetTool, "ts_add", true}, {alice, pmcp.TargetTool, "web_get", false},
		{alice, pmcp.TargetResource, "file:///pub/a/b", true}, {alice, pmcp.TargetResource, "file:///etc/passwd", false},
		{alice, pmcp.TargetPrompt, "ts_p", false},
		{admin, pmcp.TargetTool, "web_get", true}, {admin, pmcp.TargetTool, "web_drop_all", false},
		{both, pmcp.TargetTool, "web_drop_all", false}, {both, pmcp.TargetTool, "ts_add", true},
		{ops, pmcp.TargetPrompt, "any", true}, {ops, pmcp.TargetTool, "ts_add", false},
		{nobody, pmcp.TargetTool, "ts_add", false},
	} {
		if got := c.grantsFor(c2.who).allows(c2.kind, c2.name); got != c2.want {
			t.Errorf("%v %v %q: %v, want %v", c2.who, c2.kind, c2.name, got, c2.want)
		}
	}
	none, _ := compile(&Config{})
	if !none.grantsFor(nobody).allows(pmcp.TargetTool, "x") {
		t.Error("no policies must allow everything")
	}
	empty, _ := compile(&Config{Policies: []Policy{}})
	if empty.grantsFor(alice).allows(pmcp.TargetTool, "ts_add") {
		t.Error("an empty policies list must allow nothing")
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{RateLimits: []RateLimit{{PerSecond: 0, Burst: 1}}}, "rateLimits[0].perSecond"},
		{Config{RateLimits: []RateLimit{{PerSecond: 1, Burst: 0}}}, "rateLimits[0].burst"},
		{Config{Policies: []Policy{{}, {AllowTools: []string{""}}}}, "policies[1].allowTools[0]"},
		{Config{Policies: []Policy{{Match: Match{Claims: map[string]any{"sub": nil}}}}}, "policies[0].match.claims.sub"},
		{Config{Policies: []Policy{{DenyResources: []string{`x\`}}}}, "policies[0].denyResources[0]"},
	} {
		err := c.cfg.Validate()
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want one naming %s", c.cfg, err, c.want)
		}
	}
}

// TestMemoryBuckets: a bucket starts full, refills at its rate, says how
// long until the next token, and the set stays within Max, dropping
// refilled buckets first.
func TestMemoryBuckets(t *testing.T) {
	now := time.Unix(1000, 0)
	b := &MemoryBuckets{Max: 3, Now: func() time.Time { return now }}
	ctx := context.Background()
	take := func(key string) time.Duration {
		t.Helper()
		w, err := b.Take(ctx, key, 2, 2)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	if take("a") != 0 || take("a") != 0 {
		t.Fatal("a full bucket of 2 must admit twice")
	}
	if w := take("a"); w != 500*time.Millisecond {
		t.Fatalf("empty bucket: wait %v, want 500ms", w)
	}
	now = now.Add(250 * time.Millisecond)
	if w := take("a"); w != 250*time.Millisecond {
		t.Fatalf("half refilled: wait %v, want 250ms", w)
	}
	now = now.Add(250 * time.Millisecond)
	if take("a") != 0 {
		t.Fatal("refilled bucket refused")
	}
	take("b")
	take("c")
	now = now.Add(10 * time.Second) // every bucket refilled
	take("d")
	if n := b.Len(); n > 3 {
		t.Fatalf("%d buckets kept, Max 3", n)
	}
	for i := range 10 {
		take(string(rune('e' + i)))
	}
	if n := b.Len(); n > 3 {
		t.Fatalf("%d buckets kept, Max 3", n)
	}
}
