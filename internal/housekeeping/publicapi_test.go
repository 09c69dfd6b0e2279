package housekeeping

import (
	"bytes"
	"flag"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestPublicAPI keeps docs/api/<package>.txt, one line per exported
// identifier of each importable package of the module, so that every
// change of the public API shows in review as a diff of those files.
// After a deliberate API change, rewrite them with
//
//	go test ./internal/housekeeping -run TestPublicAPI -update
//
// The listing comes from go/parser alone (no type checking): files of
// every build constraint are read, and a line two of them print alike is
// kept once.
var update = flag.Bool("update", false, "rewrite docs/api/*.txt from the source (TestPublicAPI)")

const apiDir = "docs/api"

// apiSkipDirs are directories (at any depth) whose packages are not part
// of the public API: not importable, examples, commands and tooling.
var apiSkipDirs = map[string]bool{"internal": true, "examples": true, "testdata": true, "cmd": true, "scripts": true}

func TestPublicAPI(t *testing.T) {
	root := repoRoot(t)
	pkgs := apiPackages(t, root)
	want := map[string]bool{} // file names under docs/api
	var fails []string
	for _, rel := range pkgs {
		lines, ok := apiListing(t, root, rel)
		if !ok {
			continue
		}
		name := apiFileName(rel)
		want[name] = true
		t.Logf("%-20s %4d exported identifiers", rel, len(lines))
		if rel == "." {
			// The same declarations as TestHouseMeasures' "root exported
			// identifiers", plus the interfaces' embedded interfaces.
			kinds := map[string]int{}
			for _, l := range lines {
				kinds[l[:strings.IndexByte(l, ' ')]]++
			}
			var parts []string
			for _, k := range sortedKeys(kinds) {
				parts = append(parts, k+" "+strconv.Itoa(kinds[k]))
			}
			t.Logf("root (pmcp): %d lines (%s)", len(lines), strings.Join(parts, ", "))
		}
		got := strings.Join(lines, "\n") + "\n"
		path := filepath.Join(root, apiDir, name)
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			fails = append(fails, "--- "+filepath.ToSlash(filepath.Join(apiDir, name))+" (missing)\n"+prefixLines("+ ", lines))
			continue
		}
		if string(b) == got {
			continue
		}
		old := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		fails = append(fails, "--- "+filepath.ToSlash(filepath.Join(apiDir, name))+"\n+++ source of "+rel+"\n"+lineDiff(old, lines))
	}
	// A listing whose package is gone.
	ents, err := os.ReadDir(filepath.Join(root, apiDir))
	if err != nil && !(*update && os.IsNotExist(err)) {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".txt") || want[e.Name()] {
			continue
		}
		if *update {
			if err := os.Remove(filepath.Join(root, apiDir, e.Name())); err != nil {
				t.Fatal(err)
			}
			continue
		}
		fails = append(fails, "--- "+apiDir+"/"+e.Name()+" (no such package any more)")
	}
	if len(fails) > 0 {
		t.Errorf("the public API changed: review docs/api and run go test ./internal/housekeeping -run TestPublicAPI -update\n%s", strings.Join(fails, "\n"))
	}
}

