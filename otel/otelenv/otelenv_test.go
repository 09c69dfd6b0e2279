package otelenv_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	pmcpotel "github.com/gopmcp/pmcp/otel"
	"github.com/gopmcp/pmcp/otel/otelenv"
	"github.com/gopmcp/pmcp/transport/memory"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// callTool serves an instrumented server over an in-memory pipe and makes
// one legacy tools/call through an instrumented client.
func callTool(t *testing.T, opts pmcpotel.Options) {
	t.Helper()
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Middleware: []pmcp.Middleware{pmcpotel.ServerMiddleware(opts)}})
	if err != nil {
		t.Fatal(err)
	}
	err = pmcp.AddTool(srv, &pmcp.Tool{Name: "echo"}, func(ctx context.Context, extra *pmcp.RequestHandlerExtra, in struct{}) (string, error) {
		return "ok", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	a, b := memory.NewPipe()
	done := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() { done <- srv.Serve(ctx, a) }()
	cs, err := pmcp.NewClient(pmcp.ClientOptions{Era: pmcp.EraLegacy, Middleware: []pmcp.ClientMiddleware{pmcpotel.ClientMiddleware(opts)}}).Connect(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, "echo", nil); err != nil {
		t.Fatal(err)
	}
	_ = cs.Close()
	<-done
}

// Nothing is exported unless a variable asks for it.
func TestSetupNone(t *testing.T) {
	for name, vars := range map[string]map[string]string{
		"unset":    {},
		"none":     {"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"},
		"disabled": {"OTEL_TRACES_EXPORTER": "console", "OTEL_METRICS_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"},
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			tel, err := otelenv.Setup(context.Background(), otelenv.Options{Getenv: env(vars), Console: &out})
			if err != nil {
				t.Fatal(err)
			}
			if tel.Enabled() {
				t.Error("Enabled() = true, want nothing exported")
			}
			callTool(t, tel.Instrumentation())
			if err := tel.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			if out.Len() != 0 {
				t.Errorf("console output with nothing enabled: %q", out.String())
			}
		})
	}
}

// OTEL_TRACES_EXPORTER=console and OTEL_METRICS_EXPORTER=console write the
// spans and the duration histograms to the console writer, with the
// service name from OTEL_SERVICE_NAME.
func TestSetupConsole(t *testing.T) {
	var out bytes.Buffer
	tel, err := otelenv.Setup(context.Background(), otelenv.Options{Console: &out, Getenv: env(map[string]string{
		"OTEL_TRACES_EXPORTER":  "console",
		"OTEL_METRICS_EXPORTER": "console",
		"OTEL_SERVICE_NAME":     "svc-under-test",
	})})
	if err != nil {
		t.Fatal(err)
	}
	if !tel.Enabled() {
		t.Fatal("Enabled() = false")
	}
	callTool(t, tel.Instrumentation())
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{`"Name":"tools/call echo"`, `"SpanKind":2`, `"SpanKind":3`, "svc-under-test",
		pmcpotel.MetricServerOperationDuration, pmcpotel.MetricClientOperationDuration} {
		if !strings.Contains(got, want) {
			t.Errorf("console output lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("console output: %.3000s", got)
	}
}

// Unknown values are errors that name the variable.
func TestSetupUnsupported(t *testing.T) {
	for _, vars := range []map[string]string{
		{"OTEL_TRACES_EXPORTER": "zipkin"},
		{"OTEL_METRICS_EXPORTER": "prometheus"},
		{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
		{"OTEL_PROPAGATORS": "b3"},
		{"OTEL_METRICS_EXPORTER": "console", "OTEL_RESOURCE_ATTRIBUTES": "novalue"},
	} {
		_, err := otelenv.Setup(context.Background(), otelenv.Options{Getenv: env(vars), Console: io.Discard})
		if !errors.Is(err, otelenv.ErrUnsupported) {
			t.Errorf("%v: err = %v, want ErrUnsupported", vars, err)
		}
	}
}

// OTEL_TRACES_EXPORTER=otlp sends OTLP/HTTP protobuf to
// OTEL_EXPORTER_OTLP_ENDPOINT (read by the exporter itself).
func TestSetupOTLPHTTP(t *testing.T) {
	var (
		mu    sync.Mutex
		paths []string
	)
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_METRICS_EXPORTER", "otlp")
	tel, err := otelenv.Setup(context.Background(), otelenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	callTool(t, tel.Instrumentation())
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	got := strings.Join(paths, "\n")
	for _, want := range []string{"POST /v1/traces application/x-protobuf", "POST /v1/metrics application/x-protobuf"} {
		if !strings.Contains(got, want) {
			t.Errorf("collector saw %q, want %q", got, want)
		}
	}
}

// Options.Prometheus serves the duration histograms in the Prometheus
// text format, with the recommended buckets, and the Go runtime and
// process metrics.
func TestPrometheusHandler(t *testing.T) {
	tel, err := otelenv.Setup(context.Background(), otelenv.Options{Getenv: env(nil), Prometheus: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	if tel.PrometheusHandler() == nil {
		t.Fatal("PrometheusHandler() = nil")
	}
	callTool(t, tel.Instrumentation())
	ts := httptest.NewServer(tel.PrometheusHandler())
	defer ts.Close()
	resp, err := http.Get(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type = %q, want text/plain", ct)
	}
	text := string(body)
	for _, want := range []string{
		"# TYPE mcp_server_operation_duration_seconds histogram",
		`mcp_server_operation_duration_seconds_bucket{`,
		`le="0.01"`, `le="300"`,
		`gen_ai_tool_name="echo"`,
		`mcp_method_name="tools/call"`,
		"mcp_client_operation_duration_seconds_count",
		"mcp_server_session_duration_seconds_count",
		"go_goroutines ", "go_gc_duration_seconds", "go_memstats_heap_alloc_bytes ",
		"process_cpu_seconds_total ", "process_resident_memory_bytes ", "process_open_fds ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if t.Failed() {
		t.Logf("metrics:\n%.4000s", text)
	}
}
