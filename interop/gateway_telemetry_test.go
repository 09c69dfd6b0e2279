package interop

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/gopmcp/pmcp"
)

// consoleSpan is what the console trace exporter (OTEL_TRACES_EXPORTER=
// console) writes for a span, one JSON object a line, as far as the
// tests read it.
type consoleSpan struct {
	Name        string
	SpanKind    int // 2 server, 3 client
	SpanContext struct{ TraceID, SpanID string }
	Parent      struct{ TraceID, SpanID string }
}

const (
	spanKindServer = 2
	spanKindClient = 3
)

// consoleSpans are the spans in a process's stderr.
func consoleSpans(t *testing.T, stderr string) []consoleSpan {
	t.Helper()
	var out []consoleSpan
	sc := bufio.NewScanner(strings.NewReader(stderr))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' || !strings.Contains(sc.Text(), `"SpanContext"`) {
			continue
		}
		var s consoleSpan
		if err := json.Unmarshal(line, &s); err != nil {
			t.Fatalf("span %s: %v", line, err)
		}
		out = append(out, s)
	}
	return out
}

// TestGatewayTracePerHop is issue 22's "OTel spans per hop": with the
// OTEL_* variables asking for traces, one call through `pmcp gateway` to
// an upstream `pmcp serve --http` is, in one trace (the caller's, from
// _meta), the gateway's server span, its client span for the upstream hop
// under it, and the upstream's server span under that — in both eras.
func TestGatewayTracePerHop(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "console")
	t.Setenv("OTEL_METRICS_EXPORTER", "none")
	bin := pmcpBinary(t)
	up, upLogs, stopUp, err := startHTTPStoppable(t, bin, "serve", "--http", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u, gwLogs, stopGW, err := startHTTPStoppable(t, bin, "gateway", "--listen", "127.0.0.1:0", "--config", gatewayURLConfig(t, up))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	traces := map[pmcp.Era]string{
		pmcp.EraLegacy: "0af7651916cd43dd8448eb211c80319c",
		pmcp.EraModern: "4bf92f3577b34da6a3ce929d0e0e4736",
	}
	const callerSpan = "b7ad6b7169203331"
	for era, trace := range traces {
		// The caller's trace context in _meta, as an instrumented client
		// sends it.
		withTrace := func(next pmcp.ClientHandler) pmcp.ClientHandler {
			return func(ctx context.Context, r *pmcp.ClientRequest) (jsontext.Value, error) {
				if r.Method == pmcp.MethodToolsCall {
					if err := r.SetMeta("traceparent", "00-"+trace+"-"+callerSpan+"-01"); err != nil {
						return nil, err
					}
				}
				return next(ctx, r)
			}
		}
		s, err := pmcp.NewClient(pmcp.ClientOptions{Name: "traced", Era: era, Middleware: []pmcp.ClientMiddleware{withTrace}}).
			ConnectHTTP(ctx, u, pmcp.HTTPClientOptions{NoStandaloneStream: true})
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.CallTool(ctx, "up_echo", map[string]any{"text": "traced"})
		_ = s.Close()
		if err != nil || res.IsError {
			t.Fatalf("%v: up_echo: %+v %v", era, res, err)
		}
	}
	stopGW() // flushes the exporters
	stopUp()
	gw, ups := consoleSpans(t, gwLogs.String()), consoleSpans(t, upLogs.String())
	for era, trace := range traces {
		t.Run(era.String(), func(t *testing.T) {
			find := func(spans []consoleSpan, kind int, name string) consoleSpan {
				t.Helper()
				for _, s := range spans {
					if s.SpanContext.TraceID == trace && s.SpanKind == kind && s.Name == name {
						return s
					}
				}
				t.Fatalf("no span %q of kind %d in trace %s among %s", name, kind, trace, fmt.Sprint(spans))
				return consoleSpan{}
			}
			server := find(gw, spanKindServer, "tools/call up_echo")
			client := find(gw, spanKindClient, "tools/call echo")
			upstream := find(ups, spanKindServer, "tools/call echo")
			if server.Parent.SpanID != callerSpan {
				t.Errorf("the gateway's server span's parent is %s, want the caller's %s", server.Parent.SpanID, callerSpan)
			}
			if client.Parent.SpanID != server.SpanContext.SpanID {
				t.Errorf("the gateway's client span's parent is %s, want its server span %s", client.Parent.SpanID, server.SpanContext.SpanID)
			}
			if upstream.Parent.SpanID != client.SpanContext.SpanID {
				t.Errorf("the upstream's server span's parent is %s, want the gateway's client span %s", upstream.Parent.SpanID, client.SpanContext.SpanID)
			}
		})
	}
}
