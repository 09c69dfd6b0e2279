package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// TestBridgeReadiness: `pmcp bridge --listen` answers GET /healthz with
// 200 while it serves, and GET /readyz with 200 when every upstream is
// reachable, else 503 naming the unreachable ones (here an HTTP upstream
// whose server is gone and a child that cannot start).
func TestBridgeReadiness(t *testing.T) {
	self := os.Args[0]
	gone := httptest.NewServer(nil)
	gone.Close()
	for _, c := range []struct {
		name   string
		args   []string
		status int
		body   string
	}{
		{"all-up", []string{"--upstream", "a=" + self + " serve --stdio --log-level off"}, http.StatusOK, "ready"},
		{"two-down", []string{"--upstream", "a=" + self + " serve --stdio --log-level off",
			"--upstream", "b=" + gone.URL + "/mcp", "--upstream", "c=" + self + " no-such-verb"}, http.StatusServiceUnavailable, "unreachable upstreams: b, c"},
	} {
		t.Run(c.name, func(t *testing.T) {
			url := startBridgeHTTP(t, c.args...)
			base := strings.TrimSuffix(url, "/mcp")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			get := func(path string) (int, string) {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
				if err != nil {
					t.Fatal(err)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(b)
			}
			if code, body := get("/healthz"); code != http.StatusOK {
				t.Errorf("/healthz: %d %q", code, body)
			}
			if code, body := get("/readyz"); code != c.status || !strings.Contains(body, c.body) {
				t.Errorf("/readyz: %d %q, want %d and %q", code, body, c.status, c.body)
			}
		})
	}
}
