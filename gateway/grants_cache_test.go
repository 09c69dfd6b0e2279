package gateway

import (
	"fmt"
	"testing"

	"github.com/gopmcp/pmcp"
)

// TestGrantsCache: grants cached by the set of matching policies answer
// as freshly joined ones, for each caller, asked again; beyond 64
// policies (no cache) too.
func TestGrantsCache(t *testing.T) {
	for _, n := range []int{3, 70} {
		var cfg Config
		for i := range n {
			cfg.Policies = append(cfg.Policies, Policy{Match: Match{Claims: map[string]any{"sub": fmt.Sprint("u", i)}}, AllowTools: []string{fmt.Sprint("t", i, "_*")}})
		}
		cfg.Policies = append(cfg.Policies, Policy{Match: Match{Scopes: []string{"all"}}, AllowTools: []string{"*"}, DenyTools: []string{"t0_*"}})
		c, err := compile(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		for round := range 2 {
			for i := range n {
				plain := caller{claims: map[string]any{"sub": fmt.Sprint("u", i)}}
				all := caller{claims: plain.claims, scopes: []string{"all"}}
				for _, x := range []struct {
					who  caller
					name string
					want bool
				}{
					{plain, fmt.Sprint("t", i, "_x"), true},
					{plain, fmt.Sprint("t", i+1, "_x"), false},
					{all, fmt.Sprint("t", i+1, "_x"), true},
					{all, "t0_x", false},
				} {
					if got := c.grantsFor(x.who).allows(pmcp.TargetTool, x.name); got != x.want {
						t.Errorf("%d policies, round %d, caller u%d %v: %q allowed %v, want %v", n, round, i, x.who.scopes, x.name, got, x.want)
					}
				}
			}
		}
	}
}
