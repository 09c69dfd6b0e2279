package otelenv_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	pmcpotel "github.com/gopmcp/pmcp/otel"
	"github.com/gopmcp/pmcp/otel/otelenv"
)

// collector is an OTLP/HTTP receiver that decodes what it is sent with
// the generated OTLP types (the reference for our encoder).
type collector struct {
	t  *testing.T
	ts *httptest.Server

	mu       sync.Mutex
	traces   []*coltracepb.ExportTraceServiceRequest
	metrics  []*colmetricpb.ExportMetricsServiceRequest
	requests []*http.Request
	fail     int // answer 503 to this many requests first
}

func newCollector(t *testing.T) *collector {
	c := &collector{t: t}
	c.ts = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.ts.Close)
	return c
}

func (c *collector) serve(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests = append(c.requests, r)
	if c.fail > 0 {
		c.fail--
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	var m proto.Message
	switch r.URL.Path {
	case "/v1/metrics":
		req := &colmetricpb.ExportMetricsServiceRequest{}
		c.metrics, m = append(c.metrics, req), req
	default:
		req := &coltracepb.ExportTraceServiceRequest{}
		c.traces, m = append(c.traces, req), req
	}
	if err := proto.Unmarshal(raw, m); err != nil {
		c.t.Errorf("%s: the body does not decode: %v", r.URL.Path, err)
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
}

func (c *collector) spans() []*tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*tracepb.Span
	for _, req := range c.traces {
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				out = append(out, ss.Spans...)
			}
		}
	}
	return out
}

func attrMap(kvs []*commonpb.KeyValue) map[string]*commonpb.AnyValue {
	m := map[string]*commonpb.AnyValue{}
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

// Every field of a span reaches the collector as the generated OTLP types
// read it: ids, parent, kind, times, each attribute type, events, links,
// status, resource and scope; the headers and gzip asked for are used.
func TestOTLPHTTPSpanEncoding(t *testing.T) {
	col := newCollector(t)
	vars := map[string]string{
		"OTEL_TRACES_EXPORTER":           "otlp",
		"OTEL_EXPORTER_OTLP_ENDPOINT":    col.ts.URL,
		"OTEL_EXPORTER_OTLP_HEADERS":     "x-api-key=a%20b, x-other=c",
		"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
		"OTEL_SERVICE_NAME":              "svc",
	}
	tel, err := otelenv.Setup(context.Background(), otelenv.Options{Getenv: env(vars)})
	if err != nil {
		t.Fatal(err)
	}
	tr := tel.TracerProvider.Tracer("scope-a", trace.WithInstrumentationVersion("1.2"))
	linked := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9}, SpanID: trace.SpanID{8}, TraceFlags: trace.FlagsSampled, Remote: true})
	ctx, parent := tr.Start(context.Background(), "parent")
	_, child := tr.Start(ctx, "child", trace.WithSpanKind(trace.SpanKindServer), trace.WithLinks(trace.Link{SpanContext: linked, Attributes: []attribute.KeyValue{attribute.String("why", "x")}}))
	child.SetAttributes(
		attribute.Bool("b", false), attribute.Int64("i", -7), attribute.Float64("f", 1.5), attribute.String("s", ""),
		attribute.StringSlice("ss", []string{"x", "y"}), attribute.Int64Slice("is", []int64{1, 2}),
		attribute.BoolSlice("bs", []bool{true}), attribute.Float64Slice("fs", []float64{0.5}),
	)
	child.AddEvent("ev", trace.WithAttributes(attribute.Int("n", 3)))
	child.SetStatus(codes.Error, "broke")
	child.End()
	parent.End()
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	spans := col.spans()
	if len(spans) != 2 {
		t.Fatalf("collector got %d spans, want 2", len(spans))
	}
	byName := map[string]*tracepb.Span{}
	for _, s := range spans {
		byName[s.Name] = s
	}
	p, c := byName["parent"], byName["child"]
	if p == nil || c == nil {
		t.Fatalf("spans %v", spans)
	}
	pc, cc := parent.SpanContext(), child.SpanContext()
	pt, ps, cs := pc.TraceID(), pc.SpanID(), cc.SpanID()
	if !bytes.Equal(c.TraceId, pt[:]) || !bytes.Equal(c.SpanId, cs[:]) || !bytes.Equal(c.ParentSpanId, ps[:]) || len(p.ParentSpanId) != 0 {
		t.Errorf("ids: child %x/%x parent %x; want %x/%x parent %x", c.TraceId, c.SpanId, c.ParentSpanId, pt, cs, ps)
	}
	if c.Kind != tracepb.Span_SPAN_KIND_SERVER || p.Kind != tracepb.Span_SPAN_KIND_INTERNAL {
		t.Errorf("kinds %v %v", c.Kind, p.Kind)
	}
	if c.StartTimeUnixNano == 0 || c.EndTimeUnixNano < c.StartTimeUnixNano {
		t.Errorf("times %d..%d", c.StartTimeUnixNano, c.EndTimeUnixNano)
	}
	if c.Flags&0xff != 1 || c.Flags&0x100 == 0 {
		t.Errorf("flags %#x", c.Flags)
	}
	a := attrMap(c.Attributes)
	if v, ok := a["b"].GetValue().(*commonpb.AnyValue_BoolValue); !ok || v.BoolValue {
		t.Errorf("b = %v", a["b"])
	}
	if a["i"].GetIntValue() != -7 || a["f"].GetDoubleValue() != 1.5 {
		t.Errorf("i, f = %v, %v", a["i"], a["f"])
	}
	if v, ok := a["s"].GetValue().(*commonpb.AnyValue_StringValue); !ok || v.StringValue != "" {
		t.Errorf("s = %v", a["s"])
	}
	if vs := a["ss"].GetArrayValue().GetValues(); len(vs) != 2 || vs[1].GetStringValue() != "y" {
		t.Errorf("ss = %v", a["ss"])
	}
	if vs := a["is"].GetArrayValue().GetValues(); len(vs) != 2 || vs[1].GetIntValue() != 2 {
		t.Errorf("is = %v", a["is"])
	}
	if vs := a["bs"].GetArrayValue().GetValues(); len(vs) != 1 || !vs[0].GetBoolValue() {
		t.Errorf("bs = %v", a["bs"])
	}
	if vs := a["fs"].GetArrayValue().GetValues(); len(vs) != 1 || vs[0].GetDoubleValue() != 0.5 {
		t.Errorf("fs = %v", a["fs"])
	}
	if len(c.Events) != 1 || c.Events[0].Name != "ev" || c.Events[0].TimeUnixNano == 0 || attrMap(c.Events[0].Attributes)["n"].GetIntValue() != 3 {
		t.Errorf("events %v", c.Events)
	}
	if len(c.Links) != 1 || !bytes.Equal(c.Links[0].TraceId, []byte{9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}) ||
		attrMap(c.Links[0].Attributes)["why"].GetStringValue() != "x" || c.Links[0].Flags != 0x301 {
		t.Errorf("links %v", c.Links)
	}
	if c.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || c.Status.GetMessage() != "broke" || p.Status.GetCode() != tracepb.Status_STATUS_CODE_UNSET {
		t.Errorf("status %v %v", c.Status, p.Status)
	}
	col.mu.Lock()
	rs := col.traces[0].ResourceSpans[0]
	r := col.requests[0]
	col.mu.Unlock()
	if attrMap(rs.Resource.Attributes)["service.name"].GetStringValue() != "svc" {
		t.Errorf("resource %v", rs.Resource)
	}
	if sc := rs.ScopeSpans[0].Scope; sc.Name != "scope-a" || sc.Version != "1.2" {
		t.Errorf("scope %v", sc)
	}
	if r.Header.Get("x-api-key") != "a b" || r.Header.Get("x-other") != "c" || r.Header.Get("Content-Encoding") != "gzip" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		t.Errorf("headers %v", r.Header)
	}
}

