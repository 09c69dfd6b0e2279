package main

import (
	"encoding/json"
	"os/exec"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/gopmcp/pmcp"
)

// TestVersion: `pmcp version` names the module, the SDK it was built
// with, the Go version and every protocol version the server speaks.
func TestVersion(t *testing.T) {
	code, out, errs := cli(t, "version")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"module:   github.com/gopmcp/pmcp/cmd/pmcp ",
		"sdk:      github.com/gopmcp/pmcp ",
		"go:       " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n",
		"protocol: " + strings.Join(pmcp.SupportedVersions(), " ") + "\n",
		"revision: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	code, out, errs = cli(t, "version", "--json")
	var v struct {
		Module, SDK, Go, Revision string
		Protocols                 []string
	}
	if err := json.Unmarshal([]byte(out), &v); code != exitOK || err != nil {
		t.Fatalf("--json: exit %d, %v: %s%s", code, err, out, errs)
	}
	if v.Module != "github.com/gopmcp/pmcp/cmd/pmcp" || v.Go != runtime.Version() || len(v.Protocols) != len(pmcp.SupportedVersions()) {
		t.Errorf("--json: %+v", v)
	}
	if code, _, _ := cli(t, "version", "extra"); code != exitUsage {
		t.Errorf("version extra: exit %d, want %d", code, exitUsage)
	}
}

// TestVersionBuildInfo: the VCS settings go build stamps (in a clone;
// not in a git worktree, nor with -buildvcs=false) and a module version
// (go install ...@version) are reported as they are.
func TestVersionBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{
		Main: debug.Module{Path: "github.com/gopmcp/pmcp/cmd/pmcp", Version: "v1.2.3"},
		Deps: []*debug.Module{{Path: "github.com/gopmcp/pmcp", Version: "v1.2.3"}},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-12-02T00:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	v := buildVersionOf(bi)
	if v.Version != "v1.2.3" || v.SDK != "v1.2.3" || v.Revision != "0123456789abcdef0123456789abcdef01234567" || v.Time != "2026-12-02T00:00:00Z" || !v.Modified {
		t.Errorf("%+v", v)
	}
	if v := buildVersionOf(nil); v.Version != "(unknown)" || v.Go != runtime.Version() || v.Revision != "" {
		t.Errorf("no build info: %+v", v)
	}
}

// TestVersionBuilt: a pmcp built with go build reports its module version
// and the VCS revision exactly as its build information (go version -m)
// holds them.
func TestVersionBuilt(t *testing.T) {
	bin := buildBinary(t, ".")
	info, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	// (devel), or in a clone the pseudo-version go build derives from
	// the git revision.
	mod := regexp.MustCompile(`(?m)^\s*mod\s+github\.com/gopmcp/pmcp/cmd/pmcp\s+(\S+)`).FindSubmatch(info)
	if mod == nil {
		t.Fatalf("go version -m has no mod line:\n%s", info)
	}
	want := []string{"module:   github.com/gopmcp/pmcp/cmd/pmcp " + string(mod[1]) + "\n", "revision: unknown"}
	if m := regexp.MustCompile(`(?m)^\s*build\s+vcs\.revision=(\S+)$`).FindSubmatch(info); m != nil {
		want[1] = "revision: " + string(m[1]) + "\n"
	}
	for _, w := range want {
		if !strings.Contains(string(out), w) {
			t.Errorf("no %q in:\n%s\ngo version -m:\n%s", w, out, info)
		}
	}
}
