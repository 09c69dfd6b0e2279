package pmcp

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
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

// TestHTTPQuickReplyIsJSON: a legacy request whose handler returns within
// the priming hold, having sent nothing, is answered with one JSON body
// even though its client accepts SSE, and nothing of it is stored for
// resumption (no event id of it was sent).
func TestHTTPQuickReplyIsJSON(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, nil)
	e.h.primingHold = time.Hour // the reply is always ready first
	sid := e.initSession(nil)
	resp := e.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
		hdr("Accept", acceptBoth, "Mcp-Session-Id", sid))
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		resp.Body.Close()
		t.Fatalf("Content-Type %q, want one JSON body", ct)
	}
	if got := resp.Header.Get("Mcp-Session-Id"); got != sid {
		t.Fatalf("Mcp-Session-Id %q, want %q", got, sid)
	}
	if res := readJSON(t, resp); res.Error != nil || textOf(t, res.Result) != "hi" {
		t.Fatalf("reply %+v", res)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rr, err := resumeGet(ctx, e, sid, "1-0") // the request's stream, from its start
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Body.Close()
	wantStatus(t, rr, http.StatusBadRequest)
}

// TestHTTPSSEOnlyClientGetsStream: a client that accepts SSE only gets an
// SSE stream even for a quick reply, priming event first.
func TestHTTPSSEOnlyClientGetsStream(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, nil)
	e.h.primingHold = time.Hour
	sid := e.initSession(nil)
	resp := e.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
		hdr("Accept", "text/event-stream", "Mcp-Session-Id", sid))
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q, want an SSE stream", ct)
	}
	b, _ := io.ReadAll(resp.Body)
	prime := strings.Index(string(b), "retry: 1000\ndata: \n\n")
	reply := strings.Index(string(b), `"text":"hi"`)
	if prime < 0 || reply < prime {
		t.Fatalf("body %q: want the priming event, then the reply", b)
	}
}

// TestHTTPFirstMessageStartsStream: a handler's first message for the
// client, before its result, makes the reply an SSE stream (priming event,
// the messages in order, the result), however quick the handler is; and
// what it sent can be replayed.
func TestHTTPFirstMessageStartsStream(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, &StreamableHTTPOptions{KeepAliveInterval: -1})
	e.h.primingHold = time.Hour
	sid := e.initSession(nil)
	resp := e.post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"progress","_meta":{"progressToken":"tok"}}}`,
		hdr("Accept", acceptBoth, "Mcp-Session-Id", sid))
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q, want an SSE stream", ct)
	}
	rd := newSSEReader(t, resp.Body)
	var ids, methods []string
	for {
		ev, ok := rd.next()
		if !ok {
			break
		}
		ids = append(ids, ev.id)
		if ev.data == "" {
			methods = append(methods, "priming")
			continue
		}
		r := decodeReply(t, []byte(ev.data))
		if r.Method != "" {
			methods = append(methods, r.Method)
		} else {
			methods = append(methods, "result:"+textOf(t, r.Result))
		}
	}
	want := []string{"priming", "notifications/progress", "notifications/progress", "notifications/progress", "result:done"}
	if !slices.Equal(methods, want) {
		t.Fatalf("events %v (ids %v), want %v", methods, ids, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rr, err := resumeGet(ctx, e, sid, ids[1]) // after the first progress
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Body.Close()
	wantStatus(t, rr, http.StatusOK)
	n := 0
	for rd := newSSEReader(t, rr.Body); ; {
		ev, ok := rd.next()
		if !ok {
			break
		}
		if ev.data != "" {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("replayed %d messages after %s, want 3 (two progress, the result)", n, ids[1])
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

// TestHTTPTakeOverUndecidedReply: a GET resuming a request's stream while
// its reply is still undecided takes the stream over: the POST's response
// becomes a stream that ends after its priming event, and the result
// reaches the GET.
func TestHTTPTakeOverUndecidedReply(t *testing.T) {
	srv, tt := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, &StreamableHTTPOptions{KeepAliveInterval: -1})
	e.h.primingHold = time.Hour
	sid := e.initSession(nil)
	type posted struct {
		ct   string
		body string
	}
	done := make(chan posted, 1)
	go func() {
		resp := e.post(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{}}}`,
			hdr("Accept", acceptBoth, "Mcp-Session-Id", sid))
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		done <- posted{resp.Header.Get("Content-Type"), string(b)}
	}()
	<-tt.started
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	get, err := resumeGet(ctx, e, sid, "1-0")
	if err != nil {
		t.Fatal(err)
	}
	defer get.Body.Close()
	wantStatus(t, get, http.StatusOK)
	p := <-done
	if p.ct != "text/event-stream" || !strings.Contains(p.body, "retry: 1000\ndata: \n\n") || strings.Contains(p.body, `"result"`) {
		t.Fatalf("POST response %q %q: want a stream ending after its priming event", p.ct, p.body)
	}
	close(tt.release)
	rd := newSSEReader(t, get.Body)
	m, _, ok := rd.nextMessage()
	if !ok || string(m.ID) != "7" || textOf(t, m.Result) != "released" {
		t.Fatalf("want the result on the GET, got %+v", m)
	}
}
