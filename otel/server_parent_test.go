package otel_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
	pmcpotel "github.com/gopmcp/pmcp/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace"
)

const (
	headerParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	metaParent   = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
)

// callServerMiddleware runs one request through ServerMiddleware(opts)
// around a handler returning res.
func callServerMiddleware(t *testing.T, opts pmcpotel.Options, r *pmcp.Request, res pmcp.Result) {
	t.Helper()
	h := pmcpotel.ServerMiddleware(opts)(func(context.Context, *pmcp.Request) (pmcp.Result, error) { return res, nil })
	if _, err := h(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

func httpRequest(name string, header http.Header, meta string) *pmcp.Request {
	r := &pmcp.Request{
		Method: pmcp.MethodToolsCall, Name: name, ID: jsonrpc.Int64ID(1234567),
		Transport: pmcp.TransportInfo{Name: pmcp.TransportHTTP, Network: "tcp", Protocol: "http", ProtocolVersion: "1.1", RemoteAddr: "127.0.0.1:40001"},
		Header:    header,
		Extra:     &pmcp.RequestHandlerExtra{ProtocolContext: &pmcp.ProtocolContext{Era: pmcp.EraModern, ProtocolVersion: "2026-07-28"}},
	}
	if meta != "" {
		r.Extra.RequestMeta = jsontext.Value(meta)
	}
	return r
}

// The server span's parent comes from the HTTP headers when _meta has no
// trace context (the headers are read only when they carry one of the
// propagator's fields), and from _meta when it has one, linked to the
// header's context then.
func TestServerParentFromHeaders(t *testing.T) {
	res := &pmcp.CallToolResult{Content: []pmcp.Content{pmcp.Text("ok")}}
	for _, tc := range []struct {
		name, meta   string
		header       http.Header
		parent, link string // trace ids, "" = none
	}{
		{"no context", `{"progressToken":1}`, http.Header{"Content-Type": {"application/json"}}, "", ""},
		{"header", `{"progressToken":1}`, http.Header{"Content-Type": {"application/json"}, "Traceparent": {headerParent}}, headerParent[3:35], ""},
		{"header without meta", "", http.Header{"Traceparent": {headerParent}}, headerParent[3:35], ""},
		{"meta", `{"traceparent":"` + metaParent + `"}`, http.Header{"Content-Type": {"application/json"}}, metaParent[3:35], ""},
		{"meta and header", `{"traceparent":"` + metaParent + `"}`, http.Header{"Traceparent": {headerParent}}, metaParent[3:35], headerParent[3:35]},
		{"baggage header only", "", http.Header{"Baggage": {"k=v"}}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tel := newTelemetry(t)
			callServerMiddleware(t, tel.opts, httpRequest("echo", tc.header, tc.meta), res)
			s := tel.span(t, trace.SpanKindServer, "tools/call echo")
			got := ""
			if s.Parent().IsValid() {
				got = s.Parent().TraceID().String()
			}
			if got != tc.parent || s.Parent().IsValid() && !s.Parent().IsRemote() {
				t.Errorf("parent trace %q (remote %v), want %q", got, s.Parent().IsRemote(), tc.parent)
			}
			var links []string
			for _, l := range s.Links() {
				links = append(links, l.SpanContext.TraceID().String())
			}
			if want := []string{tc.link}; tc.link == "" && len(links) != 0 || tc.link != "" && (len(links) != 1 || links[0] != want[0]) {
				t.Errorf("links %v, want %q", links, tc.link)
			}
			wantAttrs(t, s, map[attribute.Key]string{
				pmcpotel.KeyJSONRPCRequestID: "1234567",
				pmcpotel.KeyClientAddress:    "127.0.0.1",
				pmcpotel.KeyClientPort:       "40001",
				pmcpotel.KeyToolName:         "echo",
				pmcpotel.KeyProtocolVersion:  "2026-07-28",
			})
		})
	}
}

// More distinct operations than the operation cache holds: every span
// and every histogram point still has its own tool, outcome and count.
func TestOperationCacheOverflow(t *testing.T) {
	tel := newTelemetry(t)
	opts := tel.opts
	opts.OperationCacheSize = 3
	const tools = 10
	url, srv := cardinalityServer(t, opts, 0)
	for i := range tools {
		isError := i%2 == 1
		if err := srv.AddRawTool(&pmcp.Tool{Name: "t" + strconv.Itoa(i), InputSchema: []byte(`{"type":"object"}`)}, func(context.Context, *pmcp.RequestHandlerExtra, *pmcp.CallToolParams) (*pmcp.CallToolResult, error) {
			return &pmcp.CallToolResult{Content: []pmcp.Content{pmcp.Text("ok")}, IsError: isError}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 2 {
		for i := range tools {
			name := "t" + strconv.Itoa(i)
			postModern(t, url, "tools/call", name, `{"jsonrpc":"2.0","id":1234567,"method":"tools/call","params":{"name":"`+name+`",`+modernMeta+`}}`)
			spans := tel.spans.Ended()
			s := spans[len(spans)-1]
			et := ""
			if i%2 == 1 {
				et = pmcpotel.ErrorTypeToolError
			}
			if s.Name() != "tools/call "+name {
				t.Fatalf("round %d: span %q, want %q", round, s.Name(), "tools/call "+name)
			}
			wantAttrs(t, s, map[attribute.Key]string{pmcpotel.KeyToolName: name, pmcpotel.KeyErrorType: et})
		}
	}
	// Later requests reuse the slice the attributes were gathered in: every
	// ended span still has its own.
	ended := tel.spans.Ended()
	if len(ended) != 2*tools {
		t.Fatalf("%d spans, want %d", len(ended), 2*tools)
	}
	for _, s := range ended {
		name := s.Name()[len("tools/call "):]
		wantAttrs(t, s, map[attribute.Key]string{pmcpotel.KeyToolName: name, pmcpotel.KeyJSONRPCRequestID: "1234567",
			pmcpotel.KeyClientAddress: "127.0.0.1"})
		i, _ := strconv.Atoi(name[1:])
		if n, want := len(s.Attributes()), 10+i%2; n != want { // + error.type
			t.Errorf("span %q has %d attributes, want %d: %v", s.Name(), n, want, s.Attributes())
		}
	}
	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	m, ok := findMetric(rm, pmcpotel.MetricServerOperationDuration)
	if !ok {
		t.Fatal("no server histogram")
	}
	points := m.Data.(metricdata.Histogram[float64]).DataPoints
	if len(points) != tools {
		t.Fatalf("%d histogram points, want %d", len(points), tools)
	}
	for _, dp := range points {
		tool, _ := dp.Attributes.Value(pmcpotel.KeyToolName)
		i, _ := strconv.Atoi(tool.AsString()[1:])
		et, _ := dp.Attributes.Value(pmcpotel.KeyErrorType)
		if want := map[bool]string{true: pmcpotel.ErrorTypeToolError}[i%2 == 1]; dp.Count != 2 || et.AsString() != want {
			t.Errorf("point %s: count %d, error.type %q; want 2, %q", tool.AsString(), dp.Count, et.AsString(), want)
		}
	}
}
