package pmcp

import "testing"

func TestParseFrontmatter(t *testing.T) {
	ok := []struct {
		in   string
		want map[string]any
	}{
		{"---\nname: a\ndescription: Extract, fill: and more\n---\nbody", map[string]any{"name": "a", "description": "Extract, fill: and more"}},
		{"---\nname: \"a\"\ndescription: 'it''s'\nmetadata:\n  \"k\": v # note\n---\n", map[string]any{"name": "a", "description": "it's", "metadata": map[string]any{"k": "v"}}},
		{renderSkillMD("x", "d \"q\"", map[string]string{"b": "2", "a": "1"}, "body"), map[string]any{"name": "x", "description": "d \"q\"", "metadata": map[string]any{"a": "1", "b": "2"}}},
	}
	for _, c := range ok {
		got, parsed := parseFrontmatter(c.in)
		if !parsed || !sameFrontmatter(got, c.want) {
			t.Errorf("parseFrontmatter(%q) = %v, %v; want %v", c.in, got, parsed, c.want)
		}
	}
	for _, in := range []string{
		"name: a\n",                          // no opening delimiter
		"---\nname: a\n",                     // never closed
		"---\nname: a\nname: b\n---\n",       // duplicate key
		"---\ntags:\n  - a\n---\n",           // lists are not understood
		"---\ndescription: |\n  text\n---\n", // block scalars are not either
		"---\nmetadata:\nname: a\n---\n",     // empty map
	} {
		if got, parsed := parseFrontmatter(in); parsed {
			t.Errorf("parseFrontmatter(%q) = %v, want unparseable", in, got)
		}
	}
}
