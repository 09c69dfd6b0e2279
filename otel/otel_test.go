package otel_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
	pmcpotel "github.com/gopmcp/pmcp/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// telemetry is an in-memory SDK: every span is sampled and recorded, and
// metrics are read on demand.
type telemetry struct {
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	opts   pmcpotel.Options
}

func newTelemetry(t *testing.T) *telemetry {
	t.Helper()
	tel := &telemetry{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(tel.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(tel.reader))
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	tel.opts = pmcpotel.Options{TracerProvider: tp, MeterProvider: mp}
	return tel
}

// span returns the one ended span of kind named name.
func (tel *telemetry) span(t *testing.T, kind trace.SpanKind, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range tel.spans.Ended() {
		if s.SpanKind() == kind && s.Name() == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d %v spans named %q, want 1; spans: %v", len(found), kind, name, spanNames(tel.spans.Ended()))
	}
	return found[0]
}

func spanNames(spans []sdktrace.ReadOnlySpan) []string {
	var names []string
	for _, s := range spans {
		names = append(names, s.SpanKind().String()+" "+s.Name())
	}
	return names
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]string {
	m := map[attribute.Key]string{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value.Emit()
	}
	return m
}

// wantAttrs checks that s has the attributes of want ("" = must be absent).
func wantAttrs(t *testing.T, s sdktrace.ReadOnlySpan, want map[attribute.Key]string) {
	t.Helper()
	got := attrs(s)
	for k, v := range want {
		g, ok := got[k]
		switch {
		case v == "" && ok:
			t.Errorf("%s %q: attribute %s = %q, want it absent", s.SpanKind(), s.Name(), k, g)
		case v != "" && g != v:
			t.Errorf("%s %q: attribute %s = %q (present %v), want %q", s.SpanKind(), s.Name(), k, g, ok, v)
		}
	}
}

type echoIn struct {
	Text string `json:"text"`
}

// newServer returns a server with the tools the tests call, instrumented
// with opts, behind a loopback HTTP test server.
func newServer(t *testing.T, opts pmcpotel.Options, clientOpts pmcp.ClientOptions) string {
	t.Helper()
	return newWrappedServer(t, opts, clientOpts, nil)
}

// newWrappedServer is newServer with the HTTP handler wrapped by wrap
// (when not nil), as an HTTP instrumentation such as otelhttp would.
func newWrappedServer(t *testing.T, opts pmcpotel.Options, clientOpts pmcp.ClientOptions, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	srv, err := pmcp.NewServer(pmcp.ServerOptions{
		Name:                   "otel-test",
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
	must(pmcp.AddTool(srv, &pmcp.Tool{Name: "echo"}, func(ctx context.Context, extra *pmcp.RequestHandlerExtra, in echoIn) (string, error) {
		return in.Text, nil
	}))
	must(srv.AddRawTool(&pmcp.Tool{Name: "fail", InputSchema: []byte(`{"type":"object"}`)}, func(ctx context.Context, extra *pmcp.RequestHandlerExtra, p *pmcp.CallToolParams) (*pmcp.CallToolResult, error) {
		return &pmcp.CallToolResult{Content: []pmcp.Content{pmcp.Text("disk full")}, IsError: true}, nil
	}))
	must(srv.AddRawTool(&pmcp.Tool{Name: "crash", InputSchema: []byte(`{"type":"object"}`)}, func(ctx context.Context, extra *pmcp.RequestHandlerExtra, p *pmcp.CallToolParams) (*pmcp.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "backend down"}
	}))
	h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{})
	var hh http.Handler = h
	if wrap != nil {
		hh = wrap(h)
	}
	ts := httptest.NewServer(hh)
	// relay calls echo on this same server with the handler's context: the
	// nested call must continue the caller's trace.
	must(pmcp.AddTool(srv, &pmcp.Tool{Name: "relay"}, func(ctx context.Context, extra *pmcp.RequestHandlerExtra, in echoIn) (string, error) {
		cs, err := pmcp.NewClient(clientOpts).ConnectHTTP(ctx, ts.URL, pmcp.HTTPClientOptions{})
		if err != nil {
			return "", err
		}
		defer cs.Close()
		res, err := cs.CallTool(ctx, "echo", in)
		if err != nil {
			return "", err
		}
		return res.Content[0].(*pmcp.TextContent).Text, nil
	}))
	t.Cleanup(func() {
		_ = h.Close()
		ts.Close()
	})
	return ts.URL
}

func connect(t *testing.T, url string, opts pmcp.ClientOptions) *pmcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := pmcp.NewClient(opts).ConnectHTTP(ctx, url, pmcp.HTTPClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

var eras = []struct {
	era     pmcp.Era
	version string
}{{pmcp.EraLegacy, "2025-11-25"}, {pmcp.EraModern, "2026-07-28"}}

// One tools/call from an instrumented client to an instrumented server
// over Streamable HTTP gives a CLIENT span and a SERVER span of the same
// trace, the server's parented on the client's through _meta, with the
// attributes of the MCP conventions; a nested call from the handler
// continues the trace.
func TestTraceCrossesClientAndServer(t *testing.T) {
	for _, e := range eras {
		t.Run(e.era.String(), func(t *testing.T) {
			tel := newTelemetry(t)
			copts := pmcp.ClientOptions{Era: e.era, Middleware: []pmcp.ClientMiddleware{pmcpotel.ClientMiddleware(tel.opts)}}
			url := newServer(t, tel.opts, copts)
			cs := connect(t, url, copts)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			res, err := cs.CallTool(ctx, "relay", echoIn{Text: "hi"})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Content[0].(*pmcp.TextContent).Text; got != "hi" {
				t.Fatalf("relay = %q", got)
			}
			client := tel.span(t, trace.SpanKindClient, "tools/call relay")
			server := tel.span(t, trace.SpanKindServer, "tools/call relay")
			nestedClient := tel.span(t, trace.SpanKindClient, "tools/call echo")
			nestedServer := tel.span(t, trace.SpanKindServer, "tools/call echo")

			tid := client.SpanContext().TraceID()
			for _, s := range []sdktrace.ReadOnlySpan{server, nestedClient, nestedServer} {
				if s.SpanContext().TraceID() != tid {
					t.Errorf("%s %q is in trace %s, want %s", s.SpanKind(), s.Name(), s.SpanContext().TraceID(), tid)
				}
			}
			if client.Parent().IsValid() {
				t.Errorf("client span has parent %v, want a root", client.Parent())
			}
			if server.Parent().SpanID() != client.SpanContext().SpanID() || !server.Parent().IsRemote() {
				t.Errorf("server span parent = %v, want the client span %v (remote)", server.Parent().SpanID(), client.SpanContext().SpanID())
			}
			if nestedClient.Parent().SpanID() != server.SpanContext().SpanID() {
				t.Errorf("nested client span parent = %v, want the server span", nestedClient.Parent().SpanID())
			}
			if nestedServer.Parent().SpanID() != nestedClient.SpanContext().SpanID() {
				t.Errorf("nested server span parent = %v, want the nested client span", nestedServer.Parent().SpanID())
			}
			common := map[attribute.Key]string{
				pmcpotel.KeyMethodName:         "tools/call",
				pmcpotel.KeyToolName:           "relay",
				pmcpotel.KeyOperationName:      "execute_tool",
				pmcpotel.KeyProtocolVersion:    e.version,
				pmcpotel.KeyErrorType:          "",
				pmcpotel.KeyResponseStatusCode: "",
				pmcpotel.KeyResourceURI:        "",
				pmcpotel.KeyPromptName:         "",
			}
			wantAttrs(t, client, common)
			wantAttrs(t, server, common)
			wantAttrs(t, server, map[attribute.Key]string{
				pmcpotel.KeyNetworkTransport:       "tcp",
				pmcpotel.KeyNetworkProtocolName:    "http",
				pmcpotel.KeyNetworkProtocolVersion: "1.1",
				pmcpotel.KeyClientAddress:          "127.0.0.1",
			})
			wantAttrs(t, client, map[attribute.Key]string{
				pmcpotel.KeyNetworkTransport:    "tcp",
				pmcpotel.KeyNetworkProtocolName: "http",
				pmcpotel.KeyServerAddress:       "127.0.0.1",
			})
			a := attrs(server)
			if a[pmcpotel.KeyJSONRPCRequestID] == "" || a[pmcpotel.KeyJSONRPCRequestID] != attrs(client)[pmcpotel.KeyJSONRPCRequestID] {
				t.Errorf("%s: server span %q, client span %q; want the same id", pmcpotel.KeyJSONRPCRequestID,
					a[pmcpotel.KeyJSONRPCRequestID], attrs(client)[pmcpotel.KeyJSONRPCRequestID])
			}
			csid, cHasSID := attrs(client)[pmcpotel.KeySessionID]
			if e.era == pmcp.EraLegacy && csid != a[pmcpotel.KeySessionID] {
				t.Errorf("client span %s = %q, server's = %q", pmcpotel.KeySessionID, csid, a[pmcpotel.KeySessionID])
			}
			if e.era == pmcp.EraModern && cHasSID {
				t.Errorf("modern client span has %s", pmcpotel.KeySessionID)
			}
			sid, hasSID := a[pmcpotel.KeySessionID]
			if e.era == pmcp.EraLegacy && (!hasSID || sid == "") {
				t.Errorf("legacy server span has no %s", pmcpotel.KeySessionID)
			}
			if e.era == pmcp.EraModern && hasSID {
				t.Errorf("modern server span has %s = %q; the modern era has no sessions", pmcpotel.KeySessionID, sid)
			}
			for _, s := range []sdktrace.ReadOnlySpan{client, server} {
				if s.Status().Code != codes.Unset {
					t.Errorf("%s %q status = %v, want unset", s.SpanKind(), s.Name(), s.Status())
				}
			}
		})
	}
}

// Error classification: on the server an unknown tool (-32602) is the
// caller's fault, recorded as a status code but not as an error; on the
// client it is an error. A tool result with isError is "tool_error" on
// both sides; a -32603 is an error on both.
func TestErrorClassification(t *testing.T) {
	for _, e := range eras {
		t.Run(e.era.String(), func(t *testing.T) {
			tel := newTelemetry(t)
			copts := pmcp.ClientOptions{Era: e.era, Middleware: []pmcp.ClientMiddleware{pmcpotel.ClientMiddleware(tel.opts)}}
			cs := connect(t, newServer(t, tel.opts, copts), copts)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()

			_, err := cs.CallTool(ctx, "nope", nil)
			var rpcErr *jsonrpc.Error
			if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams {
				t.Fatalf("unknown tool: err = %v, want -32602", err)
			}
			srv := tel.span(t, trace.SpanKindServer, "tools/call nope")
			wantAttrs(t, srv, map[attribute.Key]string{pmcpotel.KeyResponseStatusCode: "-32602", pmcpotel.KeyErrorType: ""})
			if srv.Status().Code == codes.Error {
				t.Errorf("server span of -32602 has status %v, want not an error", srv.Status())
			}
			cli := tel.span(t, trace.SpanKindClient, "tools/call nope")
			wantAttrs(t, cli, map[attribute.Key]string{pmcpotel.KeyResponseStatusCode: "-32602", pmcpotel.KeyErrorType: "-32602"})
			if cli.Status().Code != codes.Error {
				t.Errorf("client span of -32602 has status %v, want error", cli.Status())
			}

			res, err := cs.CallTool(ctx, "fail", nil)
			if err != nil || !res.IsError {
				t.Fatalf("fail: %v %+v", err, res)
			}
			for _, kind := range []trace.SpanKind{trace.SpanKindServer, trace.SpanKindClient} {
				s := tel.span(t, kind, "tools/call fail")
				wantAttrs(t, s, map[attribute.Key]string{pmcpotel.KeyErrorType: "tool_error", pmcpotel.KeyResponseStatusCode: ""})
				if s.Status().Code != codes.Error {
					t.Errorf("%v span of an isError result has status %v, want error", kind, s.Status())
				}
			}

			if _, err := cs.CallTool(ctx, "crash", nil); err == nil {
				t.Fatal("crash: no error")
			}
			for _, kind := range []trace.SpanKind{trace.SpanKindServer, trace.SpanKindClient} {
				s := tel.span(t, kind, "tools/call crash")
				wantAttrs(t, s, map[attribute.Key]string{pmcpotel.KeyErrorType: "-32603", pmcpotel.KeyResponseStatusCode: "-32603"})
				if s.Status().Code != codes.Error || s.Status().Description != "backend down" {
					t.Errorf("%v span of -32603 has status %+v, want error \"backend down\"", kind, s.Status())
				}
			}
		})
	}
}

// The duration histograms are in seconds with the recommended buckets,
// and carry no per-request or per-session attribute.
func TestDurationHistograms(t *testing.T) {
	tel := newTelemetry(t)
	copts := pmcp.ClientOptions{Era: pmcp.EraLegacy, Middleware: []pmcp.ClientMiddleware{pmcpotel.ClientMiddleware(tel.opts)}}
	cs := connect(t, newServer(t, tel.opts, copts), copts)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cs.CallTool(ctx, "echo", echoIn{Text: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, "fail", nil); err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{pmcpotel.MetricServerOperationDuration, pmcpotel.MetricClientOperationDuration} {
		m, ok := findMetric(rm, name)
		if !ok {
			t.Fatalf("no metric %s", name)
		}
		if m.Unit != "s" {
			t.Errorf("%s unit = %q, want s", name, m.Unit)
		}
		h, ok := m.Data.(metricdata.Histogram[float64])
		if !ok {
			t.Fatalf("%s is a %T, want a float64 histogram", name, m.Data)
		}
		var echo, fail bool
		for _, dp := range h.DataPoints {
			if !slices.Equal(dp.Bounds, pmcpotel.DurationBuckets()) {
				t.Errorf("%s bounds = %v, want %v", name, dp.Bounds, pmcpotel.DurationBuckets())
			}
			for _, k := range []attribute.Key{pmcpotel.KeyJSONRPCRequestID, pmcpotel.KeySessionID, pmcpotel.KeyClientAddress} {
				if _, ok := dp.Attributes.Value(k); ok {
					t.Errorf("%s data point has %s: unbounded cardinality", name, k)
				}
			}
			tool, _ := dp.Attributes.Value(pmcpotel.KeyToolName)
			et, _ := dp.Attributes.Value(pmcpotel.KeyErrorType)
			switch tool.AsString() {
			case "echo":
				echo = dp.Count == 1 && et.AsString() == "" && dp.Sum > 0
			case "fail":
				fail = dp.Count == 1 && et.AsString() == "tool_error"
			}
		}
		if !echo || !fail {
			t.Errorf("%s: echo point ok %v, fail point ok %v; points: %+v", name, echo, fail, h.DataPoints)
		}
	}
}

func findMetric(rm metricdata.ResourceMetrics, name string) (metricdata.Metrics, bool) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// The server parents its span on the _meta trace context: with HTTP
// trace headers turned off on the client, and when an HTTP instrumentation
// already put its own span in the request context. In the latter case the
// MCP span links to that HTTP span.
func TestServerParentFromMeta(t *testing.T) {
	for _, e := range eras {
		t.Run(e.era.String()+"/meta only", func(t *testing.T) {
			tel := newTelemetry(t)
			copts := tel.opts
			copts.NoHTTPHeaders = true
			clientOpts := pmcp.ClientOptions{Era: e.era, Middleware: []pmcp.ClientMiddleware{pmcpotel.ClientMiddleware(copts)}}
			cs := connect(t, newServer(t, tel.opts, clientOpts), clientOpts)
			callEcho(t, cs)
			client := tel.span(t, trace.SpanKindClient, "tools/call echo")
			server := tel.span(t, trace.SpanKindServer, "tools/call echo")
			if server.Parent().SpanID() != client.SpanContext().SpanID() {
				t.Errorf("server span parent = %v, want the client span %v", server.Parent().SpanID(), client.SpanContext().SpanID())
			}
		})
		t.Run(e.era.String()+"/ambient HTTP span", func(t *testing.T) {
			tel := newTelemetry(t)
			tracer := tel.opts.TracerProvider.Tracer("fake-otelhttp")
			// The HTTP span ends after the response is written, possibly
			// after the client has it: each end is signalled.
			httpEnded := make(chan struct{}, 64)
			wrap := func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
					ctx, span := tracer.Start(ctx, "HTTP "+r.Method, trace.WithSpanKind(trace.SpanKindServer))
					defer func() {
						span.End()
						select {
						case httpEnded <- struct{}{}:
						default:
						}
					}()
					next.ServeHTTP(w, r.WithContext(ctx))
				})
			}
			clientOpts := pmcp.ClientOptions{Era: e.era, Middleware: []pmcp.ClientMiddleware{pmcpotel.ClientMiddleware(tel.opts)}}
			cs := connect(t, newWrappedServer(t, tel.opts, clientOpts, wrap), clientOpts)
			callEcho(t, cs)
			client := tel.span(t, trace.SpanKindClient, "tools/call echo")
			server := tel.span(t, trace.SpanKindServer, "tools/call echo")
			if server.Parent().SpanID() != client.SpanContext().SpanID() {
				t.Errorf("server span parent = %v, want the client span %v", server.Parent().SpanID(), client.SpanContext().SpanID())
			}
			var httpSpan sdktrace.ReadOnlySpan
			timeout := time.After(10 * time.Second)
			for httpSpan == nil {
				for _, s := range tel.spans.Ended() {
					if s.Name() == "HTTP POST" && s.Parent().SpanID() == client.SpanContext().SpanID() {
						httpSpan = s
					}
				}
				if httpSpan == nil {
					select {
					case <-httpEnded:
					case <-timeout:
						t.Fatalf("no HTTP POST span under the client span: %v", spanNames(tel.spans.Ended()))
					}
				}
			}
			links := server.Links()
			if len(links) != 1 || links[0].SpanContext.SpanID() != httpSpan.SpanContext().SpanID() {
				t.Errorf("server span links = %+v, want one link to the HTTP span %v", links, httpSpan.SpanContext().SpanID())
			}
		})
	}
}

