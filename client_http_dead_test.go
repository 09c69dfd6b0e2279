package pmcp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestClientHTTPServerDiesMidCall: a legacy server that dies while a call
// streams its reply refuses the reconnection; the call fails at the first
// refused attempt, with an error that names the endpoint, instead of
// retrying (and reading the closed body again) MaxReconnects times.
func TestClientHTTPServerDiesMidCall(t *testing.T) {
	srv, err := NewServer(ServerOptions{Name: "dying", Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := AddTool(srv, &Tool{Name: "hang"}, func(ctx context.Context, extra *RequestHandlerExtra, _ struct{}) (string, error) {
		// A progress notification starts the reply stream (the priming
		// event alone may be held back a few ms).
		if err := extra.ReportProgress(1, 2, "streaming"); err != nil {
			return "", err
		}
		<-ctx.Done()
		return "", ctx.Err()
	}); err != nil {
		t.Fatal(err)
	}
	h := NewStreamableHTTPHandler(srv, StreamableHTTPOptions{SSERetry: 50 * time.Millisecond})
	defer h.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h}
	served := make(chan struct{})
	go func() { defer close(served); _ = hs.Serve(ln) }()
	defer func() { _ = hs.Close(); <-served }()
	endpoint := "http://" + ln.Addr().String() + "/mcp"

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := NewClient(ClientOptions{Era: EraLegacy}).ConnectHTTP(ctx, endpoint, HTTPClientOptions{NoStandaloneStream: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	errc := make(chan error, 1)
	streaming := make(chan struct{}, 1)
	go func() {
		_, err := s.CallTool(ctx, "hang", nil, WithProgress(func(context.Context, *ProgressParams) {
			select {
			case streaming <- struct{}{}:
			default:
			}
		}))
		errc <- err
	}()
	select {
	case <-streaming: // the client reads the reply stream
	case err := <-errc:
		t.Fatalf("the call ended before its reply streamed: %v", err)
	}
	_ = hs.Close() // the server dies: its listener and connections close
	began := time.Now()
	err = <-errc
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("the call failed after %v", took)
	}
	if err == nil || !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), endpoint) || strings.Contains(err.Error(), "closed response body") {
		t.Fatalf("error: %v", err)
	}
}

// TestClientHTTPReplyCutBeforeFirstEvent: a legacy reply stream whose
// connection breaks after the headers, before any event (a front proxy
// that drops its connection to the server does that), cannot be resumed:
// the call fails with ErrHTTPStreamEnded and says why (the body was cut:
// io.ErrUnexpectedEOF), rather than reading like a stream the server
// ended.
func TestClientHTTPReplyCutBeforeFirstEvent(t *testing.T) {
	srv, err := NewServer(ServerOptions{Name: "cut", Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := AddTool(srv, &Tool{Name: "echo"}, func(context.Context, *RequestHandlerExtra, struct{}) (string, error) {
		return "ok", nil
	}); err != nil {
		t.Fatal(err)
	}
	h := NewStreamableHTTPHandler(srv, StreamableHTTPOptions{})
	defer h.Close()
	cut := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(body), `"tools/call"`) {
			r.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, r)
			return
		}
		// The reply's headers, then the connection drops: the chunked
		// body never ends.
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_ = http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler)
	})
	hs := httptest.NewServer(cut)
	defer hs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := NewClient(ClientOptions{Era: EraLegacy}).ConnectHTTP(ctx, hs.URL, HTTPClientOptions{NoStandaloneStream: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.CallTool(ctx, "echo", nil)
	if !errors.Is(err, ErrHTTPStreamEnded) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("error: %v (want ErrHTTPStreamEnded because of io.ErrUnexpectedEOF)", err)
	}
}
