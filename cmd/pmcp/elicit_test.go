package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
)

// fixtureURL serves a small server with the elicitation shapes the
// everything server lacks: a URL-mode elicitation, and a form with a
// required field, an enum with a default, a boolean and an integer.
func fixtureURL(t *testing.T) string {
	t.Helper()
	s, err := pmcp.NewServer(pmcp.ServerOptions{Name: "fixture", Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	type noArgs struct{}
	show := func(r *pmcp.ElicitResult) string {
		b, _ := pmcp.Marshal(r)
		return string(b)
	}
	if err := pmcp.AddTool(s, &pmcp.Tool{Name: "open_page", Description: "URL-mode elicitation"},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ noArgs) (string, error) {
			r, err := extra.Peer.Elicit(ctx, &pmcp.ElicitParams{Mode: "url", Message: "Approve the payment", URL: "https://pay.example/approve/1", ElicitationID: "pay-1"})
			if err != nil {
				return "", err
			}
			return show(r), nil
		}); err != nil {
		t.Fatal(err)
	}
	if err := pmcp.AddTool(s, &pmcp.Tool{Name: "order", Description: "a form"},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ noArgs) (string, error) {
			r, err := extra.Peer.Elicit(ctx, &pmcp.ElicitParams{Message: "Your order", RequestedSchema: jsontext.Value(`{"type":"object","properties":{` +
				`"name":{"type":"string","title":"Name","minLength":2},` +
				`"size":{"type":"string","enum":["small","medium","large"],"default":"medium"},` +
				`"count":{"type":"integer","minimum":1,"default":1},` +
				`"gift":{"type":"boolean","default":false},` +
				`"note":{"type":"string"}},"required":["name","size"]}`)})
			if err != nil {
				return "", err
			}
			return show(r), nil
		}); err != nil {
		t.Fatal(err)
	}
	// signup asks two different forms, one after the other.
	if err := pmcp.AddTool(s, &pmcp.Tool{Name: "signup", Description: "two forms"},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ noArgs) (string, error) {
			var out []string
			for _, form := range []string{
				`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`,
				`{"type":"object","properties":{"plan":{"type":"string","enum":["free","pro"]}},"required":["plan"]}`,
			} {
				r, err := extra.Peer.Elicit(ctx, &pmcp.ElicitParams{Message: "Sign up", RequestedSchema: jsontext.Value(form)})
				if err != nil {
					return "", err
				}
				out = append(out, show(r))
			}
			return strings.Join(out, " "), nil
		}); err != nil {
		t.Fatal(err)
	}
	h := pmcp.NewStreamableHTTPHandler(s, pmcp.StreamableHTTPOptions{})
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		_ = h.Close()
		ts.Close()
	})
	return ts.URL
}

// ptyRun runs the CLI in-process with a pseudo-terminal as its stdin and
// stderr, and answers the prompts: each step waits for a prompt text on
// the terminal, then types a line.
// A send with a control character (\r, \t, ESC, Ctrl-D) goes as it is;
// any other gets a newline.
type ptyStep struct{ wait, send string }

func ptyRun(t *testing.T, steps []ptyStep, args ...string) (code int, stdout, term string) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	var out bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run(args, tty, &out, tty) }()
	var seen strings.Builder
	r := bufio.NewReader(ptmx)
	readUntil := func(s string) {
		t.Helper()
		for !strings.Contains(seen.String(), s) {
			b, err := r.ReadByte()
			if err != nil {
				t.Fatalf("waiting for %q: %v\nterminal so far:\n%s", s, err, seen.String())
			}
			seen.WriteByte(b)
		}
	}
	for _, st := range steps {
		readUntil(st.wait)
		// Consume what came so far so the next wait needs new text.
		prev := seen.String()
		seen.Reset()
		_ = prev
		line := st.send + "\n"
		if strings.ContainsAny(st.send, "\r\t\x1b\x04") {
			line = st.send
		}
		if _, err := io.WriteString(ptmx, line); err != nil {
			t.Fatal(err)
		}
		term += prev
	}
	// Drain the terminal until the command ends.
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		_, _ = io.Copy(&seen, r)
	}()
	select {
	case code = <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("the command did not finish\n%s", term+seen.String())
	}
	tty.Close()
	ptmx.Close()
	<-drained
	return code, out.String(), term + seen.String()
}