func callEcho(t *testing.T, cs *pmcp.ClientSession) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cs.CallTool(ctx, "echo", echoIn{Text: "x"}); err != nil {
		t.Fatal(err)
	}
}

// A legacy session records mcp.server.session.duration when it ends (the
// client's DELETE here); a modern client, which has no session, records
// none.
func TestSessionDuration(t *testing.T) {
	tel := newTelemetry(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	copts := pmcp.ClientOptions{Era: pmcp.EraModern}
	url := newServer(t, tel.opts, copts)
	modern := connect(t, url, copts)
	callEcho(t, modern)
	_ = modern.Close()

	legacy := connect(t, url, pmcp.ClientOptions{Era: pmcp.EraLegacy})
	callEcho(t, legacy)
	if _, ok := sessionPoints(t, tel, ctx); ok {
		t.Fatal("session duration recorded while the session is open")
	}
	// The DELETE is answered after the session ended, and the duration
	// is recorded as it ends: it is there once Close returns.
	_ = legacy.Close()
	h, ok := sessionPoints(t, tel, ctx)
	if !ok {
		t.Fatal("no session duration after the legacy session ended")
	}
	if len(h.DataPoints) != 1 || h.DataPoints[0].Count != 1 {
		t.Fatalf("session duration points = %+v, want one session", h.DataPoints)
	}
	dp := h.DataPoints[0]
	if v, _ := dp.Attributes.Value(pmcpotel.KeyProtocolVersion); v.AsString() != "2025-11-25" {
		t.Errorf("session %s = %q, want 2025-11-25", pmcpotel.KeyProtocolVersion, v.AsString())
	}
	if _, ok := dp.Attributes.Value(pmcpotel.KeySessionID); ok {
		t.Errorf("session duration carries %s: unbounded cardinality", pmcpotel.KeySessionID)
	}
	if !slices.Equal(dp.Bounds, pmcpotel.DurationBuckets()) {
		t.Errorf("bounds = %v", dp.Bounds)
	}
}

func sessionPoints(t *testing.T, tel *telemetry, ctx context.Context) (metricdata.Histogram[float64], bool) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	m, ok := findMetric(rm, pmcpotel.MetricServerSessionDuration)
	if !ok {
		return metricdata.Histogram[float64]{}, false
	}
	h, ok := m.Data.(metricdata.Histogram[float64])
	if m.Unit != "s" {
		t.Errorf("session duration unit = %q", m.Unit)
	}
	return h, ok && len(h.DataPoints) > 0
}

