//go:build unix

package stdio

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A pipe becomes a file the runtime polls (a read deadline works on it, so
// a waiting read parks a goroutine, not a thread); a regular file, whose
// description other processes may share, is left as it is.
func TestPollable(t *testing.T) {
	// A pipe in blocking mode, as a child's inherited standard input is.
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		t.Fatal(err)
	}
	r, w := os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	defer w.Close()
	if err := r.SetReadDeadline(time.Time{}); err == nil {
		t.Fatal("a blocking pipe takes a deadline: the test proves nothing")
	}
	p := pollable(r)
	defer p.Close()
	if err := p.SetReadDeadline(time.Now().Add(time.Millisecond)); err != nil {
		t.Fatalf("pipe not pollable: %v", err)
	}
	if _, err := p.Read(make([]byte, 1)); !os.IsTimeout(err) {
		t.Fatalf("read on an empty pollable pipe: %v, want a timeout", err)
	}

	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := pollable(f); got != f {
		t.Fatal("a regular file was reopened")
	}
}

// A Read that finds only blank lines buffered still waits for more input
// with its deadline armed, so ctx ends it (the deadline is skipped only
// when a whole non-blank line is buffered).
func TestReadAfterBufferedBlankLinesHonoursCtx(t *testing.T) {
	r, w, err := os.Pipe() // polled: Read can be interrupted
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	s := NewStream(r, io.Discard, Options{})
	defer s.Close()
	if _, err := w.Write([]byte("{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n\n\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := s.Read(ctx)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Read = %v, want the ctx's deadline", err)
		}
	case <-time.After(10 * time.Second):
		w.Close() // unblock the read so the test ends
		<-done
		t.Fatal("Read ignored its ctx after buffered blank lines")
	}
}
