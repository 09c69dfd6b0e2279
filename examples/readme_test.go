package examples_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// exampleMarker precedes every Go block of the README and names the file it
// is copied from: "<!-- example: examples/x/main.go -->" for the whole file,
// "<!-- example: examples/x/main.go#name -->" for the lines between
// "// example:name begin" and "// example:name end" in that file.
var exampleMarker = regexp.MustCompile(`^<!-- example: (\S+?)(?:#(\S+))? -->$`)

type goBlock struct {
	line       int // of the opening fence
	file, part string
	text       string
}

// fenced is one fenced code block of the README.
type fenced struct {
	line int    // of the opening fence
	lang string // the fence's info string: go, sh, json
	prev string // the line before the fence (a marker comment, if any)
	text string
}

// readmeFences returns every fenced code block of the README.
func readmeFences(t *testing.T) []fenced {
	t.Helper()
	f, err := os.Open("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		blocks []fenced
		prev   string
		cur    *fenced
		body   []string
	)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case cur != nil && l == "```":
			cur.text = strings.Join(body, "\n") + "\n"
			blocks = append(blocks, *cur)
			cur, body = nil, nil
		case cur != nil:
			body = append(body, l)
		case strings.HasPrefix(l, "```"):
			cur = &fenced{line: n, lang: strings.TrimPrefix(l, "```"), prev: prev}
		}
		prev = l
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Fatalf("README.md:%d: unterminated code block", cur.line)
	}
	return blocks
}

func readmeGoBlocks(t *testing.T) []goBlock {
	t.Helper()
	var blocks []goBlock
	for _, f := range readmeFences(t) {
		if f.lang != "go" {
			continue
		}
		b := goBlock{line: f.line, text: f.text}
		if m := exampleMarker.FindStringSubmatch(f.prev); m != nil {
			b.file, b.part = m[1], m[2]
		}
		blocks = append(blocks, b)
	}
	return blocks
}

// excerpt returns the lines of src between the begin and end markers of
// part, without the blank lines at either end.
func excerpt(src, part string) (string, bool) {
	lines := strings.Split(src, "\n")
	b := slices.Index(lines, "// example:"+part+" begin")
	e := slices.Index(lines, "// example:"+part+" end")
	if b < 0 || e < b {
		return "", false
	}
	lines = lines[b+1 : e]
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n") + "\n", true
}

// Every Go block of the README is a verbatim copy of a program under
// examples/ (which TestQuickstart and the others build and run), so README
// code cannot drift from code that compiles and works.
func TestREADMEGoBlocksMatchExamples(t *testing.T) {
	blocks := readmeGoBlocks(t)
	if len(blocks) == 0 {
		t.Fatal("README.md has no Go code blocks; the parser is broken")
	}
	for _, b := range blocks {
		if b.file == "" {
			t.Errorf("README.md:%d: Go block without an <!-- example: examples/.../main.go --> marker on the line before", b.line)
			continue
		}
		if !strings.HasPrefix(b.file, "examples/") {
			t.Errorf("README.md:%d: %s is not under examples/", b.line, b.file)
			continue
		}
		src, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(b.file)))
		if err != nil {
			t.Errorf("README.md:%d: %v", b.line, err)
			continue
		}
		want := string(src)
		if b.part != "" {
			var ok bool
			if want, ok = excerpt(want, b.part); !ok {
				t.Errorf("README.md:%d: %s has no \"// example:%s begin\"/\"end\" markers", b.line, b.file, b.part)
				continue
			}
		}
		if b.text != want {
			t.Errorf("README.md:%d: the block differs from %s%s; copy it again.\n--- README\n%s--- %s\n%s",
				b.line, b.file, map[bool]string{true: "#" + b.part}[b.part != ""], b.text, b.file, want)
		}
	}
}

// .gitignore lists the binary that go build leaves in the directory of
// every main package (and, for the root module, at the root), so no build
// output is committed by accident.
func TestGitignoreCoversEveryCommand(t *testing.T) {
	raw, err := os.ReadFile("../.gitignore")
	if err != nil {
		t.Fatal(err)
	}
	ignored := map[string]bool{}
	for _, l := range strings.Split(string(raw), "\n") {
		ignored[strings.TrimSpace(l)] = true
	}
	found := 0
	for _, parent := range []string{"cmd", "examples", "bench/cmd", "bench/servers"} {
		entries, err := os.ReadDir(filepath.Join("..", parent))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !e.IsDir() || !isMainPackage(t, filepath.Join("..", parent, e.Name())) {
				continue
			}
			found++
			want := []string{"/" + parent + "/" + e.Name() + "/" + e.Name()}
			if parent == "cmd" || parent == "examples" {
				want = append(want, "/"+e.Name())
			}
			for _, w := range want {
				if !ignored[w] {
					t.Errorf(".gitignore lacks %s (the binary of ./%s/%s)", w, parent, e.Name())
				}
			}
		}
	}
	if found < 6 {
		t.Fatalf("found only %d main packages; the directory walk is broken", found)
	}
}

func isMainPackage(t *testing.T, dir string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if regexp.MustCompile(`(?m)^package main$`).Match(src) {
			return true
		}
	}
	return false
}
