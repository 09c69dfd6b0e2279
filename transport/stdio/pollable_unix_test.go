//go:build unix

package stdio

import (
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