// sameJSON compares two JSON texts by value (object member order aside).
func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// TestElicitationPrompt answers a form on a terminal: a required field
// left empty is asked again, an enum is chosen by number, defaults are
// shown and taken on Enter, a value out of range is refused.
func TestElicitationPrompt(t *testing.T) {
	url := fixtureURL(t)
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			code, out, term := ptyRun(t, []ptyStep{
				{"[d]ecline, [c]ancel [a]: ", ""},
				{"name [text]: ", ""}, // required: asked again
				{"name is required", "A"},
				{"name: at least 2 characters", "Ada"},
				{"size [1-3, default medium]: ", "3"},
				{"count [integer, default 1]: ", "0"}, // below the minimum
				{"count: at least 1", "2"},
				{"gift [y/N]: ", ""},
				{"note [text]: ", ""},
			}, "call", "order", "--url", url, "--era", era)
			if code != exitOK {
				t.Fatalf("exit %d\n%s\n%s", code, out, term)
			}
			want := `{"action":"accept","content":{"count":2,"gift":false,"name":"Ada","size":"large"}}`
			if !sameJSON(out, want) {
				t.Fatalf("result %s, want %s\nterminal:\n%s", out, want, term)
			}
			for _, s := range []string{"The server asks: Your order", "1) small", "3) large", "(required)"} {
				if !strings.Contains(term, s) {
					t.Errorf("terminal lacks %q:\n%s", s, term)
				}
			}
		})
	}
}

// TestElicitationDeclineCancel: the first question declines or cancels.
func TestElicitationDeclineCancel(t *testing.T) {
	url := fixtureURL(t)
	for answer, action := range map[string]string{"d": "decline", "c": "cancel"} {
		code, out, term := ptyRun(t, []ptyStep{{"[d]ecline, [c]ancel [a]: ", answer}}, "call", "order", "--url", url)
		if code != exitOK || strings.TrimSpace(out) != `{"action":"`+action+`"}` {
			t.Fatalf("%s: exit %d %s\n%s", answer, code, out, term)
		}
	}
}

// TestElicitationEOF: Ctrl-D at a prompt declines, and later prompts of
// the same command do not wait for a terminal that has ended.
func TestElicitationEOF(t *testing.T) {
	url := fixtureURL(t)
	code, out, term := ptyRun(t, []ptyStep{{"[d]ecline, [c]ancel [a]: ", "\x04"}}, "call", "order", "--url", url)
	if code != exitOK || strings.TrimSpace(out) != `{"action":"decline"}` {
		t.Fatalf("exit %d %s\n%s", code, out, term)
	}
}

// TestElicitationURLMode prints the URL and accepts on Enter.
func TestElicitationURLMode(t *testing.T) {
	url := fixtureURL(t)
	for _, era := range []string{"modern", "legacy"} {
		code, out, term := ptyRun(t, []ptyStep{{"Press Enter once you have opened it", ""}}, "call", "open_page", "--url", url, "--era", era)
		if code != exitOK || strings.TrimSpace(out) != `{"action":"accept"}` || !strings.Contains(term, "https://pay.example/approve/1") {
			t.Fatalf("%s: exit %d %s\n%s", era, code, out, term)
		}
	}
}

// TestElicitationEverythingDefaults drives the everything server's
// defaults form: Enter everywhere takes every default.
func TestElicitationEverythingDefaults(t *testing.T) {
	flags, _ := serverArgs(t, "http")
	code, out, term := ptyRun(t, []ptyStep{
		{"[a]: ", ""},
		{"name [text, default John Doe]: ", ""},
		{"age [integer, default 30]: ", ""},
		{"score [number, default 95.5]: ", ""},
		{"status [1-3, default active]: ", "2"},
		{"verified [Y/n]: ", "n"},
	}, append([]string{"call", "test_elicitation_sep1034_defaults"}, flags...)...)
	if code != exitOK || !strings.HasPrefix(out, "Elicitation completed: action=accept, content={") {
		t.Fatalf("exit %d %s\n%s", code, out, term)
	}
	for _, s := range []string{`"age":30`, `"name":"John Doe"`, `"score":95.5`, `"status":"inactive"`, `"verified":false`} {
		if !strings.Contains(out, s) {
			t.Fatalf("result lacks %s: %s", s, out)
		}
	}
}