// A modern subscriptions/listen stream that the client ends is not an
// error, and its (long) duration stays out of the operation histogram.
func TestListenEndIsNotAnError(t *testing.T) {
	tel := newTelemetry(t)
	acked := make(chan struct{}, 1)
	copts := pmcp.ClientOptions{
		Era:        pmcp.EraModern,
		Middleware: []pmcp.ClientMiddleware{pmcpotel.ClientMiddleware(tel.opts)},
		Notifications: pmcp.ClientNotificationHandlers{
			SubscriptionAcknowledged: func(ctx context.Context, p *pmcp.SubscriptionsAckParams) { acked <- struct{}{} },
		},
	}
	cs := connect(t, newServer(t, tel.opts, copts), copts)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- cs.Listen(lctx, pmcp.SubscriptionFilter{ToolsListChanged: true}) }()
	select {
	case <-acked:
	case <-ctx.Done():
		t.Fatal("no acknowledgement")
	}
	stop()
	<-done
	// The server span ends when the server notices the closed stream.
	var server sdktrace.ReadOnlySpan
	for server == nil {
		for _, s := range tel.spans.Ended() {
			if s.SpanKind() == trace.SpanKindServer && s.Name() == "subscriptions/listen" {
				server = s
			}
		}
		if server == nil {
			select {
			case <-ctx.Done():
				t.Fatalf("no server span for subscriptions/listen: %v", spanNames(tel.spans.Ended()))
			case <-time.After(time.Millisecond):
			}
		}
	}
	wantAttrs(t, server, map[attribute.Key]string{pmcpotel.KeyErrorType: "", pmcpotel.KeyResponseStatusCode: ""})
	if server.Status().Code == codes.Error {
		t.Errorf("listen span status = %v", server.Status())
	}
	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	m, _ := findMetric(rm, pmcpotel.MetricServerOperationDuration)
	if h, ok := m.Data.(metricdata.Histogram[float64]); ok {
		for _, dp := range h.DataPoints {
			if v, _ := dp.Attributes.Value(pmcpotel.KeyMethodName); v.AsString() == "subscriptions/listen" {
				t.Errorf("subscriptions/listen recorded in %s", pmcpotel.MetricServerOperationDuration)
			}
		}
	}
}
