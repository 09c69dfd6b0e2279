package interop

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Issue 22's acceptance: other SDKs' Streamable HTTP servers as `url`
// upstreams of `pmcp gateway`, in the third-party matrix — the npm
// everything server (TypeScript SDK) served over HTTP, and the go-sdk peer
// server (family "gosdk", its own direct HTTP target the baseline).

// gosdkFamily is the go-sdk peer server's family in the matrix.
const gosdkFamily = "gosdk"

// httpUpstreamTargets starts the HTTP upstreams of other SDKs and returns
// the matrix targets they add: each one as a `url` upstream of a gateway
// and, for go-sdk (which has no stdio target), the server itself.
// listen starts a gateway target (startTargets' helper).
func httpUpstreamTargets(t *testing.T, npm npmEnv, listen func(name, family, prefix string, args ...string)) []*target {
	t.Helper()
	gs := goSDKStatefulHTTP(t)
	targets := []*target{{name: "gosdk-http", family: gosdkFamily, direct: true, url: gs}}
	listen("gateway-gosdk-url-http", gosdkFamily, "up_", "gateway", "--listen", "127.0.0.1:0", "--config", gatewayURLConfig(t, gs))
	if npm.everything != "" {
		u := everythingHTTP(t, npm)
		listen("gateway-everything-url-http", "everything", "up_", "gateway", "--listen", "127.0.0.1:0", "--config", gatewayURLConfig(t, u))
	}
	return targets
}

// goSDKStatefulHTTP serves the go-sdk peer (peers_test.go) over stateful
// Streamable HTTP (a session per client, legacy era, as go-sdk servers run
// by default) until the test ends.
func goSDKStatefulHTTP(t *testing.T) string {
	t.Helper()
	s := newGoSDKServer()
	h := gosdk.NewStreamableHTTPHandler(func(*http.Request) *gosdk.Server { return s }, nil)
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		ts.Close()
		// A client that never ended its session (a gateway stopped
		// by signal) leaves it open on the server.
		for ss := range s.Sessions() {
			_ = ss.Close()
		}
	})
	return ts.URL + "/mcp"
}

// gatewayURLConfig writes a gateway configuration whose only upstream,
// "up", is the Streamable HTTP server at u.
func gatewayURLConfig(t *testing.T, u string) string {
	t.Helper()
	return writeJSONFile(t, "gateway.json", map[string]any{"mcpServers": map[string]any{"up": map[string]any{"url": u}}})
}

var listeningPort = regexp.MustCompile(`^LISTENING (\d+)$`)

// everythingHTTP runs the npm everything server's Streamable HTTP mode on
// a free loopback port (testdata/listen-loopback.cjs) until the test ends
// and returns its endpoint.
func everythingHTTP(t *testing.T, npm npmEnv) string {
	t.Helper()
	preload, err := filepath.Abs(filepath.Join("testdata", "listen-loopback.cjs"))
	if err != nil {
		t.Fatal(err)
	}
	main := npm.everythingCmd()[1]
	cmd := exec.Command(npm.node, "--require", preload, main, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT=0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logs := &tailBuffer{}
	port := make(chan string, 1)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			fmt.Fprintln(logs, sc.Text())
			if m := listeningPort.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case port <- m[1]:
				default:
				}
			}
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	select {
	case p := <-port:
		return "http://127.0.0.1:" + p + "/mcp"
	case <-exited:
		t.Fatalf("the everything server (streamableHttp) exited before listening:\n%s", logs)
	case <-time.After(30 * time.Second):
		t.Fatalf("the everything server (streamableHttp) never listened:\n%s", logs)
	}
	return ""
}

// writeJSONFile marshals v into a new file named name in a temporary
// directory and returns its path.
func writeJSONFile(t *testing.T, name string, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
