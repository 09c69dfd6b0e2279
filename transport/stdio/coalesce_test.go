package stdio

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// gateWriter records write calls; the first one blocks until release is
// closed, after closing entered.
type gateWriter struct {
	entered, release chan struct{}
	once             sync.Once
	mu               sync.Mutex
	calls            []string
}

func (w *gateWriter) Write(p []byte) (int, error) {
	w.once.Do(func() {
		close(w.entered)
		<-w.release
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, string(p))
	return len(p), nil
}

// blockedWriters counts the goroutines blocked inside Stream.Write.
func blockedWriters() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		header, _, _ := strings.Cut(g, "\n")
		if strings.Contains(g, "stdio.(*Stream).Write(") &&
			(strings.Contains(header, "[chan receive") || strings.Contains(header, "[sync.Mutex.Lock")) {
			n++
		}
	}
	return n
}

// While one line is being written, the lines of the other writers that
// are ready are collected and go out together in the next write call, as
// a pipelined burst of responses should (one write, not one per line).
func TestWritesCoalesceWhileOneIsUnderWay(t *testing.T) {
	w := &gateWriter{entered: make(chan struct{}), release: make(chan struct{})}
	s := NewStream(strings.NewReader(""), w, Options{})
	ctx := context.Background()
	write := func(id int64) error {
		return s.Write(ctx, &jsonrpc.Response{ID: jsonrpc.Int64ID(id), Result: []byte(`{}`)})
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := write(0); err != nil {
			t.Error(err)
		}
	})
	<-w.entered
	const n = 32
	for i := range n {
		wg.Go(func() {
			if err := write(int64(i + 1)); err != nil {
				t.Error(err)
			}
		})
	}
	// Wait until the first writer and all n others are parked in Write.
	deadline := time.Now().Add(10 * time.Second)
	for blockedWriters() < n+1 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d writers blocked in Write", blockedWriters())
		}
		runtime.Gosched()
	}
	close(w.release)
	wg.Wait()
	if len(w.calls) != 2 {
		t.Fatalf("%d write calls for %d lines, want 2 (the first line, then the other %d together)", len(w.calls), n+1, n)
	}
	if got := strings.Count(w.calls[1], "\n"); got != n {
		t.Fatalf("second write call holds %d lines, want %d", got, n)
	}
}
