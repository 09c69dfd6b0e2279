package housekeeping

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// leafAllowed reports whether the OAuth leaf package (oauth/) may import
// path: the standard library (no dot in the first element) and go-jose.
func leafAllowed(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".") || path == "github.com/go-jose/go-jose/v4" || strings.HasPrefix(path, "github.com/go-jose/go-jose/v4/")
}

// TestOAuthLeaf keeps package oauth a leaf (issue 19): its files import
// only the standard library and go-jose, so that pmcp, auth and the OAuth
// client can all import it. Test files may use test helpers but never a
// package of this module.
func TestOAuthLeaf(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "oauth")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	n := 0
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		n++
		test := strings.HasSuffix(name, "_test.go")
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			switch {
			case path == "github.com/gopmcp/pmcp" || strings.HasPrefix(path, "github.com/gopmcp/pmcp/"):
				t.Errorf("oauth/%s imports %s: the leaf imports nothing of pmcp", name, path)
			case !test && !leafAllowed(path):
				t.Errorf("oauth/%s imports %s: the leaf imports only the standard library and go-jose", name, path)
			}
		}
	}
	if n == 0 {
		t.Fatal("no Go files in oauth/")
	}
}