// apiPackages walks the module for directories holding non-test Go files,
// skipping apiSkipDirs, hidden directories and nested modules. Each is a
// slash path relative to root ("." for the root package), sorted.
func apiPackages(t *testing.T, root string) []string {
	t.Helper()
	var pkgs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if path != root {
			n := d.Name()
			if apiSkipDirs[n] || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		ents, err := os.ReadDir(path)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if n := e.Name(); !e.IsDir() && strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
				rel, err := filepath.Rel(root, path)
				if err != nil {
					return err
				}
				pkgs = append(pkgs, filepath.ToSlash(rel))
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(pkgs)
	return pkgs
}

// apiFileName is the listing's file name: the package path with / as _,
// the root package as pmcp.
func apiFileName(rel string) string {
	if rel == "." {
		return "pmcp.txt"
	}
	return strings.ReplaceAll(rel, "/", "_") + ".txt"
}

// apiListing parses the non-test files of root/rel and returns its sorted,
// distinct API lines; ok is false for a command (package main).
func apiListing(t *testing.T, root, rel string) (lines []string, ok bool) {
	t.Helper()
	dir := filepath.Join(root, filepath.FromSlash(rel))
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name.Name == "main" || strings.HasSuffix(f.Name.Name, "_test") {
			continue
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, false
	}
	l := apiLister{fset: fset, exported: map[string]bool{}}
	for _, f := range files {
		for _, d := range f.Decls {
			if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.TYPE {
				for _, s := range gd.Specs {
					if ts := s.(*ast.TypeSpec); ts.Name.IsExported() {
						l.exported[ts.Name.Name] = true
					}
				}
			}
		}
	}
	for _, f := range files {
		for _, d := range f.Decls {
			l.decl(d)
		}
	}
	slices.Sort(l.lines)
	return slices.Compact(l.lines), true
}

type apiLister struct {
	fset     *token.FileSet
	exported map[string]bool // exported type names of the package
	lines    []string
}

func (l *apiLister) add(s string) { l.lines = append(l.lines, s) }

// spaces matches a line break with the indentation around it.
var spaces = regexp.MustCompile(`[ \t]*\n[ \t]*`)

// str prints a node with go/printer on one line: a line break becomes a
// space and the trailing comma of a broken parameter list goes.
func (l *apiLister) str(n any) string {
	var b bytes.Buffer
	if err := printer.Fprint(&b, l.fset, n); err != nil {
		panic(err) // only for a node type printer does not know
	}
	s := spaces.ReplaceAllString(b.String(), " ")
	s = strings.NewReplacer("( ", "(", ", )", ")", ",)", ")", "[ ", "[", ", ]", "]").Replace(s)
	return s
}

// funcSig is "Name[T any](params) results" of a function declaration.
func (l *apiLister) funcSig(d *ast.FuncDecl) string {
	return strings.TrimPrefix(l.str(&ast.FuncDecl{Name: d.Name, Type: d.Type}), "func ")
}

func (l *apiLister) decl(d ast.Decl) {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if !d.Name.IsExported() {
			return
		}
		if d.Recv == nil {
			l.add("func " + l.funcSig(d))
			return
		}
		if len(d.Recv.List) == 0 || !l.exported[receiverName(d)] {
			return
		}
		l.add("method (" + l.str(d.Recv.List[0].Type) + ") " + l.funcSig(d))
	case *ast.GenDecl:
		switch d.Tok {
		case token.TYPE:
			for _, s := range d.Specs {
				l.typeSpec(s.(*ast.TypeSpec))
			}
		case token.CONST, token.VAR:
			l.valueSpecs(d)
		}
	}
}

func (l *apiLister) typeSpec(s *ast.TypeSpec) {
	if !s.Name.IsExported() {
		return
	}
	name := s.Name.Name
	head := "type " + name
	if s.TypeParams != nil {
		head += strings.Replace(l.str(&ast.FuncType{Params: s.TypeParams}), "func(", "[", 1)
		head = head[:len(head)-1] + "]"
	}
	if s.Assign.IsValid() {
		l.add(head + " = " + l.str(s.Type))
		return
	}
	switch tt := s.Type.(type) {
	case *ast.StructType:
		l.add(head + " struct")
		for _, f := range tt.Fields.List {
			if len(f.Names) == 0 {
				if en := embeddedName(f.Type); ast.IsExported(en) {
					l.add("field " + name + "." + en + " (embedded)")
				}
				continue
			}
			for _, fn := range f.Names {
				if fn.IsExported() {
					l.add("field " + name + "." + fn.Name + " " + l.str(f.Type))
				}
			}
		}
	case *ast.InterfaceType:
		l.add(head + " interface")
		for _, m := range tt.Methods.List {
			if len(m.Names) == 0 { // an embedded interface or a type set
				l.add("ifaceembed " + name + " " + l.str(m.Type))
				continue
			}
			for _, mn := range m.Names {
				if mn.IsExported() {
					l.add("ifacemethod " + name + "." + mn.Name + strings.TrimPrefix(l.str(m.Type), "func"))
				}
			}
		}
	default:
		l.add(head + " " + l.str(s.Type))
	}
}

