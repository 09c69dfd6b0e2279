package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// maxBuildModules bounds the modules the default build of cmd/pmcp needs
// (go list -deps; this module and the three local ones included): a first
// `go run ./cmd/pmcp serve` on an empty module cache fetches one archive
// per module that is not local. It was 50 (46 archives) before the
// OTLP/gRPC exporters moved behind the pmcp_otlpgrpc build tag.
const maxBuildModules = 47

// TestDefaultBuildModules: the default build of pmcp links no OTLP/gRPC
// exporter (OTLP over HTTP is the default protocol; gRPC export needs
// -tags pmcp_otlpgrpc) and needs at most maxBuildModules modules.
func TestDefaultBuildModules(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var mods []string
	for _, m := range strings.Fields(string(out)) {
		if !slices.Contains(mods, m) {
			mods = append(mods, m)
		}
	}
	slices.Sort(mods)
	for _, never := range []string{
		"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc",
		"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc",
		"github.com/creack/pty", // tests only: the terminal width comes from x/term
	} {
		if slices.Contains(mods, never) {
			t.Errorf("the default build depends on %s", never)
		}
	}
	if len(mods) > maxBuildModules || len(mods) < 10 {
		t.Errorf("the default build needs %d modules, want at most %d:\n%s", len(mods), maxBuildModules, strings.Join(mods, "\n"))
	}
}
