package pmcp

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// detachEnv serves srv with DetachListenStreams behind a middleware that
// sets a response header, on a real loopback listener.
func detachEnv(t *testing.T, srv *Server, opts StreamableHTTPOptions) (*StreamableHTTPHandler, string) {
	t.Helper()
	opts.DetachListenStreams = true
	h := NewStreamableHTTPHandler(srv, opts)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Test", "from middleware")
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		h.Close()
		ts.Close()
	})
	return h, ts.Listener.Addr().String()
}

// rawListen opens a listen stream on its own connection, without an HTTP
// client (so the test's own goroutines and buffers stay out of the
// figures), and returns the connection and a reader positioned after the
// headers.
func rawListen(t *testing.T, addr, id string, notifications string) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"jsonrpc":"2.0","id":` + id + `,"method":"subscriptions/listen","params":{"notifications":` + notifications + `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}}`
	req := "POST / HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReaderSize(c, 256)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	return c, br, resp
}

// sseData reads the next SSE event and returns its data ("" for a comment).
func sseData(t *testing.T, br *bufio.Reader) (data string, comment bool) {
	t.Helper()
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "":
			if data != "" || comment {
				return data, comment
			}
		case strings.HasPrefix(line, ":"):
			comment = true
		case strings.HasPrefix(line, "data: "):
			data = line[len("data: "):]
		}
	}
}

// TestHTTPDetachedListen: a detached listen stream has its headers (the
// middleware's included), its acknowledgement, its list changes and
// resource updates (tagged with the subscription id) and keep-alives,
// while the server holds no goroutine for it; a client that leaves is
// noticed on the next write.
func TestHTTPDetachedListen(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	h, addr := detachEnv(t, srv, StreamableHTTPOptions{KeepAliveInterval: 20 * time.Millisecond})
	base := srv.listeners.len()
	runtime.GC()
	g0 := runtime.NumGoroutine()
	const n = 20
	type stream struct {
		c  net.Conn
		br *bufio.Reader
	}
	var ss []stream
	for i := range n {
		c, br, resp := rawListen(t, addr, strconv.Itoa(100+i), `{"toolsListChanged":true,"resourceSubscriptions":["test://r"]}`)
		defer c.Close()
		if hd := resp.Header; hd.Get("Content-Type") != "text/event-stream" || hd.Get("X-Test") != "from middleware" || !resp.Close {
			t.Fatalf("headers %v (Connection: close %v)", hd, resp.Close)
		}
		ack, _ := sseData(t, br)
		want := `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true,"resourceSubscriptions":["test://r"]},"_meta":{"io.modelcontextprotocol/subscriptionId":` + strconv.Itoa(100+i) + `}}}`
		if ack != want {
			t.Fatalf("ack\n got %s\nwant %s", ack, want)
		}
		ss = append(ss, stream{c, br})
	}
	// The request goroutines return: no goroutine per stream.
	deadline := time.Now().Add(10 * time.Second)
	for h.Stats().InFlight != 0 || runtime.NumGoroutine() >= g0+n/2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines for %d detached streams (%d before), %d requests in flight", runtime.NumGoroutine(), n, g0, h.Stats().InFlight)
		}
		time.Sleep(time.Millisecond)
	}
	if got := h.Stats().ListenStreams; got != n {
		t.Fatalf("ListenStreams = %d, want %d", got, n)
	}
	srv.notifyListChanged(listTools)
	srv.NotifyResourceUpdated("test://r")
	for i, s := range ss {
		id := strconv.Itoa(100 + i)
		var got []string
		for len(got) < 2 {
			d, _ := sseData(t, s.br)
			if d != "" {
				got = append(got, d)
			}
		}
		want := []string{
			`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":` + id + `}}}`,
			`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"test://r","_meta":{"io.modelcontextprotocol/subscriptionId":` + id + `}}}`,
		}
		if got[0] != want[0] || got[1] != want[1] {
			t.Fatalf("stream %d:\n got %q\nwant %q", i, got, want)
		}
	}
	if _, comment := sseData(t, ss[0].br); !comment {
		t.Fatal("want a keep-alive comment")
	}
	// Every client leaves; the keep-alives find out.
	for _, s := range ss {
		s.c.Close()
	}
	for h.Stats().ListenStreams != 0 || srv.listeners.len() != base {
		if time.Now().After(deadline) {
			t.Fatalf("after the clients left: %d listen streams, %d listeners (want %d)", h.Stats().ListenStreams, srv.listeners.len(), base)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestHTTPDetachedListenHeap: a detached listen stream keeps at most
// 4 KiB of heap (its socket, its listener and filter, its entry in the
// pool), not a goroutine and net/http's buffers.
func TestHTTPDetachedListenHeap(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	h, addr := detachEnv(t, srv, StreamableHTTPOptions{KeepAliveInterval: -1, MaxListenStreams: -1})
	warm, _, _ := rawListen(t, addr, "0", `{"toolsListChanged":true}`)
	defer warm.Close()
	const n = 300
	before := liveHeap()
	conns := make([]net.Conn, 0, n)
	for i := range n {
		c, br, _ := rawListen(t, addr, strconv.Itoa(i+1), `{"toolsListChanged":true}`)
		if d, _ := sseData(t, br); !strings.Contains(d, "acknowledged") {
			t.Fatalf("first frame %q", d)
		}
		conns = append(conns, c)
	}
	// Let the request goroutines finish returning.
	deadline := time.Now().Add(10 * time.Second)
	for h.Stats().InFlight != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests still in flight", h.Stats().InFlight)
		}
		time.Sleep(time.Millisecond)
	}
	per := heapGrowth(before, liveHeap()) / n
	t.Logf("heap per detached listen stream, client socket included: %d bytes", per)
	if per > 4<<10 {
		t.Fatalf("a detached listen stream keeps %d bytes of heap, want at most 4 KiB", per)
	}
	for _, c := range conns {
		c.Close()
	}
}

