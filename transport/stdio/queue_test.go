package stdio

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// note is a notification whose line is exactly n bytes with its newline.
func note(i, n int) *jsonrpc.Request {
	head := fmt.Sprintf(`{"jsonrpc":"2.0","method":"n","params":{"i":%d,"p":"`, i)
	return &jsonrpc.Request{Method: "n", Params: []byte(fmt.Sprintf(`{"i":%d,"p":"%s"}`, i, strings.Repeat("p", n-len(head)-4)))}
}

// returnsWithin runs f and fails the test unless it returns within d.
func returnsWithin(t *testing.T, d time.Duration, what string, f func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(d):
		t.Fatalf("%s did not return while a write was blocked: it waits for its line to be written", what)
	}
}

// TestNotificationsQueue: while a write is blocked, notifications return
// as soon as their lines are queued, up to NotificationQueueBytes; the
// one over the bound waits. Every line goes out, in order, and a response
// written after them returns once they all were written.
func TestNotificationsQueue(t *testing.T) {
	w := &gateWriter{entered: make(chan struct{}), release: make(chan struct{})}
	const lineBytes, queued = 100, 4
	s := NewStream(strings.NewReader(""), w, Options{NotificationQueueBytes: queued * lineBytes})
	ctx := context.Background()
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := s.Write(ctx, &jsonrpc.Response{ID: jsonrpc.Int64ID(0), Result: []byte(`{}`)}); err != nil {
			t.Error(err)
		}
	})
	<-w.entered
	for i := range queued {
		returnsWithin(t, 10*time.Second, fmt.Sprintf("notification %d", i), func() error { return s.Write(ctx, note(i, lineBytes)) })
	}
	// The queue is full: the next notification waits for the write.
	wg.Go(func() {
		if err := s.Write(ctx, note(queued, lineBytes)); err != nil {
			t.Error(err)
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for blockedWriters() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d writers blocked in Write, want 2 (the first and the one over the bound)", blockedWriters())
		}
		runtime.Gosched()
	}
	close(w.release)
	wg.Wait()
	if err := s.Write(ctx, &jsonrpc.Response{ID: jsonrpc.Int64ID(1), Result: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	out := strings.Join(w.calls, "")
	w.mu.Unlock()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != queued+3 {
		t.Fatalf("%d lines written, want %d:\n%s", len(lines), queued+3, out)
	}
	for i := range queued + 1 {
		if l := lines[i+1]; len(l)+1 != lineBytes || !strings.Contains(l, fmt.Sprintf(`"i":%d,`, i)) {
			t.Fatalf("line %d = %q, want notification %d of %d bytes", i+1, l, i, lineBytes)
		}
	}
	if !strings.Contains(lines[queued+2], `"id":1`) {
		t.Fatalf("last line %q, want the response", lines[queued+2])
	}
}

// TestQueuedNotificationErrorIsSticky: a queued notification whose write
// fails does not report it, the next Write does, and so do all later.
func TestQueuedNotificationErrorIsSticky(t *testing.T) {
	w := &failWriter{}
	s := NewStream(strings.NewReader(""), w, Options{})
	ctx := context.Background()
	if err := s.Write(ctx, &jsonrpc.Request{Method: "m"}); err != nil {
		t.Fatalf("queued notification: %v", err)
	}
	err1 := s.Write(ctx, &jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "m"})
	err2 := s.Write(ctx, &jsonrpc.Request{Method: "m"})
	if err1 == nil || err2 != err1 || w.n != 1 {
		t.Fatalf("errors %v, %v after %d write calls", err1, err2, w.n)
	}
}

// TestNotificationQueueOff: with a negative NotificationQueueBytes a
// notification waits for its write and reports its failure.
func TestNotificationQueueOff(t *testing.T) {
	w := &failWriter{}
	s := NewStream(strings.NewReader(""), w, Options{NotificationQueueBytes: -1})
	if err := s.Write(context.Background(), &jsonrpc.Request{Method: "m"}); err == nil || w.n != 1 {
		t.Fatalf("notification without a queue: %v after %d write calls", err, w.n)
	}
}
