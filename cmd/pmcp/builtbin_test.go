package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// built holds the binaries buildBinary made, one go build per package per
// test run, in a directory TestMain removes.
var built struct {
	sync.Mutex
	dir  string
	bins map[string]string
}

// buildBinary builds the main package pkg (an import path, or "." for
// pmcp) with go build, as a user does (VCS information stamped as by
// default, whatever GOFLAGS says), and returns the binary's absolute path.
func buildBinary(t *testing.T, pkg string) string {
	t.Helper()
	built.Lock()
	defer built.Unlock()
	if bin, ok := built.bins[pkg]; ok {
		return bin
	}
	if built.dir == "" {
		dir, err := os.MkdirTemp("", "pmcp-built-")
		if err != nil {
			t.Fatal(err)
		}
		built.dir, built.bins = dir, map[string]string{}
	}
	name := filepath.Base(pkg)
	if pkg == "." {
		name = "pmcp"
	}
	bin := filepath.Join(built.dir, name)
	out, err := exec.Command("go", "build", "-buildvcs=auto", "-o", bin, pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, strings.TrimSpace(string(out)))
	}
	built.bins[pkg] = bin
	return bin
}

// removeBuilt deletes what buildBinary made (from TestMain).
func removeBuilt(int) {
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
}
