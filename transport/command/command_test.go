package command

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// syncBuffer is a bytes.Buffer safe for the stderr copier and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func start(t *testing.T, mode string, opts Options) (*Transport, jsonrpc.Stream) {
	t.Helper()
	tr, err := New(helperCmd(mode), opts)
	if err != nil {
		t.Fatal(err)
	}
	st, err := tr.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr, st
}

// waitReady reads the helper's ready line.
func waitReady(t *testing.T, st jsonrpc.Stream) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := st.Read(ctx)
	if r, ok := m.(*jsonrpc.Request); err != nil || !ok || r.Method != "test/ready" {
		t.Fatalf("ready line: %v %v", m, err)
	}
}

func TestClientOverCommandBothEras(t *testing.T) {
	for _, era := range []pmcp.Era{pmcp.EraUnknown, pmcp.EraLegacy} {
		t.Run(era.String(), func(t *testing.T) {
			var stderr syncBuffer
			tr, st := start(t, "server", Options{Stderr: &stderr})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := pmcp.NewClient(pmcp.ClientOptions{Era: era}).Connect(ctx, st)
			if err != nil {
				t.Fatal(err)
			}
			want := pmcp.EraModern
			if era == pmcp.EraLegacy {
				want = pmcp.EraLegacy
			}
			if s.Era() != want || s.ServerInfo().Name != "command-helper" {
				t.Fatalf("era %v server %+v", s.Era(), s.ServerInfo())
			}
			out, _, err := pmcp.CallToolTyped[addOut](ctx, s, "add", addIn{A: 40, B: 2})
			if err != nil || out.Sum != 42 {
				t.Fatalf("add: %+v %v", out, err)
			}
			began := time.Now()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			// Closing stdin was enough: the server exited cleanly, well
			// before any escalation.
			if err := tr.Wait(); err != nil {
				t.Fatalf("exit: %v", err)
			}
			if d := time.Since(began); d > DefaultWaitDelay {
				t.Fatalf("shutdown took %v", d)
			}
			if !strings.Contains(stderr.String(), "helper: ready") {
				t.Fatalf("stderr %q", stderr.String())
			}
		})
	}
}

func TestServerDyingIsNoticed(t *testing.T) {
	tr, st := start(t, "server", Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := pmcp.NewClient(pmcp.ClientOptions{}).Connect(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CallTool(ctx, "crash", nil); !errors.Is(err, jsonrpc.ErrClosed) {
		t.Fatalf("call into a dying server: %v", err)
	}
	select {
	case <-s.Done():
	case <-ctx.Done():
		t.Fatal("session did not end with the process")
	}
	var ee *exec.ExitError
	if err := tr.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("exit: %v", err)
	}
}

func TestExitBeforeSpeaking(t *testing.T) {
	var stderr syncBuffer
	tr, st := start(t, "exit-early", Options{Stderr: &stderr})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := st.Read(ctx); !errors.Is(err, io.EOF) {
		t.Fatalf("read: %v", err)
	}
	var ee *exec.ExitError
	if err := tr.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("exit: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "giving up") {
		t.Fatalf("stderr %q", stderr.String())
	}
	// Connect against a server that is gone fails and leaves nothing behind.
	tr2, st2 := start(t, "exit-early", Options{})
	if _, err := pmcp.NewClient(pmcp.ClientOptions{}).Connect(ctx, st2); err == nil {
		t.Fatal("Connect succeeded")
	}
	<-tr2.Done()
}

func TestStderrIsDrained(t *testing.T) {
	for name, opts := range map[string]Options{
		"capped writer": {Stderr: &syncBuffer{}, MaxStderrBytes: 1000},
		"discarded":     {},
	} {
		t.Run(name, func(t *testing.T) {
			tr, st := start(t, "stderr-flood", opts)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			// The child writes 2 MiB to stderr before it serves: it would
			// block forever on an undrained pipe.
			s, err := pmcp.NewClient(pmcp.ClientOptions{}).Connect(ctx, st)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if err := tr.Wait(); err != nil {
				t.Fatal(err)
			}
			if b, ok := opts.Stderr.(*syncBuffer); ok {
				if got := b.String(); len(got) != 1000 || strings.Trim(got, "x") != "" {
					t.Fatalf("forwarded %d bytes", len(got))
				}
			}
		})
	}
}

func TestCloseEscalates(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM")
	}
	t.Run("SIGTERM", func(t *testing.T) {
		tr, st := start(t, "ignore-stdin", Options{WaitDelay: 100 * time.Millisecond, TermDelay: 30 * time.Second})
		waitReady(t, st)
		began := time.Now()
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(began); d > 10*time.Second {
			t.Fatalf("Close took %v", d)
		}
		var ee *exec.ExitError
		if err := tr.Wait(); !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
			t.Fatalf("exit: %v", err)
		}
	})
	t.Run("SIGKILL", func(t *testing.T) {
		tr, st := start(t, "ignore-term", Options{WaitDelay: 100 * time.Millisecond, TermDelay: 100 * time.Millisecond})
		waitReady(t, st)
		began := time.Now()
		if err := tr.Close(); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(began); d > 10*time.Second {
			t.Fatalf("Close took %v", d)
		}
		var ee *exec.ExitError
		if err := tr.Wait(); !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("exit: %v", err)
		}
		if err := st.Close(); err != nil { // idempotent
			t.Fatal(err)
		}
	})
}

func TestInheritedPipesDoNotHangClose(t *testing.T) {
	// The child exits at once but leaves a grandchild holding its stdout
	// and stderr for a second.
	tr, st := start(t, "grandchild", Options{Stderr: &syncBuffer{}, WaitDelay: 100 * time.Millisecond})
	<-tr.Done()
	began := time.Now()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Fatalf("Close took %v", d)
	}
}

func TestNewAndStartErrors(t *testing.T) {
	if _, err := New(nil, Options{}); err == nil {
		t.Error("nil Cmd accepted")
	}
	cmd := helperCmd("server")
	cmd.Stdout = io.Discard
	if _, err := New(cmd, Options{}); err == nil {
		t.Error("Cmd with Stdout accepted")
	}
	// A negative cap means what zero means (no cap), as for every option
	// the field gives no meaning of its own.
	if _, err := New(helperCmd("server"), Options{MaxStderrBytes: -1}); err != nil {
		t.Errorf("negative cap: %v", err)
	}

	tr, err := New(exec.Command("/nonexistent/pmcp-test-binary"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Start(); err == nil {
		t.Fatal("Start of a missing binary succeeded")
	}
	<-tr.Done()
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Start(); err == nil {
		t.Fatal("second Start succeeded")
	}

	unused, err := New(helperCmd("server"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unused.Close(); err != nil {
		t.Fatal(err)
	}
	if err := unused.Wait(); err == nil {
		t.Fatal("Wait without Start reported success")
	}
	if _, err := unused.Start(); err == nil {
		t.Fatal("Start after Close succeeded")
	}
}
