package main

import (
	"strings"
	"testing"
)

// TestShell drives `pmcp shell` on a terminal: the tools are listed, Tab
// completes a tool name, Enter calls it, Up recalls the line, an
// elicitation is answered at the prompt, Ctrl-D leaves.
func TestShell(t *testing.T) {
	flags, _ := serverArgs(t, "http")
	code, out, term := ptyRun(t, []ptyStep{
		{"pmcp> ", "call ad\t"},
		{"call add ", "a=1 b=2\r"},
		{"pmcp> ", "\x1b[A"},
		{"call add a=1 b=2", "\r"},
		{"pmcp> ", "call greet_user\r"},
		{"[d]ecline, [c]ancel [a]: ", "\r"},
		{"name [text]: ", "Ada\r"},
		{"pmcp> ", "bogus\r"},
		{"unknown command", "\x04"},
	}, append([]string{"shell"}, flags...)...)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, term)
	}
	if !strings.Contains(out, " tools: add, ") || strings.Count(out, `{"sum":3}`) != 2 || !strings.Contains(out, "Hello, Ada!") {
		t.Fatalf("stdout:\n%s\nterminal:\n%s", out, term)
	}
}

// TestShellScript: without a terminal the shell reads commands from stdin.
func TestShellScript(t *testing.T) {
	flags, _ := serverArgs(t, "http")
	var out, errb strings.Builder
	code := run(append([]string{"shell"}, flags...), strings.NewReader("tools\ncall add a=2 b=3\ncall echo 'text=hello world'\ncall nope\n"), &out, &errb)
	if code != exitOK || !strings.Contains(out.String(), `{"sum":5}`) || !strings.Contains(out.String(), "hello world") || !strings.Contains(out.String(), "Adds two integers.") || !strings.Contains(errb.String(), "nope") {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
	}
}

func TestSplitWords(t *testing.T) {
	got, err := splitWords(`call echo 'text=a b' "x=\"q\"" y=1`)
	if err != nil || strings.Join(got, "|") != `call|echo|text=a b|x="q"|y=1` {
		t.Fatalf("%q %v", got, err)
	}
	if _, err := splitWords(`call 'open`); err == nil {
		t.Fatal("unterminated quote accepted")
	}
}
