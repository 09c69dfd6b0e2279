package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// maxBuildArchives bounds the modules outside this repository that the
// default build of cmd/pmcp needs (go list -deps): a first
// `go run ./cmd/pmcp serve` on an empty module cache downloads one archive
// for each. It was 46 (gRPC, genproto and grpc-gateway among them) before
// otelenv got its own OTLP/HTTP exporters and the OTLP/gRPC ones moved
// behind the pmcp_otlpgrpc build tag; 32 since.
const maxBuildArchives = 32

// TestDefaultBuildModules: the default build of pmcp links no gRPC (OTLP
// over HTTP is the default protocol; gRPC export needs -tags
// pmcp_otlpgrpc) and needs at most maxBuildArchives modules from outside.
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
	var outside []string
	for _, m := range mods {
		for _, never := range []string{
			"google.golang.org/grpc",
			"google.golang.org/genproto/",
			"github.com/grpc-ecosystem/",
			"go.opentelemetry.io/otel/exporters/otlp/",
			"github.com/creack/pty", // tests only: the terminal width comes from x/term
		} {
			if m == never || strings.HasPrefix(m, never) {
				t.Errorf("the default build depends on %s", m)
			}
		}
		if m != "github.com/gopmcp/pmcp" && !strings.HasPrefix(m, "github.com/gopmcp/pmcp/") {
			outside = append(outside, m)
		}
	}
	if len(outside) > maxBuildArchives || len(outside) < 10 {
		t.Errorf("the default build needs %d modules from outside, want at most %d:\n%s", len(outside), maxBuildArchives, strings.Join(outside, "\n"))
	}
}
