//go:build unix

package command

import (
	"io"
	"os"
	"testing"
	"time"
)

// startGroup starts the "group" helper, whose own child holds the write
// end of a pipe: the returned channel is closed when every holder (the
// grandchild included) has died.
func startGroup(t *testing.T, opts Options) (*Transport, <-chan struct{}) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := helperCmd("group")
	cmd.ExtraFiles = []*os.File{w}
	tr, err := New(cmd, opts)
	if err != nil {
		t.Fatal(err)
	}
	st, err := tr.Start()
	w.Close()
	if err != nil {
		r.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	waitReady(t, st)
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		_, _ = io.Copy(io.Discard, r) // EOF once the last holder died
		r.Close()
	}()
	return tr, gone
}

// TestCloseEndsProcessGroup: the child runs in a process group of its own
// and Close's signals reach all of it, so a grandchild the server spawned
// (sh -c, npx, uv run) does not outlive it.
func TestCloseEndsProcessGroup(t *testing.T) {
	tr, gone := startGroup(t, Options{WaitDelay: 50 * time.Millisecond})
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the server's own child survived Close")
	}
}

// TestKillEndsProcessGroupAtOnce: Kill skips the polite steps (the child
// ignores stdin's EOF; Close would wait a minute before SIGTERM) and ends
// the whole group.
func TestKillEndsProcessGroupAtOnce(t *testing.T) {
	tr, gone := startGroup(t, Options{WaitDelay: time.Minute, TermDelay: time.Minute})
	killed := make(chan error, 1)
	go func() { killed <- tr.Kill() }()
	select {
	case err := <-killed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Kill did not return")
	}
	select {
	case <-tr.Done():
	default:
		t.Fatal("Kill returned before the process was reaped")
	}
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the server's own child survived Kill")
	}
	if err := tr.Close(); err != nil {
		t.Fatalf("Close after Kill: %v", err)
	}
}
