package main

import (
	"strings"
	"testing"
)

// logLevelText is the description of --log-level in a verb's usage.
func logLevelText(t *testing.T, usage string) string {
	t.Helper()
	_, after, ok := strings.Cut(usage, "  --log-level VALUE\n")
	if !ok {
		t.Fatalf("no --log-level in:\n%s", usage)
	}
	line, _, _ := strings.Cut(after, "\n")
	return line
}

// TestHelpTexts: each verb's usage says each default once, lists only
// the flags that apply to it, and says what --log-level shows for it.
func TestHelpTexts(t *testing.T) {
	usage := map[string]string{}
	for _, v := range allVerbs {
		_, out, _ := cli(t, "help", v)
		usage[v] = out
		for _, l := range strings.Split(out, "\n") {
			if strings.Count(l, "(default") > 1 {
				t.Errorf("help %s: %q", v, l)
			}
		}
	}
	for _, never := range []string{"--era", "--no-progress", "--json", "--elicit-json", "--sampling-cmd", "COMMAND", "before --"} {
		if strings.Contains(usage["login"], never) {
			t.Errorf("help login lists %q:\n%s", never, usage["login"])
		}
	}
	if l := logLevelText(t, usage["bridge"]); !strings.Contains(l, "debug also the access log") {
		t.Errorf("help bridge --log-level: %s", l)
	}
	if l := logLevelText(t, usage["serve"]); !strings.Contains(l, "also the access log") || strings.Contains(l, "server's log records") {
		t.Errorf("help serve --log-level: %s", l)
	}
	if l := logLevelText(t, usage["call"]); strings.Contains(l, "access log") || !strings.Contains(l, "server's log records") {
		t.Errorf("help call --log-level: %s", l)
	}
}
