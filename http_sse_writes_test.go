package pmcp

import (
	"bytes"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp/internal/benchkit"
)

// flushWriter is a ResponseWriter that records what was flushed: the body
// length at each flush, and a signal per flush. It may be read while the
// handler writes.
type flushWriter struct {
	mu      sync.Mutex
	w       *benchkit.ResponseWriter
	flushes []int
	flushed chan struct{} // one value per flush, if there is room
}

func newFlushWriter() *flushWriter {
	return &flushWriter{w: benchkit.NewResponseWriter(), flushed: make(chan struct{}, 16)}
}

func (f *flushWriter) Header() http.Header { return f.w.Header() }

func (f *flushWriter) WriteHeader(code int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.w.WriteHeader(code)
}

func (f *flushWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.w.Write(p)
}

func (f *flushWriter) SetWriteDeadline(time.Time) error { return nil }

func (f *flushWriter) FlushError() error {
	f.mu.Lock()
	f.flushes = append(f.flushes, len(f.w.Body))
	f.mu.Unlock()
	select {
	case f.flushed <- struct{}{}:
	default:
	}
	return nil
}

// state returns the body so far and the flushes.
func (f *flushWriter) state() (body string, flushes []int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return string(f.w.Body), append([]int(nil), f.flushes...)
}

// TestHTTPQuickReplyOneWrite: a legacy SSE reply ready within the priming
// hold is written after its priming event and nothing is flushed before
// the handler returns, so net/http sends the priming event, the reply and
// the end of the body in one write (as a JSON reply), instead of three.
func TestHTTPQuickReplyOneWrite(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	h := NewStreamableHTTPHandler(srv, StreamableHTTPOptions{})
	defer h.Close()
	h.primingHold = time.Hour // the reply is always ready first
	init := newHTTPBench(t, h, benchInitialize, http.Header{})
	init.serve()
	sid := init.w.H.Get(headerSessionID)
	if init.w.Status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: status %d: %s", init.w.Status, init.w.Body)
	}
	hb := newHTTPBench(t, h, benchEchoLegacy, http.Header{
		"Mcp-Session-Id":       {sid},
		"Mcp-Protocol-Version": {Version20251125},
	})
	fw := newFlushWriter()
	hb.body.Reset(hb.data)
	hb.req.ContentLength = int64(len(hb.data))
	h.ServeHTTP(fw, hb.req)
	body, flushes := fw.state()
	if ct := fw.Header().Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q, want an SSE stream", ct)
	}
	prime := strings.Index(body, "retry: 1000\ndata: \n\n")
	reply := strings.Index(body, "data: "+benchEchoLegacyResult+"\n\n")
	if prime < 0 || reply < prime {
		t.Fatalf("body %q: want the priming event, then the reply", body)
	}
	if len(flushes) != 0 {
		t.Fatalf("flushed at body lengths %v of %d: want nothing flushed before the handler returns (one write)", flushes, len(body))
	}
}

// TestHTTPPrimingHeldThenSent: a handler still running when the priming
// hold ends gets its priming event flushed alone, and the reply later.
func TestHTTPPrimingHeldThenSent(t *testing.T) {
	srv, tt := newHTTPTestServer(t)
	h := NewStreamableHTTPHandler(srv, StreamableHTTPOptions{KeepAliveInterval: -1})
	defer h.Close()
	h.primingHold = time.Millisecond
	init := newHTTPBench(t, h, benchInitialize, http.Header{})
	init.serve()
	sid := init.w.H.Get(headerSessionID)
	hb := newHTTPBench(t, h, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{}}}`, http.Header{
		"Mcp-Session-Id":       {sid},
		"Mcp-Protocol-Version": {Version20251125},
	})
	fw := newFlushWriter()
	hb.body.Reset(hb.data)
	hb.req.ContentLength = int64(len(hb.data))
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(fw, hb.req)
	}()
	<-tt.started
	<-fw.flushed // the hold ended while the tool waits
	body, _ := fw.state()
	if !strings.Contains(body, "retry: 1000\ndata: \n\n") || strings.Contains(body, "event: message") {
		t.Fatalf("first flush %q: want the priming event alone", body)
	}
	close(tt.release)
	<-done
	body, _ = fw.state()
	if !bytes.Contains([]byte(body), []byte(`"id":7,"result"`)) || !strings.Contains(body, "released") {
		t.Fatalf("body %q: want the reply after the priming event", body)
	}
}
