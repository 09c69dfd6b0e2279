package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/gopmcp/pmcp"
)

// buildVersion is what `pmcp version` reports: from the binary's build
// information (runtime/debug) and the protocol versions of the SDK.
type buildVersion struct {
	Module    string   `json:"module"`
	Version   string   `json:"version"` // "(devel)" when built from a clone
	SDK       string   `json:"sdk"`     // the github.com/gopmcp/pmcp module linked in
	Revision  string   `json:"revision,omitempty"`
	Time      string   `json:"time,omitempty"`
	Modified  bool     `json:"modified"`
	Go        string   `json:"go"`
	Platform  string   `json:"platform"`
	Protocols []string `json:"protocols"`
}

// readBuildVersion reads the running binary's build information.
func readBuildVersion() buildVersion {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return buildVersionOf(bi)
}

// buildVersionOf describes the build bi (nil: none available).
func buildVersionOf(bi *debug.BuildInfo) buildVersion {
	v := buildVersion{
		Module: "github.com/gopmcp/pmcp/cmd/pmcp", Version: "(unknown)", SDK: "(unknown)",
		Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH,
		Protocols: pmcp.SupportedVersions(),
	}
	if bi == nil {
		return v
	}
	if bi.Main.Path != "" {
		v.Module, v.Version = bi.Main.Path, bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path != "github.com/gopmcp/pmcp" {
			continue
		}
		v.SDK = d.Version
		if d.Replace != nil {
			v.SDK += " => " + d.Replace.Path
			if d.Replace.Version != "" && d.Replace.Version != "(devel)" {
				v.SDK += " " + d.Replace.Version
			}
		}
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func versionVerb() (*verb, *bool) {
	v := newVerb("version", "pmcp version [--json]", "Print the version of pmcp: its module version, the git revision it was\nbuilt from (when go build could read it), the Go version and the MCP\nprotocol versions it speaks.")
	asJSON := v.fs.Bool("json", false, "print it as JSON")
	return v, asJSON
}

func version(args []string, stdout, stderr io.Writer) int {
	v, asJSON := versionVerb()
	pos, tail, code, done := v.start(args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) > 0 || tail != nil {
		return v.usageError(stderr, fmt.Errorf("unexpected argument %q", append(pos, tail...)))
	}
	bv := readBuildVersion()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(bv); err != nil {
			fmt.Fprintf(stderr, "pmcp version: %v\n", err)
			return exitError
		}
		return exitOK
	}
	rev, when := bv.Revision, bv.Time
	if rev == "" {
		rev = "unknown (built without VCS information)"
	}
	fmt.Fprintf(stdout, "pmcp %s\n", bv.Version)
	fmt.Fprintf(stdout, "module:   %s %s\n", bv.Module, bv.Version)
	fmt.Fprintf(stdout, "sdk:      github.com/gopmcp/pmcp %s\n", bv.SDK)
	fmt.Fprintf(stdout, "revision: %s\n", rev)
	if when != "" {
		fmt.Fprintf(stdout, "time:     %s\n", when)
		fmt.Fprintf(stdout, "modified: %t\n", bv.Modified)
	}
	fmt.Fprintf(stdout, "go:       %s %s\n", bv.Go, bv.Platform)
	fmt.Fprintf(stdout, "protocol: %s\n", strings.Join(bv.Protocols, " "))
	return exitOK
}
