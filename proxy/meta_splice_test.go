package proxy

import (
	"testing"

	"github.com/gopmcp/pmcp"
)

func TestMetaMember(t *testing.T) {
	const key = pmcp.MetaClientCapabilities
	for _, tc := range []struct {
		params string
		want   string // the member's value; "" = not found
	}{
		{`{"name":"x","arguments":{"_meta":{"` + key + `":1}},"_meta":{"a":2,"` + key + `": {"x" : [1]} ,"b":3}}`, `{"x" : [1]}`},
		{` {"_meta":{"` + key + `":null}} `, `null`},
		{`{"name":"x"}`, ``},
		{`{"_meta":{"a":1}}`, ``},
		{`{"_meta":[1]}`, ``},
		{`{"_meta":{"` + key + `":1},"_meta":{}}`, ``},                         // duplicate name: invalid
		{`{"_meta":{"` + key + `":1,"` + key + `":2}}`, ``},                    // duplicate name: invalid
		{`{"\u005fmeta":{"` + key + `":1}}`, ``},                               // escaped: the general path
		{`{"_meta":{"` + key + `":1}}x`, ``},                                   // trailing bytes
		{`{"_meta":{"` + key + `":1},"arguments":{"s":"` + "\xff" + `"}}`, ``}, // invalid UTF-8 after it
		{`[]`, ``},
		{``, ``},
	} {
		start, end, ok := metaMember([]byte(tc.params), key)
		got := ""
		if ok {
			got = tc.params[start:end]
		}
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("metaMember(%s) = %q, %v; want %q", tc.params, got, ok, tc.want)
		}
	}
	b := []byte(`{"_meta":{"k":[1,2],"z":0}}`)
	start, end, ok := metaMember(b, "k")
	if got := string(spliceValue(b, start, end, []byte(`{}`))); !ok || got != `{"_meta":{"k":{},"z":0}}` {
		t.Errorf("spliceValue = %s (%v)", got, ok)
	}
}

func TestOnlyManaged(t *testing.T) {
	for raw, want := range map[string]bool{
		`{"progressToken":1,"io.modelcontextprotocol/clientInfo":{"name":"x"}}`: true,
		` { } `: true,
		`{"io.modelcontextprotocol/a":1,"trace":2}`: false,
		`{"\u0069o.modelcontextprotocol/a":1}`:      false, // escaped: the general path
		`{"progressToken":1,"progressToken":2}`:     false,
		`{"progressToken":1}x`:                      false,
		`[]`:                                        false,
		`{"progressToken":"\xff"}`:                  false,
	} {
		if got := onlyManaged([]byte(raw)); got != want {
			t.Errorf("onlyManaged(%s) = %v, want %v", raw, got, want)
		}
	}
}
