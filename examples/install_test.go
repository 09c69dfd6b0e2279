package examples_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// runMarker precedes a README shell block that TestREADMEInstall runs:
// "<!-- run: in the clone -->" runs it at the root of this repository,
// "<!-- run: beside the clone -->" in an empty directory next to a
// "pmcp" link to it, as a user's own module would sit next to a clone.
var runMarker = regexp.MustCompile(`^<!-- run: (in the clone|beside the clone) -->$`)

type shBlock struct {
	line        int // of the opening fence
	where, text string
}

func readmeRunBlocks(t *testing.T) []shBlock {
	t.Helper()
	var blocks []shBlock
	for _, f := range readmeFences(t) {
		m := runMarker.FindStringSubmatch(f.prev)
		if m == nil {
			continue
		}
		if f.lang != "sh" {
			t.Fatalf("README.md:%d: a run marker is not followed by a ```sh block", f.line)
		}
		blocks = append(blocks, shBlock{line: f.line, where: m[1], text: f.text})
	}
	return blocks
}

// userGoEnv is the environment of a go command run for a user: this
// test's, without GOWORK (scripts/test.sh sets GOWORK=off for its own
// checks; it would hide the clone's go.work), with extra set over it.
func userGoEnv(extra ...string) []string {
	drop := []string{"GOWORK"}
	for _, kv := range extra {
		k, _, _ := strings.Cut(kv, "=")
		drop = append(drop, k)
	}
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !slices.Contains(drop, k) {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// TestREADMEInstall runs README "Install" as a user does: go install
// ./cmd/pmcp in the clone, then pmcp version from the GOBIN it went to;
// and each way of using the SDK from a module of one's own before it is
// published (a replace directive; a go.work) next to a clone. Every block
// reaches the Go module proxy as the user's go command does: go mod tidy
// wants more than building the clone fetched (the modules that the tests
// of the SDK's dependencies import, go-cmp for jsonschema-go's), so an
// offline run passed only on a machine whose module cache happened to
// hold them.
func TestREADMEInstall(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	blocks := readmeRunBlocks(t)
	var in, beside int
	for _, b := range blocks {
		switch b.where {
		case "in the clone":
			in++
		case "beside the clone":
			beside++
		}
	}
	if in != 1 || beside != 2 {
		t.Fatalf("README.md has %d run blocks in the clone and %d beside it, want 1 and 2 (Install)", in, beside)
	}
	for _, b := range blocks {
		t.Run(fmt.Sprintf("README.md:%d", b.line), func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command("sh", "-e", "-c", b.text)
			var check func(out string)
			switch b.where {
			case "in the clone":
				bin := filepath.Join(dir, "bin")
				cmd.Dir = root
				// The network as the user has it: go.work joins every
				// module of the clone, whose dependencies a fresh module
				// cache may not have yet.
				cmd.Env = userGoEnv("GOBIN="+bin, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
				check = func(out string) {
					if !strings.Contains(out, "protocol: 2026-07-28 2025-11-25") || !strings.Contains(out, "module:   github.com/gopmcp/pmcp/cmd/pmcp") {
						t.Errorf("pmcp version printed:\n%s", out)
					}
				}
			case "beside the clone":
				if err := os.Symlink(root, filepath.Join(dir, "pmcp")); err != nil {
					t.Fatal(err)
				}
				cmd.Dir = dir
				// The new module has no go.sum of its own: without a
				// checksum database (this test's machines reach the
				// proxy, not sum.golang.org) its sums come from the proxy.
				cmd.Env = userGoEnv("GOSUMDB=off")
				check = func(string) {
					if _, err := os.Stat(filepath.Join(dir, "myserver", "myserver")); err != nil {
						t.Errorf("no server built: %v", err)
					}
				}
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("README.md:%d: %v\n%s\n--- output\n%s", b.line, err, b.text, out)
			}
			check(string(out))
		})
	}
}
