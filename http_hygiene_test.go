package pmcp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// HTTP/1.1 hygiene of the Streamable HTTP handler, tested on raw
// connections to a real server: what matters is what happens to the
// connection, which a ResponseRecorder cannot show.

// dialRaw opens a TCP connection to ts, closed when the test ends.
func dialRaw(t *testing.T, ts *httptest.Server) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// waitServerClose reads conn until the server closes it, within bound. It
// returns what was read; a reset counts as closed, a timeout fails the
// test.
func waitServerClose(t *testing.T, conn net.Conn, bound time.Duration) []byte {
	t.Helper()
	start := time.Now()
	_ = conn.SetReadDeadline(start.Add(bound))
	b, err := io.ReadAll(conn)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the server kept the connection open for %v (read %d bytes: %.80q)", time.Since(start).Round(time.Millisecond), len(b), b)
	}
	return b
}

// rawModernRequest is a modern server/discover POST with the given extra
// header lines ("K: v\r\n" each) and body framing lines.
func rawModernHead(host, extra string) string {
	return "POST / HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\nAccept: application/json\r\n" +
		"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: server/discover\r\n" + extra
}

// TestHTTPSlowBodyClosesConnection: a body that stalls or trickles is cut
// at BodyReadTimeout and its connection closed, whatever its size and
// framing; nothing drains the rest without a deadline.
func TestHTTPSlowBodyClosesConnection(t *testing.T) {
	const timeout = 200 * time.Millisecond
	srv, _ := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, &StreamableHTTPOptions{BodyReadTimeout: timeout})
	sizes := []struct {
		name string
		n    int
	}{{"tiny", 16}, {"1KiB", 1 << 10}, {"100KiB", 100 << 10}, {"near-limit", DefaultMaxBodyBytes - 64}}
	for _, sz := range sizes {
		for _, framing := range []string{"content-length", "chunked"} {
			for _, pace := range []string{"stalled", "trickle"} {
				t.Run(sz.name+"/"+framing+"/"+pace, func(t *testing.T) {
					t.Parallel()
					conn := dialRaw(t, e.ts)
					head := rawModernHead("127.0.0.1", "")
					if framing == "chunked" {
						head += fmt.Sprintf("Transfer-Encoding: chunked\r\n\r\n%x\r\n", sz.n)
					} else {
						head += fmt.Sprintf("Content-Length: %d\r\n\r\n", sz.n)
					}
					if _, err := io.WriteString(conn, head+"{"); err != nil {
						t.Fatal(err)
					}
					if pace == "trickle" {
						// One byte every 20 ms: progress never extends the
						// deadline.
						done := make(chan struct{})
						var wg sync.WaitGroup
						wg.Add(1)
						go func() {
							defer wg.Done()
							tick := time.NewTicker(20 * time.Millisecond)
							defer tick.Stop()
							for {
								select {
								case <-done:
									return
								case <-tick.C:
									if _, err := conn.Write([]byte(" ")); err != nil {
										return
									}
								}
							}
						}()
						defer func() { close(done); wg.Wait() }()
					}
					waitServerClose(t, conn, timeout+3*time.Second)
				})
			}
		}
	}
}

// TestHTTPSlowBodyRefusedRequest: the body of a request refused before
// its body is read is not drained without a deadline either.
func TestHTTPSlowBodyRefusedRequest(t *testing.T) {
	const timeout = 200 * time.Millisecond
	srv, _ := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, &StreamableHTTPOptions{BodyReadTimeout: timeout})
	for _, c := range []struct{ name, host, extra string }{ // extra: header lines
		{"content type", "127.0.0.1", ""},
		{"host", "evil.example", ""},
		{"method", "127.0.0.1", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			conn := dialRaw(t, e.ts)
			head := rawModernHead(c.host, c.extra+"Content-Length: 1024\r\n\r\n{")
			switch c.name {
			case "method":
				head = "PUT" + strings.TrimPrefix(head, "POST")
			case "content type":
				head = strings.Replace(head, "application/json", "text/plain", 1)
			}
			if _, err := io.WriteString(conn, head); err != nil {
				t.Fatal(err)
			}
			got := waitServerClose(t, conn, timeout+3*time.Second)
			if !strings.HasPrefix(string(got), "HTTP/1.1 4") {
				t.Fatalf("%.60q", got)
			}
		})
	}
}