// TestHTTPDetachedListenEndsOnClose: Close ends detached streams (the
// client sees the end of the body) and stops the writers (goleak).
func TestHTTPDetachedListenEndsOnClose(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	h, addr := detachEnv(t, srv, StreamableHTTPOptions{})
	c, br, _ := rawListen(t, addr, `"s"`, `{"toolsListChanged":true}`)
	defer c.Close()
	if d, _ := sseData(t, br); !strings.Contains(d, `/subscriptionId":"s"`) {
		t.Fatalf("first frame %q", d)
	}
	h.Close()
	if _, err := br.ReadString('\n'); !errors.Is(err, io.EOF) {
		t.Fatalf("after Close: %v, want EOF", err)
	}
	if n := h.Stats().ListenStreams; n != 0 {
		t.Fatalf("ListenStreams = %d after Close", n)
	}
}

// flushOnly hides every optional interface of a ResponseWriter but Flush,
// as some middleware wrappers do.
type flushOnly struct{ http.ResponseWriter }

func (f flushOnly) Flush() { f.ResponseWriter.(http.Flusher).Flush() }

// TestHTTPDetachedListenFallback: when the ResponseWriter cannot be
// hijacked the stream is served in the request's goroutine as usual.
func TestHTTPDetachedListenFallback(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	h := NewStreamableHTTPHandler(srv, StreamableHTTPOptions{DetachListenStreams: true})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(flushOnly{w}, r)
	}))
	t.Cleanup(func() {
		h.Close()
		ts.Close()
	})
	c, br, resp := rawListen(t, ts.Listener.Addr().String(), "1", `{"toolsListChanged":true}`)
	defer c.Close()
	if resp.Close || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("not the usual stream: Connection: close %v, headers %v", resp.Close, resp.Header)
	}
	br = bufio.NewReader(resp.Body) // chunked
	if d, _ := sseData(t, br); !strings.Contains(d, "acknowledged") {
		t.Fatalf("first frame %q", d)
	}
	if n := h.Stats().InFlight; n != 1 {
		t.Fatalf("InFlight = %d, want the listen request still being served", n)
	}
	srv.notifyListChanged(listTools)
	if d, _ := sseData(t, br); !strings.Contains(d, NotificationToolsListChanged) {
		t.Fatalf("want the list change, got %q", d)
	}
}

// TestHTTPDetachedListenStalledClient: a client that stops reading is
// cut off once a write outlasts StreamWriteTimeout, so it cannot hold a
// shared writer for ever.
func TestHTTPDetachedListenStalledClient(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	h, addr := detachEnv(t, srv, StreamableHTTPOptions{KeepAliveInterval: -1, StreamWriteTimeout: 100 * time.Millisecond})
	stallListen(t, srv, h, addr)
}

// TestHTTPListenStalledClient: the same on the usual path (the SSE
// writer moves its deadline only when half of it is used).
func TestHTTPListenStalledClient(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, &StreamableHTTPOptions{KeepAliveInterval: -1, StreamWriteTimeout: 100 * time.Millisecond})
	stallListen(t, srv, e.h, e.ts.Listener.Addr().String())
}

// stallListen opens a listen stream on 60 URIs of 1,000 bytes, never
// reads it, and sends updates until the server gives the stream up.
func stallListen(t *testing.T, srv *Server, h *StreamableHTTPHandler, addr string) {
	uris := listenURIs(60, 1000)
	var list strings.Builder
	for i, u := range uris {
		if i > 0 {
			list.WriteByte(',')
		}
		list.WriteString(`"` + u + `"`)
	}
	c, _, _ := rawListen(t, addr, "1", `{"resourceSubscriptions":[`+list.String()+`]}`)
	defer c.Close() // never read again
	deadline := time.Now().Add(30 * time.Second)
	for h.Stats().ListenStreams != 0 || h.Stats().InFlight != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the stalled stream is still open (%d listen streams)", h.Stats().ListenStreams)
		}
		for _, u := range uris {
			srv.NotifyResourceUpdated(u)
		}
		time.Sleep(time.Millisecond)
	}
}
