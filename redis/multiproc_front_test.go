package redis

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// lateBodyCheck is a request body whose reads, once its declared length
// has been read, wait for release: the transport's last read of a request
// body, which checks that it ended, then comes as late as under a heavy
// load. done receives that read's error.
type lateBodyCheck struct {
	io.ReadCloser
	left    int64
	ctx     context.Context
	release <-chan struct{}
	done    chan<- error
}

func (b *lateBodyCheck) Read(p []byte) (int, error) {
	if b.left > 0 {
		n, err := b.ReadCloser.Read(p)
		b.left -= int64(n)
		return n, err
	}
	select {
	case <-b.release:
	case <-b.ctx.Done():
	}
	n, err := b.ReadCloser.Read(p)
	select {
	case b.done <- err:
	default:
	}
	return n, err
}

// TestFrontProxyReplyBeforeBodyCheck: the multi-process test's front
// proxy must deliver a reply whose headers arrive before its transport
// has made its last read of the request body. That read comes after the
// body was sent, so under load a replica can answer first: the proxy
// then writes the reply's headers, and the flake of
// LegacySessionAcrossReplicas ("the HTTP response stream ended before the
// response") was the proxy cutting the reply off at that point. Here the
// last read is held until the client has the headers, and the backend
// sends the body once that read is over.
func TestFrontProxyReplyBeforeBodyCheck(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	const reply = "id: 1-0\nretry: 1000\ndata: \n\nid: 1-1\nevent: message\ndata: {}\n\n"
	gotHeaders := make(chan struct{})
	checked := make(chan error, 1)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_ = http.NewResponseController(w).Flush()
		select {
		case err := <-checked:
			if err != nil && !errors.Is(err, io.EOF) {
				// The proxy dropped this connection: wait until it is
				// gone before answering on it.
				select {
				case <-r.Context().Done():
				case <-ctx.Done():
				}
			}
		case <-ctx.Done():
		}
		_, _ = io.WriteString(w, reply)
	}))
	defer backend.Close()
	rep := &replicaProc{name: "b", addr: strings.TrimPrefix(backend.URL, "http://"), done: make(chan struct{})}
	p := newProxy(t, []*replicaProc{rep})
	const request = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	p.setOutBody(func(b io.ReadCloser) io.ReadCloser {
		return &lateBodyCheck{ReadCloser: b, left: int64(len(request)), ctx: ctx, release: gotHeaders, done: checked}
	})
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url(), strings.NewReader(request))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	close(gotHeaders)
	body, err := io.ReadAll(resp.Body)
	if err != nil || string(body) != reply {
		t.Fatalf("reply through the front proxy: %q, %v (want the backend's %d bytes)", body, err, len(reply))
	}
}
