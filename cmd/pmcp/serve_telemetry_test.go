package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/internal/everything"
	"github.com/gopmcp/pmcp/transport/memory"
)

// finish closes the child's stdin and waits for it to exit, so that its
// stderr is complete.
func (p *proc) finish() {
	p.t.Helper()
	_ = p.stdin.Close()
	for range p.lines {
	}
	if err := p.cmd.Wait(); err != nil {
		p.t.Fatalf("pmcp exited with %v; stderr:\n%s", err, p.stderr)
	}
}

// With OTEL_TRACES_EXPORTER=console and OTEL_METRICS_EXPORTER=console,
// `pmcp serve --stdio` writes spans and metrics to stderr (stdout carries
// only protocol frames: until fails on anything else), and the server span
// continues the trace the client put in _meta.
func TestServeConsoleTelemetry(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "console")
	t.Setenv("OTEL_METRICS_EXPORTER", "console")
	t.Setenv("OTEL_SERVICE_NAME", "pmcp-under-test")
	p := startStdio(t)
	p.call(1, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"script","version":"1"}}`)
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	_, r := p.call(2, "tools/call", `{"name":"echo","arguments":{"text":"hi"},"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}`)
	if r.Error != nil {
		t.Fatalf("tools/call: %s", r.raw)
	}
	p.finish()
	errText := p.stderr.String()
	for _, want := range []string{
		`"Name":"tools/call echo"`,
		`"TraceID":"0af7651916cd43dd8448eb211c80319c"`,
		`"SpanID":"b7ad6b7169203331"`, // the parent from _meta
		`"Name":"notifications/initialized"`,
		"pmcp-under-test",
		"mcp.server.operation.duration",
		"mcp.server.session.duration",
	} {
		if !strings.Contains(errText, want) {
			t.Errorf("stderr lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("stderr:\n%.4000s", errText)
	}
}

// Without OTEL_* variables nothing is exported: stderr carries no span.
func TestServeNoTelemetryByDefault(t *testing.T) {
	for _, k := range []string{"OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_SDK_DISABLED"} {
		t.Setenv(k, "")
	}
	p := startStdio(t)
	p.call(1, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"script","version":"1"}}`)
	p.finish()
	if s := p.stderr.String(); strings.Contains(s, "SpanContext") || strings.Contains(s, "mcp.server") {
		t.Errorf("telemetry exported without being asked:\n%s", s)
	}
}

// --metrics serves Prometheus text on its own loopback listener, with the
// duration histograms of the requests served.
func TestServeMetricsEndpoint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tel, err := startTelemetry(ctx, "127.0.0.1:0", false, io.Discard, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer tel.close()
	opts := pmcp.ServerOptions{}
	tel.instrument(&opts)
	srv, err := everything.New(everything.Options{Server: opts})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	a, b := memory.NewPipe()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, a) }()
	cs, err := pmcp.NewClient(pmcp.ClientOptions{}).Connect(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, "echo", map[string]string{"text": "hi"}); err != nil {
		t.Fatal(err)
	}
	_ = cs.Close()
	<-done

	resp, err := http.Get("http://" + tel.addr.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	for _, want := range []string{
		"# TYPE mcp_server_operation_duration_seconds histogram",
		`mcp_server_operation_duration_seconds_bucket{gen_ai_operation_name="execute_tool",gen_ai_tool_name="echo"`,
		`le="0.01"`,
		`service_name="pmcp"`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%.4000s", text)
	}
}

// --metrics refuses addresses other hosts could reach unless
// --metrics-remote is given.
func TestServeMetricsLoopbackOnly(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:9464": true, "localhost:9464": true, "[::1]:9464": true,
		":9464": false, "0.0.0.0:9464": false, "192.0.2.1:9464": false, "[::]:9464": false,
	} {
		err := checkLoopback(addr)
		if ok != (err == nil) {
			t.Errorf("checkLoopback(%q) = %v, want ok=%v", addr, err, ok)
		}
		if !ok && !errors.Is(err, errMetricsNotLoopback) {
			t.Errorf("checkLoopback(%q) = %v, want errMetricsNotLoopback", addr, err)
		}
	}
	var stderr strings.Builder
	if code := serve(context.Background(), []string{"--stdio", "--metrics", "0.0.0.0:0"}, strings.NewReader(""), io.Discard, &stderr); code != exitUsage {
		t.Errorf("serve --metrics 0.0.0.0:0 = exit %d, want %d (usage); stderr %q", code, exitUsage, stderr.String())
	}
}