// TestElicitJSON answers without a terminal; an answer that does not fit
// the form is declined with a note, and without --elicit-json the CLI
// declines and says so.
func TestElicitJSON(t *testing.T) {
	url := fixtureURL(t)
	code, out, errs := cli(t, "call", "order", "--url", url, "--elicit-json", `{"name":"Bo","size":"small","count":3}`)
	if code != exitOK || !sameJSON(out, `{"action":"accept","content":{"count":3,"name":"Bo","size":"small"}}`) {
		t.Fatalf("exit %d %s\n%s", code, out, errs)
	}
	for _, bad := range []string{`{"name":"Bo"}`, `{"name":"Bo","size":"huge"}`, `{"name":"Bo","size":"small","count":1.5}`, `{"name":"Bo","size":"small","color":"red"}`} {
		code, out, errs = cli(t, "call", "order", "--url", url, "--elicit-json", bad)
		if code != exitOK || strings.TrimSpace(out) != `{"action":"decline"}` || !strings.Contains(errs, "--elicit-json does not fit") {
			t.Fatalf("%s: exit %d %s\n%s", bad, code, out, errs)
		}
	}
	code, out, errs = cli(t, "call", "order", "--url", url)
	if code != exitOK || strings.TrimSpace(out) != `{"action":"decline"}` || !strings.Contains(errs, "no terminal to ask on") {
		t.Fatalf("no terminal: exit %d %s\n%s", code, out, errs)
	}
	if code, _, errs = cli(t, "call", "order", "--url", url, "--elicit-json", `[1]`); code != exitUsage {
		t.Fatalf("--elicit-json [1]: exit %d\n%s", code, errs)
	}
}

// TestElicitJSONPerRound answers a tool whose rounds ask different forms:
// one answer per round, as a JSON array or the flag repeated, in both
// eras; a round without an answer is declined with a note.
func TestElicitJSONPerRound(t *testing.T) {
	url := fixtureURL(t)
	const want = `{"action":"accept","content":{"name":"Bo"}} {"action":"accept","content":{"plan":"pro"}}`
	for _, era := range []string{"modern", "legacy"} {
		for _, answers := range [][]string{
			{"--elicit-json", `[{"name":"Bo"},{"plan":"pro"}]`},
			{"--elicit-json", `{"name":"Bo"}`, "--elicit-json", `{"plan":"pro"}`},
		} {
			code, out, errs := cli(t, append([]string{"call", "signup", "--url", url, "--era", era}, answers...)...)
			if code != exitOK || strings.TrimSpace(out) != want {
				t.Fatalf("%s %q: exit %d %s\n%s", era, answers, code, out, errs)
			}
		}
		code, out, errs := cli(t, "call", "signup", "--url", url, "--era", era, "--elicit-json", `[{"name":"Bo"},{"name":"Al"},{"plan":"pro"}]`)
		if code != exitOK || !strings.Contains(out, `{"action":"decline"}`) {
			t.Fatalf("%s: second answer does not fit: exit %d %s\n%s", era, code, out, errs)
		}
	}
	url2 := fixtureURL(t)
	code, out, errs := cli(t, "call", "signup", "--url", url2, "--elicit-json", `[{"name":"Bo"},{"plan":"pro"}]`, "--elicit-json", `{"x":1}`)
	if code != exitOK || strings.TrimSpace(out) != want {
		t.Fatalf("extra answer: exit %d %s\n%s", code, out, errs)
	}
	code, out, errs = cli(t, "call", "signup", "--url", url2, "--elicit-json", `[{"name":"Bo"}]`, "--elicit-json", `[]`)
	if code != exitUsage {
		t.Fatalf("empty array: exit %d %s\n%s", code, out, errs)
	}
}

// TestSamplingCmd answers sampling with a script; without --sampling-cmd
// the CLI does not offer sampling and a -32021 names the capability.
func TestSamplingCmd(t *testing.T) {
	flags, _ := serverArgs(t, "http")
	dir := t.TempDir()
	script := filepath.Join(dir, "model.sh")
	// The script echoes the prompt it got back as the model's answer.
	if err := os.WriteFile(script, []byte(`#!/bin/sh
req=$(cat)
case "$req" in
*'"text":"hello model"'*) printf '{"role":"assistant","content":{"type":"text","text":"hi there"},"model":"script"}' ;;
*) echo "unexpected request: $req" >&2; exit 1 ;;
esac
`), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, era := range []string{"modern", "legacy"} {
		code, out, errs := cli(t, append([]string{"call", "test_sampling", "prompt=hello model", "--era", era, "--sampling-cmd", script}, flags...)...)
		if code != exitOK || strings.TrimSpace(out) != "LLM response: hi there" {
			t.Fatalf("%s: exit %d %s\n%s", era, code, out, errs)
		}
	}
	// Output over the bound fails the sampling request.
	code, out, errs := cli(t, append([]string{"call", "test_sampling", "prompt=x", "--sampling-cmd", "head -c 2000000 /dev/zero"}, flags...)...)
	if code == exitOK || !strings.Contains(errs+out, "printed more than") {
		t.Fatalf("big output: exit %d %s\n%s", code, out, errs)
	}
	code, out, errs = cli(t, append([]string{"call", "test_missing_capability", "--era", "modern"}, flags...)...)
	if code != exitError || !strings.Contains(errs, "needs the client capability sampling; give --sampling-cmd") {
		t.Fatalf("-32021: exit %d %s\n%s", code, out, errs)
	}
}
