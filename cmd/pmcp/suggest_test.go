package main

import (
	"strings"
	"testing"
)

// TestDidYouMean: a mistyped command or tool name gets the close known
// name; a name close to nothing gets none.
func TestDidYouMean(t *testing.T) {
	for _, tc := range []struct{ args, want, not string }{
		{"inspcet", `did you mean "inspect"?`, ""},
		{"tool", `did you mean "tools"?`, ""},
		{"doctr", `did you mean "doctor"?`, ""},
		{"frobnicate", "pmcp help lists them", "did you mean"},
	} {
		code, _, errs := cli(t, tc.args)
		if code != exitUsage || !strings.Contains(errs, tc.want) || (tc.not != "" && strings.Contains(errs, tc.not)) {
			t.Errorf("pmcp %s: exit %d\n%s", tc.args, code, errs)
		}
	}
	if _, _, errs := cli(t, "help", "inspcet"); !strings.Contains(errs, `did you mean "inspect"?`) {
		t.Errorf("pmcp help inspcet:\n%s", errs)
	}

	flags, tail := serverArgs(t, "http")
	code, _, errs := cli(t, cmdline(flags, []string{"call", "ech", "text=hi"}, tail)...)
	if code != exitError || !strings.Contains(errs, `did you mean "echo"?`) {
		t.Errorf("pmcp call ech: exit %d\n%s", code, errs)
	}
	_, _, errs = cli(t, cmdline(flags, []string{"call", "zzzzzzzz"}, tail)...)
	if strings.Contains(errs, "did you mean") || !strings.Contains(errs, "pmcp tools list") {
		t.Errorf("pmcp call zzzzzzzz:\n%s", errs)
	}
}

// TestCommandsDispatch: every name suggestions are drawn from is a
// command.
func TestCommandsDispatch(t *testing.T) {
	for _, name := range commandNames {
		if _, _, errs := cli(t, name, "-h"); strings.Contains(errs, "unknown command") {
			t.Errorf("%s: %s", name, errs)
		}
	}
}

func TestClosest(t *testing.T) {
	known := []string{"echo", "add", "longRunningOperation", "sampleLLM"}
	for in, want := range map[string]string{"ech": "echo", "Echo": "echo", "ad": "add", "longRunningOp": "", "longrunningoperation": "longRunningOperation", "xyz": "", "sampleLML": "sampleLLM"} {
		if got := closest(in, known); got != want {
			t.Errorf("closest(%q) = %q, want %q", in, got, want)
		}
	}
}
