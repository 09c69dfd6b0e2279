package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
)

var (
	metricsURL  = regexp.MustCompile(`serving Prometheus metrics" url=(\S+)`)
	reasonLabel = regexp.MustCompile(`^\{reason="[a-z_]+"\} `)
)

// TestServeOperatorMetrics: `pmcp serve --metrics` exports the Go runtime
// and process metrics, gauges of the live sessions, listen streams and
// running tasks, and a counter of HTTP refusals by reason, each refusal
// provoked here over raw HTTP as a third-party client sends it. No label
// carries a value a client chose (session ids, Host values, tool names).
func TestServeOperatorMetrics(t *testing.T) {
	as := newFakeIssuer(t)
	const audience = "https://mcp.example.com/mcp"
	endpoint, stderr, _ := serveInProcess(t, "--metrics", "127.0.0.1:0", "--auth-issuer", as.ts.URL, "--auth-audience", audience)
	if endpoint == "" {
		t.Fatalf("serve failed:\n%s", stderr)
	}
	m := metricsURL.FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no metrics URL in the log:\n%s", stderr)
	}
	bearer := "Bearer " + as.mint(t, audience, "")
	const clientChosenSession = "session-id-chosen-by-the-client"

	post := func(body string, kv ...string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
		req.Header = http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
		for i := 0; i+1 < len(kv); i += 2 {
			req.Header.Set(kv[i], kv[i+1])
		}
		req.Host = req.Header.Get("Host")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	const ping = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	modern := func(id int, method string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"extra":true}}`, id, method)
	}
	for _, c := range []struct {
		what string
		got  int
		want int
	}{
		{"no token", post(ping), 401},
		{"bad token", post(ping, "Authorization", "Bearer not-a-jwt"), 401},
		{"Host", post(ping, "Authorization", bearer, "Host", "evil.example"), 403},
		{"Origin", post(ping, "Authorization", bearer, "Origin", "https://evil.example"), 403},
		{"unknown session", post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Authorization", bearer, "Mcp-Session-Id", clientChosenSession, "MCP-Protocol-Version", "2025-11-25"), 404},
		{"header mismatch", post(modern(1, "tools/list"), "Authorization", bearer, "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "prompts/list"), 400},
		{"too large", postDeclared(t, endpoint, bearer, 5<<20), 413},
	} {
		if c.got != c.want {
			t.Errorf("%s: status %d, want %d", c.what, c.got, c.want)
		}
	}

	// A legacy session, a listen stream and a running task.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	authz := http.Header{"Authorization": {bearer}}
	legacy, err := pmcp.NewClient(pmcp.ClientOptions{Era: pmcp.EraLegacy}).ConnectHTTP(ctx, endpoint, pmcp.HTTPClientOptions{Header: authz, NoStandaloneStream: true})
	if err != nil {
		t.Fatal(err)
	}
	defer legacy.Close()
	lctx, lcancel := context.WithCancel(ctx)
	defer lcancel()
	lreq, _ := http.NewRequestWithContext(lctx, http.MethodPost, endpoint, strings.NewReader(modern(7, "subscriptions/listen")))
	lreq.Header = http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}, "Authorization": {bearer},
		"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"subscriptions/listen"}}
	lresp, err := http.DefaultClient.Do(lreq)
	if err != nil {
		t.Fatal(err)
	}
	defer lresp.Body.Close()
	if lresp.StatusCode != 200 {
		t.Fatalf("subscriptions/listen: %d", lresp.StatusCode)
	}
	if _, err := bufio.NewReader(lresp.Body).ReadString('\n'); err != nil {
		t.Fatalf("listen stream: %v", err)
	}
	mc, err := pmcp.NewClient(pmcp.ClientOptions{Era: pmcp.EraModern}).ConnectHTTP(ctx, endpoint, pmcp.HTTPClientOptions{Header: authz})
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	task, err := mc.CallToolTask(ctx, "slow_compute", map[string]any{"seconds": 60, "label": "metrics"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = task.Cancel(ctx) }()

	text := scrape(t, m[1])
	for _, want := range []string{
		`pmcp_http_refusals_total{reason="unauthenticated"} 2`,
		`pmcp_http_refusals_total{reason="host"} 1`,
		`pmcp_http_refusals_total{reason="origin"} 1`,
		`pmcp_http_refusals_total{reason="session_not_found"} 1`,
		`pmcp_http_refusals_total{reason="header_mismatch"} 1`,
		`pmcp_http_refusals_total{reason="body_too_large"} 1`,
		`pmcp_http_refusals_total{reason="max_sessions"} 0`,
		`pmcp_http_refusals_total{reason="max_listen_streams"} 0`,
		"pmcp_http_sessions 1\n",
		"pmcp_http_listen_streams 1\n",
		"pmcp_tasks_running 1\n",
		"go_goroutines ",
		"go_memstats_heap_alloc_bytes ",
		"go_gc_duration_seconds",
		"process_cpu_seconds_total ",
		"process_resident_memory_bytes ",
		"process_open_fds ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// Bounded labels: the operator series carry no label but reason, and
	// nothing a client sent is in any label.
	for _, l := range strings.Split(text, "\n") {
		if !strings.HasPrefix(l, "pmcp_") {
			continue
		}
		if i := strings.IndexByte(l, '{'); i >= 0 && !reasonLabel.MatchString(l[i:]) {
			t.Errorf("series with other labels: %s", l)
		}
	}
	// (Registered tool names are labels of the duration histograms, bounded
	// there by MaxMetricTargets; the operator series have none.)
	for _, chosen := range []string{clientChosenSession, legacy.SessionID(), "evil.example", "not-a-jwt"} {
		if chosen != "" && strings.Contains(text, chosen) {
			t.Errorf("/metrics carries %q, a value a client chose", chosen)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%.6000s", text)
	}
}

// postDeclared sends a POST that declares a body of n bytes and sends
// none: the server must refuse it from the header alone.
func postDeclared(t *testing.T, endpoint, bearer string, n int) int {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nAuthorization: %s\r\nContent-Length: %d\r\n\r\n",
		u.Path, u.Host, bearer, n)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// scrape returns the Prometheus text at u.
func scrape(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", u, resp.StatusCode, err)
	}
	return string(b)
}
