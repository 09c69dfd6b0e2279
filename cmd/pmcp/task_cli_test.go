package main

import (
	"os"
	"strings"
	"testing"
)

// checkStatusLines checks the "task ID: status" lines pmcp call --task
// wrote on stderr: one task, each line a change (none repeated back to
// back), and exactly one terminal line, want, last.
func checkStatusLines(t *testing.T, stderr, want string) {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "task ") {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		t.Errorf("no task status on stderr: %q", stderr)
		return
	}
	id, _, _ := strings.Cut(lines[0], ":")
	terminal := 0
	for i, l := range lines {
		if !strings.HasPrefix(l, id+":") {
			t.Errorf("line %q is about another task than %q", l, id)
		}
		if i > 0 && l == lines[i-1] {
			t.Errorf("status line %q shown twice: %q", l, lines)
		}
		st := strings.TrimPrefix(l, id+": ")
		st, _, _ = strings.Cut(st, " (")
		if st == "completed" || st == "failed" || st == "cancelled" {
			terminal++
		}
	}
	last := strings.TrimPrefix(lines[len(lines)-1], id+": ")
	last, _, _ = strings.Cut(last, " (")
	if terminal != 1 || last != want {
		t.Errorf("status lines %q: want exactly one terminal line, %q, last", lines, want)
	}
}

// TestClientCallTaskStatusLines: pmcp call --task shows each status of
// the task once, the terminal one included, in both eras, against the
// server directly and through pmcp bridge --listen (in front of pmcp
// serve --stdio): a required-task tool ending with a tool error and an
// optional one that works for a while.
func TestClientCallTaskStatusLines(t *testing.T) {
	self := os.Args[0]
	targets := map[string]string{
		"direct": everythingURL(t),
		"bridge": startBridgeHTTP(t, "--", self, "serve", "--stdio", "--log-level", "off"),
	}
	for _, target := range []string{"direct", "bridge"} {
		url := targets[target]
		for _, era := range []string{"modern", "legacy"} {
			t.Run(target+"/"+era, func(t *testing.T) {
				code, out, errs := cli(t, "call", "failing_job", "--task", "--era", era, "--url", url)
				if code != exitError || !strings.Contains(out, "failed on purpose") {
					t.Fatalf("failing_job: exit %d, out %q, err %q", code, out, errs)
				}
				// A tool error: completed with isError (modern), failed (legacy).
				want := "completed"
				if era == "legacy" {
					want = "failed"
				}
				checkStatusLines(t, errs, want)

				code, out, errs = cli(t, "call", "slow_compute", "seconds=0.2", "label=cli", "--task", "--era", era, "--url", url)
				if code != exitOK || !strings.Contains(out, `computed "cli"`) {
					t.Fatalf("slow_compute: exit %d, out %q, err %q", code, out, errs)
				}
				if !strings.Contains(errs, "working") {
					t.Errorf("slow_compute never showed working: %q", errs)
				}
				checkStatusLines(t, errs, "completed")
			})
		}
	}
}
