package pmcp

import (
	"bytes"
	"testing"

	"github.com/go-json-experiment/json"
)

// The direct result encoder must write exactly what json.Marshal writes.

func checkResultEncoding(t *testing.T, r *CallToolResult) {
	t.Helper()
	want, werr := json.Marshal(r)
	got, ok := appendResult([]byte("prefix"), r)
	if !ok {
		if !bytes.Equal(got, []byte("prefix")) {
			t.Fatalf("declined, but changed dst: %q", got)
		}
		return
	}
	if werr != nil {
		t.Fatalf("encoded %+v, but json.Marshal fails: %v", r, werr)
	}
	if got := got[len("prefix"):]; !bytes.Equal(got, want) {
		t.Fatalf("encoding differs:\n got %s\nwant %s", got, want)
	}
}

func TestResultEncoding(t *testing.T) {
	info := &Implementation{Name: "srv", Version: "1.0"}
	full := &Implementation{Name: "srv", Title: "T", Version: "1", Description: "d<>&", WebsiteURL: "https://x"}
	ok := 0
	for _, r := range []*CallToolResult{
		textResult("hello"),
		textResult(""),
		textResult("quote \" backslash \\ newline \n tab \t ctrl \x01 html <>& \u2028 é 😀"),
		{Content: []Content{}},
		{Content: nil},
		{Content: []Content{Text("a"), Text("b")}, IsError: true},
		{ResultFields: ResultFields{ResultType: resultTypeComplete, Meta: Meta{MetaServerInfo: info}}, Content: []Content{Text("x")}},
		{ResultFields: ResultFields{ResultType: "complete", Meta: Meta{MetaServerInfo: full}}, Content: []Content{Text("x")}},
		{ResultFields: ResultFields{Meta: Meta{}}, Content: []Content{Text("x")}},
		{Content: []Content{&TextContent{Text: "no type set"}}},
		{Content: []Content{&TextContent{Text: "the type is the marshaler's"}}},
		// Declined shapes.
		{Content: []Content{&TextContent{Text: "x", Annotations: &Annotations{}}}},
		{Content: []Content{&TextContent{Text: "x", Meta: Meta{"a": 1}}}},
		{Content: []Content{&ImageContent{Data: "AA==", MIMEType: "image/png"}}},
		{Content: []Content{(*TextContent)(nil)}},
		{Content: []Content{nil}},
		{Content: []Content{Text("x")}, StructuredContent: map[string]any{"a": 1}},
		{ResultFields: ResultFields{Meta: Meta{"other": 1}}, Content: []Content{Text("x")}},
		{ResultFields: ResultFields{Meta: Meta{MetaServerInfo: (*Implementation)(nil)}}, Content: []Content{Text("x")}},
		{ResultFields: ResultFields{Meta: Meta{MetaServerInfo: &Implementation{Name: "i", Icons: []Icon{{Src: "a"}}}}}},
		textResult("invalid \xff utf-8"),
	} {
		checkResultEncoding(t, r)
		if _, enc := appendResult(nil, r); enc {
			ok++
		}
	}
	if ok < 11 {
		t.Errorf("only %d results took the direct path", ok)
	}
	if _, enc := appendResult(nil, &InitializeResult{}); enc {
		t.Error("encoded a result type it does not handle")
	}
}

func FuzzResultEncoding(f *testing.F) {
	f.Add("hello", "srv", "", false, "complete")
	f.Add("a\"\\\n\x00<>&\u2028\xff", "n\xfe", "t", true, "")
	f.Fuzz(func(t *testing.T, text, name, title string, isErr bool, rt string) {
		r := textResult(text)
		r.IsError = isErr
		r.ResultType = rt
		if name != "" {
			r.Meta = Meta{MetaServerInfo: &Implementation{Name: name, Title: title, Version: text}}
		}
		checkResultEncoding(t, r)
	})
}