// TestHTTPSlowBodyShutdown: a stalled body does not make a graceful
// shutdown wait out its grace period.
func TestHTTPSlowBodyShutdown(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	h := NewStreamableHTTPHandler(srv, StreamableHTTPOptions{BodyReadTimeout: 200 * time.Millisecond})
	defer h.Close()
	ts := httptest.NewUnstartedServer(h)
	active := make(chan struct{}, 1)
	ts.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateActive {
			select {
			case active <- struct{}{}:
			default:
			}
		}
	}
	ts.Start()
	defer ts.Close()
	conn := dialRaw(t, ts)
	defer conn.Close() // before ts.Close, which waits for the connection
	if _, err := io.WriteString(conn, rawModernHead("127.0.0.1", "Content-Length: 1024\r\n\r\n{")); err != nil {
		t.Fatal(err)
	}
	<-active // the server is reading the request
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	if err := ts.Config.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v after %v", err, time.Since(start).Round(time.Millisecond))
	}
}

// TestHTTPSmuggledRequestNotServed: a request with both Content-Length
// and Transfer-Encoding: chunked is answered, and its connection closed,
// so that bytes a front end counted in its body are never served as a
// second request (RFC 9112 §6.1).
func TestHTTPSmuggledRequestNotServed(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	var smuggled atomic.Int32
	if err := AddTool(srv, &Tool{Name: "mark", Description: "counts its calls"}, func(context.Context, *RequestHandlerExtra, struct{}) (string, error) {
		smuggled.Add(1)
		return "ran", nil
	}); err != nil {
		t.Fatal(err)
	}
	e := newHTTPEnv(t, srv, nil)
	second := modernBody(2, MethodToolsCall, map[string]any{"name": "mark"}, nil)
	secondReq := "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json\r\n" +
		"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: mark\r\n" +
		fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(second), second)
	first := modernBody(1, MethodDiscover, nil, nil)
	body := fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(first), first) + secondReq

	t.Run("content-length and chunked", func(t *testing.T) {
		conn := dialRaw(t, e.ts)
		req := rawModernHead("127.0.0.1", fmt.Sprintf("Content-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n", len(body))) + body
		if _, err := io.WriteString(conn, req); err != nil {
			t.Fatal(err)
		}
		got := waitServerClose(t, conn, 3*time.Second)
		if n := strings.Count(string(got), "HTTP/1.1 "); n != 1 || !strings.HasPrefix(string(got), "HTTP/1.1 200 ") {
			t.Fatalf("%d responses, want 1 (200):\n%s", n, got)
		}
		if smuggled.Load() != 0 {
			t.Fatal("the smuggled request ran")
		}
	})
	t.Run("content-length requests keep the connection", func(t *testing.T) {
		// Plain Content-Length requests are still pipelined on one
		// connection: the close is for chunked bodies only.
		conn := dialRaw(t, e.ts)
		req := rawModernHead("127.0.0.1", fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(first), first))
		if _, err := io.WriteString(conn, req+req); err != nil {
			t.Fatal(err)
		}
		rd := bufio.NewReader(conn)
		_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
		for i := 0; i < 2; i++ {
			resp, err := http.ReadResponse(rd, nil)
			if err != nil {
				t.Fatalf("response %d: %v", i+1, err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || resp.Close {
				t.Fatalf("response %d: %d, close %v", i+1, resp.StatusCode, resp.Close)
			}
		}
	})
}
