package pmcp

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// fakeLocalListener reports every accepted connection as arriving on
// addr, as if the server listened on a public interface.
type fakeLocalListener struct {
	net.Listener
	addr net.Addr
}

func (l fakeLocalListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return fakeLocalConn{c, l.addr}, nil
}

type fakeLocalConn struct {
	net.Conn
	addr net.Addr
}

func (c fakeLocalConn) LocalAddr() net.Addr { return c.addr }

// rawStatus sends one modern discover request with the Host value host
// on a new connection and returns the status code.
func rawStatus(t *testing.T, ts *httptest.Server, host string) int {
	t.Helper()
	conn := dialRaw(t, ts)
	body := modernBody(1, MethodDiscover, nil, nil)
	req := rawModernHead(host, fmt.Sprintf("Connection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body))
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("Host %q: %v", host, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusForbidden {
		// The refusal says what to configure.
		b, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(b), "AllowedHosts") {
			t.Errorf("Host %q: 403 body %s does not point to AllowedHosts", host, b)
		}
	}
	return resp.StatusCode
}

// TestHTTPHostHeaderStrict: by default only loopback Host values pass,
// with a valid port if any, whatever interface the connection arrived
// on; AllowedHosts adds names, matched only with a valid port.
func TestHTTPHostHeaderStrict(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	def := newHTTPEnv(t, srv, nil)
	allowed := newHTTPEnv(t, srv, &StreamableHTTPOptions{AllowedHosts: []string{"mcp.example.com", "api.example.com:8443", "[2001:db8::1]"}})

	// The default handler behind a listener whose connections look as if
	// they arrived on a public address (0.0.0.0 binds).
	public := httptest.NewUnstartedServer(NewStreamableHTTPHandler(srv, StreamableHTTPOptions{}))
	public.Listener = fakeLocalListener{public.Listener, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 10), Port: 8080}}
	public.Start()
	t.Cleanup(func() {
		public.Config.Handler.(*StreamableHTTPHandler).Close()
		public.Close()
	})

	cases := []struct {
		ts   *httptest.Server
		host string
		want int
	}{
		{def.ts, "localhost", 200},
		{def.ts, "localhost:8080", 200},
		{def.ts, "LocalHost:1", 200},
		{def.ts, "127.0.0.1:65535", 200},
		{def.ts, "127.3.4.5:80", 200},
		{def.ts, "[::1]", 200},
		{def.ts, "[::1]:443", 200},
		{def.ts, "localhost:8080.evil.example", 403},
		{def.ts, "127.0.0.1:80.evil.example", 403},
		{def.ts, "[::1]:80.evil.example", 403},
		{def.ts, "localhost:abc", 403},
		{def.ts, "localhost:0", 403},
		{def.ts, "localhost:65536", 403},
		{def.ts, "localhost:99999999999999999999", 403},
		{def.ts, "localhost:", 403},
		{def.ts, "localhost:+80", 403},
		{def.ts, "localhost:80:80", 403},
		{def.ts, "localhost.evil.example", 403},
		{def.ts, "127.0.0.1.evil.example", 403},
		{def.ts, "evil.example", 403},
		{def.ts, "::1", 403},
		{def.ts, "[127.0.0.1]", 403},
		{def.ts, "[::ffff:127.0.0.1]", 403},
		{def.ts, "127.1", 403},
		{def.ts, "", 403},

		{public, "localhost:8080", 200},
		{public, "127.0.0.1", 200},
		{public, "evil.example", 403},
		{public, "evil.example:8080", 403},
		{public, "localhost:8080.evil.example", 403},

		{allowed.ts, "mcp.example.com", 200},
		{allowed.ts, "MCP.example.com:443", 200},
		{allowed.ts, "api.example.com:8443", 200},
		{allowed.ts, "[2001:db8::1]:443", 200},
		{allowed.ts, "localhost:1", 200},
		{allowed.ts, "mcp.example.com:443.evil.example", 403},
		{allowed.ts, "mcp.example.com:x", 403},
		{allowed.ts, "mcp.example.com:0", 403},
		{allowed.ts, "api.example.com", 403},
		{allowed.ts, "api.example.com:443", 403},
		{allowed.ts, "api.example.com:8443.evil.example", 403},
		{allowed.ts, "evil.example", 403},
	}
	for _, c := range cases {
		name := map[*httptest.Server]string{def.ts: "default", allowed.ts: "allowed", public: "public"}[c.ts]
		if got := rawStatus(t, c.ts, c.host); got != c.want {
			t.Errorf("%s: Host %q: status %d, want %d", name, c.host, got, c.want)
		}
	}
}