// The duration histograms of the pmcp middleware reach the collector as
// OTLP histograms: buckets, bounds, count, sum, min, max, attributes; a
// per-signal endpoint is used as is; a 503 is retried.
func TestOTLPHTTPMetricEncoding(t *testing.T) {
	col := newCollector(t)
	col.fail = 1
	vars := map[string]string{
		"OTEL_METRICS_EXPORTER":               "otlp",
		"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": col.ts.URL + "/v1/metrics",
	}
	tel, err := otelenv.Setup(context.Background(), otelenv.Options{Getenv: env(vars)})
	if err != nil {
		t.Fatal(err)
	}
	callTool(t, tel.Instrumentation())
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.requests) < 2 {
		t.Fatalf("%d requests: the 503 was not retried", len(col.requests))
	}
	var h *metricpb.Histogram
	for _, req := range col.metrics {
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					if m.Name == pmcpotel.MetricServerOperationDuration {
						h = m.GetHistogram()
					}
				}
			}
		}
	}
	if h == nil || len(h.DataPoints) == 0 {
		t.Fatalf("no %s histogram in %v", pmcpotel.MetricServerOperationDuration, col.metrics)
	}
	if h.AggregationTemporality != metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE {
		t.Errorf("temporality %v", h.AggregationTemporality)
	}
	var calls *metricpb.HistogramDataPoint
	for _, dp := range h.DataPoints {
		if attrMap(dp.Attributes)["mcp.method.name"].GetStringValue() == "tools/call" {
			calls = dp
		}
	}
	if calls == nil {
		t.Fatalf("no tools/call point in %v", h.DataPoints)
	}
	var total uint64
	for _, n := range calls.BucketCounts {
		total += n
	}
	if calls.Count != 1 || total != 1 || len(calls.BucketCounts) != len(calls.ExplicitBounds)+1 || calls.GetSum() <= 0 ||
		calls.Min == nil || calls.Max == nil || calls.TimeUnixNano == 0 || calls.StartTimeUnixNano == 0 {
		t.Errorf("point %v", calls)
	}
}

// A collector that refuses (400) is an error of the export, not retried;
// bad variables are ErrUnsupported naming them.
func TestOTLPHTTPErrors(t *testing.T) {
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusBadRequest)
	}))
	defer refusing.Close()
	vars := map[string]string{"OTEL_METRICS_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": refusing.URL}
	tel, err := otelenv.Setup(context.Background(), otelenv.Options{Getenv: env(vars)})
	if err != nil {
		t.Fatal(err)
	}
	callTool(t, tel.Instrumentation())
	if exportErr := tel.Shutdown(context.Background()); exportErr == nil || !bytes.Contains([]byte(exportErr.Error()), []byte("400 Bad Request")) {
		t.Errorf("shutdown error %v, want the collector's 400", exportErr)
	}
	for _, bad := range []map[string]string{
		{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"},
		{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "soon"},
		{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"},
		{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_HEADERS": "novalue"},
		{"OTEL_METRICS_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE": "sometimes"},
	} {
		if _, err := otelenv.Setup(context.Background(), otelenv.Options{Getenv: env(bad)}); !errors.Is(err, otelenv.ErrUnsupported) {
			t.Errorf("%v: err = %v, want ErrUnsupported", bad, err)
		}
	}
}
