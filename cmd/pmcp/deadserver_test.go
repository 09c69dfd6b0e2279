package main

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
)

// TestCallServerDiesMidCall: `pmcp call` against a legacy HTTP server
// that dies during the call fails at the first refused reconnection (one
// retry delay, 1 s), naming the URL, not after MaxReconnects attempts.
func TestCallServerDiesMidCall(t *testing.T) {
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "dying", Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{}, 1)
	if err := pmcp.AddTool(srv, &pmcp.Tool{Name: "hang"}, func(ctx context.Context, _ *pmcp.RequestHandlerExtra, _ struct{}) (string, error) {
		started <- struct{}{}
		<-ctx.Done()
		return "", ctx.Err()
	}); err != nil {
		t.Fatal(err)
	}
	h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{})
	defer h.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// The server dies once the call's reply stream has begun (its
	// priming event flushed): a legacy POST may hold that event back a
	// few ms, and a server dying before it is another case (the POST
	// itself fails).
	streaming := make(chan struct{})
	var once sync.Once
	kill := serveOn(t, ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&flushSignal{ResponseWriter: w, flushed: func() {
			if strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") && r.Method == http.MethodPost {
				once.Do(func() { close(streaming) })
			}
		}}, r)
	}))
	url := "http://" + ln.Addr().String() + "/mcp"

	cmd := hostCmd("call", "hang", "--era", "legacy", "--url", url)
	go func() {
		<-started
		<-streaming
		kill() // the server dies mid-call
	}()
	began := time.Now()
	code, _, errs := runHost(t, cmd)
	if took := time.Since(began); took > 4*time.Second {
		t.Errorf("took %v", took)
	}
	if code != exitConn || !strings.Contains(errs, url) || !strings.Contains(errs, "connection refused") || strings.Contains(errs, "closed response body") {
		t.Errorf("exit %d: %s", code, errs)
	}
	oneLine(t, "dead server", errs)
}

// flushSignal calls flushed after each flush of the response it wraps.
type flushSignal struct {
	http.ResponseWriter
	flushed func()
}

func (f *flushSignal) Flush() {
	if fl, ok := f.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
	f.flushed()
}

func (f *flushSignal) Unwrap() http.ResponseWriter { return f.ResponseWriter }
