package proxy

import (
	"slices"
	"strings"
	"testing"

	"github.com/gopmcp/pmcp"
)

// TestAppsURINaming: the namespacing of ui:// URIs is reversible, leaves
// every other URI alone, and routes each namespaced URI to one upstream.
func TestAppsURINaming(t *testing.T) {
	a := &upstream{name: "a", prefix: "a_"}
	ab := &upstream{name: "ab", prefix: "ab_"}
	plain := &upstream{name: "p"}
	for _, c := range []struct {
		up       *upstream
		in, out  string
		rewrites bool
	}{
		{a, "ui://main", "ui://a_main", true},
		{a, "ui://get-time/mcp-app.html", "ui://a_get-time/mcp-app.html", true},
		{ab, "ui://a_main", "ui://ab_a_main", true},
		{a, "ui://", "ui://a_", true},
		{a, "https://example.com/ui://x", "https://example.com/ui://x", false},
		{a, "test://a/r", "test://a/r", false},
		{a, "UI://main", "UI://main", false},
		{plain, "ui://main", "ui://main", false},
	} {
		if got := c.up.outURI(c.in); got != c.out {
			t.Errorf("%s outURI(%q) = %q, want %q", c.up.name, c.in, got, c.out)
		}
		back, ok := c.up.inURI(c.out)
		if !ok || back != c.in {
			t.Errorf("%s inURI(%q) = %q, %v; want %q", c.up.name, c.out, back, ok, c.in)
		}
	}
	if _, ok := a.inURI("ui://ab_main"); ok {
		t.Error("a claims ab's ui://ab_main")
	}
	p := &Proxy{}
	p.set.Store(&[]*upstream{a, ab})
	for uri, want := range map[string]string{"ui://ab_main": "ab ui://main", "ui://a_b_main": "a ui://b_main", "ui://main": "", "test://x": "a,ab test://x"} {
		ups, in := p.uriUpstreams(uri)
		var names []string
		for _, u := range ups {
			names = append(names, u.name)
		}
		got := strings.TrimSpace(strings.Join(names, ",") + " " + in)
		if got != want {
			t.Errorf("uriUpstreams(%q) = %q, want %q", uri, got, want)
		}
	}
	meta := pmcp.Meta{"ui": map[string]any{"resourceUri": "ui://main", "visibility": []any{"app"}}, "ui/resourceUri": "ui://main", "other": "ui://main"}
	out := a.outToolMeta(meta)
	if ui := pmcp.MetaAppUI(out); ui.ResourceURI != "ui://a_main" || !slices.Equal(ui.Visibility, []string{"app"}) || out["ui/resourceUri"] != "ui://a_main" || out["other"] != "ui://main" {
		t.Errorf("outToolMeta: %v", out)
	}
	if meta["ui/resourceUri"] != "ui://main" || meta["ui"].(map[string]any)["resourceUri"] != "ui://main" {
		t.Errorf("outToolMeta wrote its argument: %v", meta)
	}
	if typed := a.outToolMeta(pmcp.Meta{"ui": &pmcp.AppUI{ResourceURI: "ui://main"}}); pmcp.MetaAppUI(typed).ResourceURI != "ui://a_main" {
		t.Errorf("outToolMeta of a typed AppUI: %v", typed)
	}
}
