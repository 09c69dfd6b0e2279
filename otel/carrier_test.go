package otel_test

import (
	"bytes"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
	pmcpotel "github.com/gopmcp/pmcp/otel"
)

var w3cFields = []string{"traceparent", "tracestate", "baggage"}

const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

// MetaCarrierFromMeta keeps only the propagator's fields, only string
// values, and only values within pmcp.MaxTraceValueLen; anything malformed
// gives what was read before it, never a panic.
func TestMetaCarrierFromMeta(t *testing.T) {
	long := strings.Repeat("a", pmcp.MaxTraceValueLen+1)
	for _, tc := range []struct {
		meta string
		want map[string]string
	}{
		{``, map[string]string{}},
		{`null`, map[string]string{}},
		{`[]`, map[string]string{}},
		{`{}`, map[string]string{}},
		{`{"traceparent":"` + tp + `"}`, map[string]string{"traceparent": tp}},
		{`{"progressToken":1,"traceparent":"` + tp + `","tracestate":"k=v","baggage":"u=1","other":"x"}`,
			map[string]string{"traceparent": tp, "tracestate": "k=v", "baggage": "u=1"}},
		{`{"traceparent":7,"tracestate":{"a":"b"},"baggage":null}`, map[string]string{}},
		{`{"traceparent":"` + tp + `","tracestate":"` + long + `"}`, map[string]string{"traceparent": tp}},
		{`{"nested":{"traceparent":"` + tp + `"}}`, map[string]string{}},
		{`{"traceparent":"` + tp + `",`, map[string]string{"traceparent": tp}},
		{`{"x":"traceparent"}`, map[string]string{}},
	} {
		got := pmcpotel.MetaCarrierFromMeta(jsontext.Value(tc.meta), w3cFields)
		if len(got) != len(tc.want) {
			t.Errorf("%.80s: got %v, want %v", tc.meta, got, tc.want)
			continue
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%.80s: %s = %q, want %q", tc.meta, k, got[k], v)
			}
		}
	}
}

// metaCarrierDecoded is MetaCarrierFromMeta written with a JSON decoder
// (the implementation before the single-pass scanner): on valid JSON the
// two must agree.
func metaCarrierDecoded(meta jsontext.Value, fields []string) map[string]string {
	c := map[string]string{}
	dec := jsontext.NewDecoder(bytes.NewReader(meta))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return c
	}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return c
		}
		key := name.String()
		if dec.PeekKind() == '"' && slices.Contains(fields, key) {
			v, err := dec.ReadToken()
			if err != nil {
				return c
			}
			if s := v.String(); s != "" && len(s) <= pmcp.MaxTraceValueLen {
				c[key] = s
			}
			continue
		}
		if err := dec.SkipValue(); err != nil {
			return c
		}
	}
	return c
}

func FuzzMetaCarrierFromMeta(f *testing.F) {
	f.Add([]byte(`{"traceparent":"` + tp + `","tracestate":"k=v","baggage":"u=1"}`))
	f.Add([]byte(`{"traceparent":"\u0074","traceparent":"x"}`))
	f.Add([]byte(`{"a":[1,{"traceparent":"x"}],"baggage":"b"}`))
	f.Add([]byte(` { "x" : [ "]" , { "y" : "\"}" } ] , "\u0074racestate" : "a\u00e9" , "baggage" : true } `))
	f.Fuzz(func(t *testing.T, b []byte) {
		c := pmcpotel.MetaCarrierFromMeta(jsontext.Value(b), w3cFields)
		if jsontext.Value(b).IsValid() && bytes.Contains(b, []byte(`"`)) {
			// Valid JSON: the same members as a decoder reads, once the
			// quick test for an unescaped field name lets it through.
			want := map[string]string{}
			if slices.ContainsFunc(w3cFields, func(f string) bool { return bytes.Contains(b, []byte(`"`+f+`"`)) }) {
				want = metaCarrierDecoded(b, w3cFields)
			}
			if !maps.Equal(map[string]string(c), want) {
				t.Fatalf("%s: carrier %v, a JSON decoder reads %v", b, c, want)
			}
		}
		for k, v := range c {
			if !slices.Contains(w3cFields, k) {
				t.Fatalf("carrier kept %q, not a propagator field", k)
			}
			if v == "" || len(v) > pmcp.MaxTraceValueLen {
				t.Fatalf("carrier kept a value of %d bytes", len(v))
			}
		}
		if !slices.IsSorted(c.Keys()) || len(c.Keys()) != len(c) {
			t.Fatalf("Keys() = %v", c.Keys())
		}
	})
}
