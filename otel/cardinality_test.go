package otel_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	pmcpotel "github.com/gopmcp/pmcp/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace"
)

// cardinalityServer is an instrumented server with one tool, one prompt,
// one resource and one resource template, behind a loopback HTTP server.
func cardinalityServer(t *testing.T, opts pmcpotel.Options, extraTools int) (string, *pmcp.Server) {
	t.Helper()
	srv, err := pmcp.NewServer(pmcp.ServerOptions{
		Name:                   "cardinality",
		Middleware:             []pmcp.Middleware{pmcpotel.ServerMiddleware(opts)},
		NotificationMiddleware: []pmcp.NotificationMiddleware{pmcpotel.NotificationMiddleware(opts)},
	})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := -1; i < extraTools; i++ {
		name := "echo"
		if i >= 0 {
			name = fmt.Sprintf("tool-%d", i)
		}
		must(pmcp.AddTool(srv, &pmcp.Tool{Name: name}, func(ctx context.Context, extra *pmcp.RequestHandlerExtra, in echoIn) (string, error) {
			return in.Text, nil
		}))
	}
	must(srv.AddPrompt(&pmcp.Prompt{Name: "greet"}, func(ctx context.Context, extra *pmcp.RequestHandlerExtra, p *pmcp.GetPromptParams) (*pmcp.GetPromptResult, error) {
		return &pmcp.GetPromptResult{Messages: []*pmcp.PromptMessage{{Role: "user", Content: pmcp.Text("hi")}}}, nil
	}))
	must(srv.AddResource(&pmcp.Resource{URI: "file:///readme", Name: "readme"}, func(ctx context.Context, extra *pmcp.RequestHandlerExtra, r *pmcp.ResourceRequest) (*pmcp.ReadResourceResult, error) {
		return &pmcp.ReadResourceResult{Contents: []*pmcp.ResourceContents{{URI: r.URI, Text: "hello"}}}, nil
	}))
	must(srv.AddResourceTemplate(&pmcp.ResourceTemplate{URITemplate: "db:///rows/{id}", Name: "row"}, func(ctx context.Context, extra *pmcp.RequestHandlerExtra, r *pmcp.ResourceRequest) (*pmcp.ReadResourceResult, error) {
		return &pmcp.ReadResourceResult{Contents: []*pmcp.ResourceContents{{URI: r.URI, Text: "row"}}}, nil
	}))
	h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{})
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		_ = h.Close()
		ts.Close()
	})
	return ts.URL, srv
}

