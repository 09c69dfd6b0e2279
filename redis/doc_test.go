package redis

import (
	"os"
	"strings"
	"testing"
)

// TestDocQuickStart: the quick start in the package documentation is the
// body of Example (example_test.go), which the compiler checks, so the
// documentation cannot drift into code that does not compile.
func TestDocQuickStart(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	ex, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	// The indented block after "Quick start:", without the comment marks.
	_, after, ok := strings.Cut(string(doc), "// Quick start:")
	if !ok {
		t.Fatal("doc.go has no quick start")
	}
	var snippet []string
	started := false
lines:
	for _, l := range strings.Split(after, "\n") {
		code, isCode := strings.CutPrefix(l, "//\t")
		switch {
		case isCode:
			started = true
			snippet = append(snippet, code)
		case started && l == "//":
			snippet = append(snippet, "")
		case started:
			break lines
		}
	}
	for len(snippet) > 0 && snippet[len(snippet)-1] == "" {
		snippet = snippet[:len(snippet)-1]
	}
	_, body, ok := strings.Cut(string(ex), "\nfunc Example() {\n")
	if !ok {
		t.Fatal("example_test.go has no Example")
	}
	body, _, _ = strings.Cut(body, "\n}\n")
	var want []string
	for _, l := range strings.Split(body, "\n") {
		want = append(want, strings.TrimPrefix(l, "\t"))
	}
	if got, w := strings.Join(snippet, "\n"), strings.Join(want, "\n"); got != w {
		t.Fatalf("the quick start in doc.go is not Example's body:\n--- doc.go\n%s\n--- Example\n%s", got, w)
	}
}
