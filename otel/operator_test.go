package otel_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gopmcp/pmcp"
	pmcpotel "github.com/gopmcp/pmcp/otel"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// TestObserveServer: the operator metrics report the handler's sessions,
// listen streams and refusals (here the 503s of the session and stream
// caps, provoked over raw HTTP) and the server's running tasks; each
// refusal point has the one attribute reason, and every reason of the
// fixed set is reported.
func TestObserveServer(t *testing.T) {
	tel := newTelemetry(t)
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Tasks: &pmcp.TaskOptions{}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{MaxSessions: 1, MaxListenStreams: 1})
	ts := httptest.NewServer(h)
	defer func() {
		_ = h.Close()
		ts.Close()
	}()
	reg, err := pmcpotel.ObserveServer(tel.opts, srv, h)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	post := func(ctx context.Context, body string, kv ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL, strings.NewReader(body))
		req.Header = http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
		for i := 0; i+1 < len(kv); i += 2 {
			req.Header.Set(kv[i], kv[i+1])
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	status := func(resp *http.Response) int {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	const listen = `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	listenHeaders := []string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "subscriptions/listen"}
	if s := status(post(ctx, initBody)); s != 200 {
		t.Fatalf("initialize: %d", s)
	}
	if s := status(post(ctx, initBody)); s != 503 {
		t.Fatalf("initialize over MaxSessions: %d", s)
	}
	stream := post(ctx, listen, listenHeaders...)
	defer stream.Body.Close()
	if _, err := bufio.NewReader(stream.Body).ReadString('\n'); err != nil || stream.StatusCode != 200 {
		t.Fatalf("listen: %d %v", stream.StatusCode, err)
	}
	if s := status(post(ctx, listen, listenHeaders...)); s != 503 {
		t.Fatalf("listen over MaxListenStreams: %d", s)
	}

	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	gauge := func(name string) int64 {
		t.Helper()
		m, ok := findMetric(rm, name)
		if !ok {
			t.Fatalf("no %s", name)
		}
		sum := m.Data.(metricdata.Sum[int64])
		if sum.IsMonotonic || len(sum.DataPoints) != 1 || sum.DataPoints[0].Attributes.Len() != 0 {
			t.Fatalf("%s: %+v", name, sum)
		}
		return sum.DataPoints[0].Value
	}
	if n := gauge(pmcpotel.MetricHTTPSessions); n != 1 {
		t.Errorf("sessions = %d, want 1", n)
	}
	if n := gauge(pmcpotel.MetricHTTPListenStreams); n != 1 {
		t.Errorf("listen streams = %d, want 1", n)
	}
	if n := gauge(pmcpotel.MetricTasksRunning); n != 0 {
		t.Errorf("running tasks = %d, want 0", n)
	}
	m, ok := findMetric(rm, pmcpotel.MetricHTTPRefusals)
	if !ok {
		t.Fatalf("no %s", pmcpotel.MetricHTTPRefusals)
	}
	sum := m.Data.(metricdata.Sum[int64])
	if !sum.IsMonotonic {
		t.Errorf("%s is not a counter", m.Name)
	}
	got := map[string]int64{}
	for _, dp := range sum.DataPoints {
		v, ok := dp.Attributes.Value(pmcpotel.KeyRefusalReason)
		if !ok || dp.Attributes.Len() != 1 {
			t.Errorf("refusal point with attributes %v", dp.Attributes.ToSlice())
		}
		got[v.AsString()] = dp.Value
	}
	want := h.Stats().Refusals
	if len(got) != len(want) || got["max_sessions"] != 1 || got["max_listen_streams"] != 1 || got["session_not_found"] != 0 {
		t.Errorf("refusals %v, want the reasons of %v with max_sessions and max_listen_streams 1", got, want)
	}
}

// TestObserveServerStdio: without a handler only the task gauge exists.
func TestObserveServerStdio(t *testing.T) {
	tel := newTelemetry(t)
	srv, err := pmcp.NewServer(pmcp.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := pmcpotel.ObserveServer(tel.opts, srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	if _, ok := findMetric(rm, pmcpotel.MetricTasksRunning); !ok {
		t.Error("no task gauge")
	}
	for _, name := range []string{pmcpotel.MetricHTTPSessions, pmcpotel.MetricHTTPListenStreams, pmcpotel.MetricHTTPRefusals} {
		if _, ok := findMetric(rm, name); ok {
			t.Errorf("%s without a handler", name)
		}
	}
}
