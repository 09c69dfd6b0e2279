package main

import (
	"context"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gopmcp/pmcp"
)

var allVerbs = slices.DeleteFunc(slices.Clone(commandNames), func(s string) bool { return s == "help" })

// TestHelpEveryVerb: -h, --help and `pmcp help VERB` print the verb's
// usage on stdout and exit 0.
func TestHelpEveryVerb(t *testing.T) {
	for _, v := range allVerbs {
		for _, args := range [][]string{{v, "-h"}, {v, "--help"}, {"help", v}} {
			code, out, errs := cli(t, args...)
			if code != exitOK || !strings.Contains(out, "usage: pmcp "+v) || !strings.Contains(out, "-log-level") {
				t.Errorf("%q: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out, errs)
			}
		}
	}
	if code, _, errs := cli(t, "help", "frobnicate"); code != exitUsage || !strings.Contains(errs, `unknown command "frobnicate"`) {
		t.Errorf("help frobnicate: exit %d %s", code, errs)
	}
}

// doubled matches an error message that repeats the program's prefix.
var doubled = regexp.MustCompile(`pmcp[^:\n]*: (.*: )?pmcp:`)

// oneLine checks that stderr is a single message without a doubled
// prefix.
func oneLine(t *testing.T, what, errs string) {
	t.Helper()
	if n := strings.Count(strings.TrimSpace(errs), "\n"); n != 0 || errs == "" {
		t.Errorf("%s: want one line on stderr, got:\n%s", what, errs)
	}
	if doubled.MatchString(errs) {
		t.Errorf("%s: doubled prefix: %s", what, errs)
	}
}

// TestUsageErrors: each usage error exits 2 with one clear line.
func TestUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"call", "--url", "ftp://127.0.0.1/mcp", "add"}, "want http:// or https://"},
		{[]string{"inspect", "--url", "127.0.0.1:8080/mcp"}, "want http:// or https://"},
		{[]string{"call", "--url", "http://127.0.0.1:1/mcp"}, "missing the tool name"},
		{[]string{"call", "--bogus", "--url", "http://127.0.0.1:1/mcp", "add"}, "-bogus"},
		{[]string{"serve", "--bogus"}, "-bogus"},
		{[]string{"logout", "--bogus"}, "-bogus"},
		{[]string{"serve", "extra"}, "unexpected argument"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"inspect", "--url", "http://127.0.0.1:1/mcp", "extra"}, "takes no arguments"},
		{[]string{"call", "--log-level", "loud", "--url", "http://127.0.0.1:1/mcp", "add"}, "--log-level"},
		{[]string{"serve", "--log-level", "loud"}, "--log-level"},
	} {
		code, _, errs := cli(t, c.args...)
		if code != exitUsage || !strings.Contains(errs, c.msg) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, code, errs, c.msg)
		}
		oneLine(t, strings.Join(c.args, " "), errs)
	}
}

// TestNoDoubledPrefix: errors that come from the library (which start
// with "pmcp:") are not shown as "pmcp call: pmcp: ...".
func TestNoDoubledPrefix(t *testing.T) {
	flags, _ := serverArgs(t, "http")
	code, _, errs := cli(t, append([]string{"call", "test_sampling", "prompt=x", "--era", "modern", "--sampling-cmd", "exit 3"}, flags...)...)
	if code == exitOK || doubled.MatchString(errs) {
		t.Errorf("failed sampling: exit %d\n%s", code, errs)
	}
	code, _, errs = cli(t, "inspect", "--url", "http://127.0.0.1:1/mcp", "--timeout", "2s")
	if code != exitConn || doubled.MatchString(errs) {
		t.Errorf("unreachable: exit %d\n%s", code, errs)
	}
}

// TestChildExitStatus: a stdio server that dies shows how it ended.
func TestChildExitStatus(t *testing.T) {
	code, _, errs := cli(t, "inspect", "--", "sh", "-c", "echo boom >&2; exit 7")
	if code != exitConn || !strings.Contains(errs, "exit status 7") || !strings.Contains(errs, "boom") {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if doubled.MatchString(errs) {
		t.Fatalf("doubled prefix: %s", errs)
	}
}

// TestInspectLongNames: names are never cut, the descriptions are, to the
// width ($COLUMNS when stdout is no terminal): a name longer than the
// column has a line of its own; --json keeps everything whole.
func TestInspectLongNames(t *testing.T) {
	long := strings.Repeat("very_long_tool_name_", 6) + "end"
	s, err := pmcp.NewServer(pmcp.ServerOptions{Name: "long", Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	type noArgs struct{}
	for _, n := range []string{long, "short"} {
		if err := pmcp.AddTool(s, &pmcp.Tool{Name: n, Description: strings.Repeat("A description that goes on. ", 8)},
			func(context.Context, *pmcp.RequestHandlerExtra, noArgs) (string, error) { return "", nil }); err != nil {
			t.Fatal(err)
		}
	}
	h := pmcp.NewStreamableHTTPHandler(s, pmcp.StreamableHTTPOptions{})
	ts := httptest.NewServer(h)
	defer func() { _ = h.Close(); ts.Close() }()
	t.Setenv("COLUMNS", "60")
	for _, args := range [][]string{{"inspect"}, {"tools", "list"}} {
		code, out, errs := cli(t, append(args, "--url", ts.URL)...)
		if code != exitOK {
			t.Fatalf("%v: exit %d %s", args, code, errs)
		}
		for _, line := range strings.Split(out, "\n") {
			if utf8.RuneCountInString(line) > 60 && strings.TrimSpace(line) != long {
				t.Errorf("%v: line wider than 60: %q", args, line)
			}
		}
		// The long name whole on its line, its description under it in the column.
		if !regexp.MustCompile(`(?m)^  `+long+`\n   +A description[^\n]*…$`).MatchString(out) || !regexp.MustCompile(`(?m)^  short +A description`).MatchString(out) {
			t.Errorf("%v: names:\n%s", args, out)
		}
	}
	if code, out, _ := cli(t, "tools", "list", "--json", "--url", ts.URL); code != exitOK || !strings.Contains(out, `"`+long+`"`) {
		t.Errorf("--json lost the full name:\n%s", out)
	}
}

// TestLogLevelEverywhere: every verb takes the same --log-level values
// (MCP level names, warn for warning, off), and for client commands the
// level also filters the server's log records.
func TestLogLevelEverywhere(t *testing.T) {
	for _, name := range allVerbs {
		for in, want := range map[string]pmcp.LoggingLevel{"warn": pmcp.LevelWarning, "warning": pmcp.LevelWarning, "off": pmcp.LevelOff, "debug": pmcp.LevelDebug, "critical": pmcp.LevelCritical} {
			v := verbFor(name)
			if _, _, err := v.parse([]string{"--log-level", in}); err != nil || v.logLevel.level != want {
				t.Errorf("%s --log-level %s: %v, level %v", name, in, err, v.logLevel.level)
			}
		}
		if _, _, err := verbFor(name).parse([]string{"--log-level", "loud"}); err == nil {
			t.Errorf("%s --log-level loud accepted", name)
		}
	}
	url := everythingURL(t)
	_, _, errs := cli(t, "call", "test_tool_with_logging", "--log-level", "error", "--url", url)
	if strings.Contains(errs, "[server info]") {
		t.Errorf("--log-level error showed info records:\n%s", errs)
	}
	_, _, errs = cli(t, "call", "test_tool_with_logging", "--log-level", "debug", "--url", url)
	if !strings.Contains(errs, "[server info]") {
		t.Errorf("--log-level debug hid info records:\n%s", errs)
	}
}
