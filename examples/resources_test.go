package examples_test

import (
	"io"
	"strings"
	"testing"
)

// The resources example lists and reads a resource and a template's
// resources, answers a missing note with the era's resource-not-found
// error, renders its prompt and completes note names for the template and
// the prompt, in the legacy era (after initialize) and the modern era
// (per-request _meta) on one stdio connection; it exits with status 0 and
// nothing on stderr when stdin ends.
func TestResources(t *testing.T) {
	cmd, in, out, stderr := start(t, build(t, "resources"))
	send(t, in, out, 1, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`)
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	id := 1
	for _, era := range []struct{ name, meta string }{{"legacy", ""}, {"modern", modernMeta}} {
		call := func(method, params string) response {
			t.Helper()
			id++
			if era.meta != "" {
				params = strings.TrimSuffix(params, "}")
				if params != "{" {
					params += ","
				}
				params += era.meta + "}"
			}
			return exchange(t, in, out, id, `{"jsonrpc":"2.0","id":`+itoa(id)+`,"method":"`+method+`","params":`+params+`}`)
		}
		for _, c := range []struct{ method, params, want string }{
			{"resources/list", `{}`, `"uri":"notes://index"`},
			{"resources/templates/list", `{}`, `"uriTemplate":"notes://{name}"`},
			{"resources/read", `{"uri":"notes://index"}`, `"text":"groceries\nideas\ntodo"`},
			{"resources/read", `{"uri":"notes://todo"}`, `"text":"write the release notes"`},
			{"prompts/list", `{}`, `"name":"summarize"`},
			{"prompts/get", `{"name":"summarize","arguments":{"name":"ideas"}}`, `Summarize the note ideas in one line:\na shorter first hour`},
			{"completion/complete", `{"ref":{"type":"ref/resource","uri":"notes://{name}"},"argument":{"name":"name","value":"i"}}`, `"values":["ideas"]`},
			{"completion/complete", `{"ref":{"type":"ref/prompt","name":"summarize"},"argument":{"name":"name","value":"g"}}`, `"values":["groceries"]`},
		} {
			r := call(c.method, c.params)
			if r.Error != nil || !strings.Contains(string(r.Raw), c.want) {
				t.Errorf("%s %s %s: got %s (error %+v), want it to contain %s", era.name, c.method, c.params, r.Raw, r.Error, c.want)
			}
		}
		if r := call("resources/read", `{"uri":"notes://nope"}`); r.Error == nil {
			t.Errorf("%s: reading a missing note: got %s, want the resource-not-found error", era.name, r.Raw)
		}
		if r := call("prompts/get", `{"name":"summarize"}`); r.Error == nil || r.Error.Code != -32602 {
			t.Errorf("%s: prompts/get without its required argument: got %s %+v, want -32602", era.name, r.Raw, r.Error)
		}
	}
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if rest, _ := io.ReadAll(out); len(rest) > 0 {
		t.Errorf("unexpected output after the last reply: %q", rest)
	}
	if err := cmd.Wait(); err != nil || stderr.Len() > 0 {
		t.Fatalf("resources at the end of stdin: %v (stderr %q); want exit status 0 and no stderr", err, stderr)
	}
}
