package main

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/internal/everything"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// everythingURL serves pmcp's everything server (both eras) over HTTP.
func everythingURL(t *testing.T) string {
	t.Helper()
	srv, err := everything.New(everything.Options{Step: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{})
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		_ = h.Close()
		ts.Close()
	})
	return ts.URL + "/mcp"
}

func runScenario(t *testing.T, scenario, context, url string) (int, string) {
	t.Helper()
	var errb bytes.Buffer
	env := map[string]string{"MCP_CONFORMANCE_SCENARIO": scenario, "MCP_CONFORMANCE_CONTEXT": context}
	code := run([]string{url}, func(k string) string { return env[k] }, &errb)
	return code, errb.String()
}

// TestScenariosAgainstOwnServer runs the scenarios whose tools the
// everything server also has; the real checks are the conformance suite's
// (scripts/conformance.sh client).
func TestScenariosAgainstOwnServer(t *testing.T) {
	url := everythingURL(t)
	for _, sc := range []string{"initialize", "request-metadata", "json-schema-ref-no-deref", "auth/some-future-scenario", "some-unknown-scenario"} {
		if code, errs := runScenario(t, sc, "", url); code != 0 {
			t.Errorf("%s: exit %d\n%s", sc, code, errs)
		}
	}
	ctx := `{"toolCalls":[{"name":"test_x_mcp_header","arguments":{"region":"Zürich "}},{"name":"add","arguments":{"a":1,"b":2}}]}`
	if code, errs := runScenario(t, "http-custom-headers", ctx, url); code != 0 {
		t.Errorf("http-custom-headers: exit %d\n%s", code, errs)
	}
	// The everything server has no add_numbers: the scenario fails (1).
	if code, errs := runScenario(t, "tools_call", "", url); code != 1 || !strings.Contains(errs, "add_numbers") {
		t.Errorf("tools_call: exit %d\n%s", code, errs)
	}
	if code, _ := runScenario(t, "http-custom-headers", "{bad", url); code != 1 {
		t.Errorf("bad context: exit %d", code)
	}
}

func TestUsage(t *testing.T) {
	var errb bytes.Buffer
	if code := run(nil, func(string) string { return "" }, &errb); code != 2 || !strings.Contains(errb.String(), "usage") {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	errb.Reset()
	if code := run([]string{"http://127.0.0.1:1/mcp"}, func(string) string { return "initialize" }, &errb); code != 1 {
		t.Fatalf("unreachable server: exit %d: %s", code, errb.String())
	}
}

func TestDefaultsOf(t *testing.T) {
	got := defaultsOf(jsontext.Value(`{"type":"object","properties":{
		"name":{"type":"string","default":"John Doe"},"age":{"type":"integer","default":30},
		"ok":{"type":"boolean"},"free":{"type":"string"}}}`))
	if len(got) != 3 || got["name"] != "John Doe" || got["age"] != float64(30) || got["ok"] != true {
		t.Fatalf("defaults %v", got)
	}
	if got := defaultsOf(nil); len(got) != 0 {
		t.Fatalf("nil schema: %v", got)
	}
}

func TestPlaceholderArgs(t *testing.T) {
	got := placeholderArgs(jsontext.Value(`{"properties":{"s":{"type":"string"},"n":{"type":"integer"},"b":{"type":"boolean"},"o":{"type":"string"}},"required":["s","n","b"]}`))
	if len(got) != 3 || got["s"] != "test" || got["n"] != 1 || got["b"] != true {
		t.Fatalf("args %v", got)
	}
}