// postModern sends one raw 2026-07-28 message, shaped as a third-party
// client sends it, and drains the answer.
func postModern(t *testing.T, url, method, name, body string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 500 || resp.StatusCode == http.StatusUnauthorized {
		t.Fatalf("%s %q: HTTP %d: %s", method, name, resp.StatusCode, b)
	}
}

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"extra":1}`

// serverSeries returns the attribute sets of the server duration
// histogram and the distinct values of each target key (and the method).
func serverSeries(t *testing.T, tel *telemetry) (int, map[attribute.Key]map[string]bool) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	m, ok := findMetric(rm, pmcpotel.MetricServerOperationDuration)
	if !ok {
		t.Fatal("no server duration histogram")
	}
	values := map[attribute.Key]map[string]bool{}
	points := m.Data.(metricdata.Histogram[float64]).DataPoints
	for _, dp := range points {
		for _, k := range []attribute.Key{pmcpotel.KeyToolName, pmcpotel.KeyPromptName, pmcpotel.KeyResourceURI, pmcpotel.KeyMethodName} {
			if v, ok := dp.Attributes.Value(k); ok {
				if values[k] == nil {
					values[k] = map[string]bool{}
				}
				values[k][v.AsString()] = true
			}
		}
	}
	return len(points), values
}

// Names of tools, prompts, resources and notification methods that do
// not exist never become attribute values of the duration histogram:
// thousands of calls naming them, in both eras, add no series beyond the
// fixed "_OTHER" ones (issue 18, item 5). Spans keep the names.
func TestUnknownNamesAddNoSeries(t *testing.T) {
	tel := newTelemetry(t)
	url, _ := cardinalityServer(t, tel.opts, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	known := func() {
		postModern(t, url, "tools/call", "echo", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},`+modernMeta+`}}`)
		postModern(t, url, "prompts/get", "greet", `{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"greet",`+modernMeta+`}}`)
		postModern(t, url, "resources/read", "file:///readme", `{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"file:///readme",`+modernMeta+`}}`)
		postModern(t, url, "resources/read", "db:///rows/1", `{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"db:///rows/1",`+modernMeta+`}}`)
	}
	unknown := func(i int) {
		n := fmt.Sprintf("nope-%d", i)
		postModern(t, url, "tools/call", n, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+n+`",`+modernMeta+`}}`)
		postModern(t, url, "prompts/get", n, `{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"`+n+`",`+modernMeta+`}}`)
		postModern(t, url, "resources/read", "file:///"+n, `{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"file:///`+n+`",`+modernMeta+`}}`)
		postModern(t, url, "notifications/"+n, "", `{"jsonrpc":"2.0","method":"notifications/`+n+`","params":{`+modernMeta+`}}`)
	}
	known()
	unknown(-1)
	cs := connect(t, url, pmcp.ClientOptions{Era: pmcp.EraLegacy})
	legacy := func(n string) {
		if _, err := cs.CallTool(ctx, n, nil); err == nil {
			t.Fatal("unknown tool succeeded")
		}
		if _, err := cs.GetPrompt(ctx, n, nil); err == nil {
			t.Fatal("unknown prompt succeeded")
		}
		if _, err := cs.ReadResource(ctx, "file:///"+n); err == nil {
			t.Fatal("unknown resource succeeded")
		}
	}
	legacy("nope-legacy")
	baseline, _ := serverSeries(t, tel)

	for i := range 1000 {
		unknown(i)
	}
	for i := range 300 {
		legacy(fmt.Sprintf("legacy-%d", i))
	}
	known()
	after, values := serverSeries(t, tel)
	if after != baseline {
		t.Errorf("the histogram has %d series after unknown names, %d before", after, baseline)
	}
	want := map[attribute.Key][]string{
		pmcpotel.KeyToolName:   {"echo", "_OTHER"},
		pmcpotel.KeyPromptName: {"greet", "_OTHER"},
		// A template-matched URI is a resource of the server: it counts
		// against MaxMetricTargets.
		pmcpotel.KeyResourceURI: {"file:///readme", "db:///rows/1", "_OTHER"},
	}
	for k, vs := range want {
		if len(values[k]) != len(vs) {
			t.Errorf("%s values %v, want %v", k, values[k], vs)
		}
		for _, v := range vs {
			if !values[k][v] {
				t.Errorf("%s values %v lack %q", k, values[k], v)
			}
		}
	}
	for m := range values[pmcpotel.KeyMethodName] {
		if strings.Contains(m, "nope") {
			t.Errorf("method %q became an attribute value", m)
		}
	}
	// Spans are not series: they keep the name the caller sent, cut to
	// 256 bytes.
	tel.span(t, trace.SpanKindServer, "tools/call nope-999")
	long := strings.Repeat("é", 4000)
	postModern(t, url, "tools/call", long, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+long+`",`+modernMeta+`}}`)
	s := tel.span(t, trace.SpanKindServer, "tools/call "+long[:256])
	if v := attrs(s)[pmcpotel.KeyToolName]; v != long[:256] {
		t.Errorf("span %s is %d bytes, want 256", pmcpotel.KeyToolName, len(v))
	}
}

// Registered names are attribute values, but at most MaxMetricTargets
// distinct ones per middleware: the rest are "_OTHER".
func TestMetricTargetsBounded(t *testing.T) {
	tel := newTelemetry(t)
	opts := tel.opts
	opts.MaxMetricTargets = 5
	url, _ := cardinalityServer(t, opts, 20)
	for i := range 20 {
		n := fmt.Sprintf("tool-%d", i)
		postModern(t, url, "tools/call", n, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+n+`","arguments":{"text":"x"},`+modernMeta+`}}`)
	}
	_, values := serverSeries(t, tel)
	if got := values[pmcpotel.KeyToolName]; len(got) != 6 || !got["_OTHER"] {
		t.Errorf("tool values %v, want 5 names and _OTHER", got)
	}
}