// valueSpecs lists a const or var block. A constant without type and value
// repeats the previous spec's (the implicit repetition of a const block);
// see constValue for the value printed.
func (l *apiLister) valueSpecs(d *ast.GenDecl) {
	var typ ast.Expr
	var values []ast.Expr
	for i, s := range d.Specs {
		vs := s.(*ast.ValueSpec)
		if d.Tok == token.CONST && vs.Type == nil && len(vs.Values) == 0 {
			// implicit repetition: keep typ and values
		} else {
			typ, values = vs.Type, vs.Values
		}
		for j, n := range vs.Names {
			if !n.IsExported() {
				continue
			}
			line := "var " + n.Name
			if d.Tok == token.CONST {
				line = "const " + n.Name
			}
			if typ != nil {
				line += " " + l.str(typ)
			}
			if d.Tok == token.CONST && j < len(values) {
				if v, ok := l.constValue(values[j], i); ok {
					line += " = " + v
				}
			}
			l.add(line)
		}
	}
}

// constValue is the value of a constant expression of literals and iota
// (iota is the spec's index in its block), or else the expression as
// written when it does not use iota.
func (l *apiLister) constValue(x ast.Expr, index int) (string, bool) {
	if v := evalConst(x, index); v.Kind() != constant.Unknown {
		return v.ExactString(), true
	}
	usesIota := false
	ast.Inspect(x, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && id.Name == "iota" {
			usesIota = true
		}
		return true
	})
	if usesIota {
		return "", false
	}
	return l.str(x), true
}

// evalConst evaluates literals, iota, parentheses and operators; anything
// else (a name, a call) gives an Unknown value.
func evalConst(x ast.Expr, index int) constant.Value {
	switch y := x.(type) {
	case *ast.BasicLit:
		return constant.MakeFromLiteral(y.Value, y.Kind, 0)
	case *ast.Ident:
		if y.Name == "iota" {
			return constant.MakeInt64(int64(index))
		}
	case *ast.ParenExpr:
		return evalConst(y.X, index)
	case *ast.UnaryExpr:
		if v := evalConst(y.X, index); v.Kind() != constant.Unknown && (y.Op == token.SUB || y.Op == token.ADD || y.Op == token.XOR) {
			return constant.UnaryOp(y.Op, v, 0)
		}
	case *ast.BinaryExpr:
		a, b := evalConst(y.X, index), evalConst(y.Y, index)
		if a.Kind() == constant.Unknown || b.Kind() == constant.Unknown {
			break
		}
		switch y.Op {
		case token.SHL, token.SHR:
			if n, ok := constant.Uint64Val(b); ok && n < 64 {
				return constant.Shift(a, y.Op, uint(n))
			}
		case token.ADD, token.SUB, token.MUL, token.OR, token.AND, token.XOR, token.AND_NOT:
			if a.Kind() == b.Kind() || (a.Kind() != constant.String && b.Kind() != constant.String) {
				return constant.BinaryOp(a, y.Op, b)
			}
		}
	}
	return constant.MakeUnknown()
}

// lineDiff lists, in order, the lines only in old ("- ") and only in cur
// ("+ "); both are sorted and distinct.
func lineDiff(old, cur []string) string {
	var b strings.Builder
	i, j := 0, 0
	for i < len(old) || j < len(cur) {
		switch {
		case j == len(cur) || (i < len(old) && old[i] < cur[j]):
			b.WriteString("- " + old[i] + "\n")
			i++
		case i == len(old) || cur[j] < old[i]:
			b.WriteString("+ " + cur[j] + "\n")
			j++
		default:
			i++
			j++
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func prefixLines(prefix string, lines []string) string {
	return prefix + strings.Join(lines, "\n"+prefix)
}
