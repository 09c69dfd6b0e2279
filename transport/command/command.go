// Package command runs an MCP server as a child process and talks to it
// over the stdio transport: newline-delimited JSON on the child's standard
// input and output.
//
// The caller builds and owns the *exec.Cmd (path, arguments, environment,
// working directory, SysProcAttr); this package wires its standard streams
// and supervises it:
//
//   - stdin and stdout are OS pipes owned by the Transport, read and
//     written through transport/stdio (with its line cap, see
//     Options.Stdio);
//   - stderr is always drained, never a pipe nobody reads: forwarded to
//     Options.Stderr, or connected to the null device when that is nil;
//   - Close shuts the child down the way the MCP stdio transport
//     prescribes: close its stdin, wait up to Options.WaitDelay, send
//     SIGTERM, wait up to Options.TermDelay, then SIGKILL. It returns once
//     the child has been reaped and leaves no goroutine behind. On Unix
//     the child runs in a process group of its own (unless Cmd.SysProcAttr
//     says otherwise) and the signals go to the whole group, so what the
//     server spawned (sh -c, npx, uv run) ends with it; whatever is left
//     of the group once the child has been reaped is killed;
//   - Kill skips the polite steps: SIGKILL at once (for a caller whose
//     deadline has passed).
//
// Typical use, with the client of package pmcp:
//
//	t, err := command.New(exec.Command("my-mcp-server", "--stdio"), command.Options{Stderr: os.Stderr})
//	if err != nil { ... }
//	st, err := t.Start()
//	if err != nil { ... }
//	session, err := pmcp.NewClient(pmcp.ClientOptions{}).Connect(ctx, st)
//	if err != nil { ... } // the process has been shut down already
//	defer session.Close() // closes the stream, which shuts the process down
//
// Transport.Done and Transport.Wait report the process's exit, so a client
// can notice a server that dies on its own.
package command

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/gopmcp/pmcp/jsonrpc"
	"github.com/gopmcp/pmcp/transport/stdio"
)

// Defaults of Options.
const (
	// DefaultWaitDelay is how long Close waits for the process to exit on
	// its own after its stdin was closed.
	DefaultWaitDelay = 5 * time.Second
	// DefaultTermDelay is how long Close waits after SIGTERM before
	// sending SIGKILL.
	DefaultTermDelay = 2 * time.Second
	// killWait bounds the wait after SIGKILL (the process cannot survive
	// it; this only guards against a wedged kernel or Wait).
	killWait = 10 * time.Second
)

// ErrStillRunning is returned by Close when the process survived SIGKILL
// for longer than the package is willing to wait.
var ErrStillRunning = errors.New("command: the process did not exit after SIGKILL")

// errNeverStarted is what Wait returns after Close without Start.
var errNeverStarted = errors.New("command: the process was never started")

// Options configures a Transport. The zero value is ready to use.
type Options struct {
	// Stderr receives the child's standard error. Nil discards it: the
	// child's stderr is then the null device. Writes to Stderr should not
	// block for long (a writer that blocks forever would keep the child
	// from exiting cleanly); write errors are ignored and the rest of the
	// output is discarded, so the child never blocks on a full pipe.
	Stderr io.Writer
	// MaxStderrBytes caps how many bytes of stderr are forwarded to
	// Stderr; the rest is read and discarded. Zero (or negative) means no
	// cap: the default forwards everything, as a child's log should not
	// be cut short silently. Memory use is bounded either way (one copy
	// buffer).
	MaxStderrBytes int64
	// WaitDelay is how long Close waits for the process to exit after
	// closing its stdin. Zero means DefaultWaitDelay. It also becomes the
	// Cmd's WaitDelay when that is zero (bounding how long an exited
	// child's inherited pipes may keep Wait blocked).
	WaitDelay time.Duration
	// TermDelay is how long Close waits after SIGTERM before SIGKILL.
	// Zero means DefaultTermDelay. Where SIGTERM does not exist (Windows)
	// the process is killed at once.
	TermDelay time.Duration
	// Stdio configures the stdio stream (line cap, decode limits).
	Stdio stdio.Options
}

func (o *Options) waitDelay() time.Duration {
	if o.WaitDelay <= 0 {
		return DefaultWaitDelay
	}
	return o.WaitDelay
}

func (o *Options) termDelay() time.Duration {
	if o.TermDelay <= 0 {
		return DefaultTermDelay
	}
	return o.TermDelay
}

// Transport supervises one child process speaking MCP over stdio. Create
// it with New, then call Start once.
type Transport struct {
	cmd  *exec.Cmd
	opts Options

	mu      sync.Mutex
	started bool
	stdin   *os.File // write end of the child's stdin
	stdout  *os.File // read end of the child's stdout
	stream  *stream  // what Start returned

	exited  chan struct{} // closed when cmd.Wait has returned
	waitErr error         // cmd.Wait's result; read after exited
	group   bool          // the child leads a process group of its own

	closeOnce sync.Once
	closeErr  error
}

// New validates cmd and returns a Transport for it. cmd must not have been
// started, and its Stdin, Stdout and Stderr must be nil: the Transport sets
// them.
func New(cmd *exec.Cmd, opts Options) (*Transport, error) {
	switch {
	case cmd == nil:
		return nil, errors.New("command: nil Cmd")
	case cmd.Process != nil:
		return nil, errors.New("command: Cmd already started")
	case cmd.Stdin != nil || cmd.Stdout != nil || cmd.Stderr != nil:
		return nil, errors.New("command: Cmd.Stdin, Stdout and Stderr must be nil (use Options.Stderr for the child's stderr)")
	}
	return &Transport{cmd: cmd, opts: opts, exited: make(chan struct{})}, nil
}

// Start starts the process and returns a stream over its stdin and stdout.
// Closing the stream is the same as calling Close. Start may be called
// once.
func (t *Transport) Start() (jsonrpc.Stream, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.started {
		return nil, errors.New("command: Start called twice, or after Close")
	}
	t.started = true

	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	t.cmd.Stdin = inR
	t.cmd.Stdout = outW
	if t.opts.Stderr != nil {
		// Not an *os.File: exec copies the child's stderr into it from a
		// goroutine that Wait waits for (bounded by Cmd.WaitDelay).
		t.cmd.Stderr = &stderrSink{w: t.opts.Stderr, left: t.opts.MaxStderrBytes, capped: t.opts.MaxStderrBytes > 0}
	}
	if t.cmd.WaitDelay == 0 {
		t.cmd.WaitDelay = t.opts.waitDelay()
	}
	t.group = ownGroup(t.cmd)
	if err := t.cmd.Start(); err != nil {
		for _, f := range []*os.File{inR, inW, outR, outW} {
			f.Close()
		}
		t.waitErr = err
		close(t.exited)
		return nil, err
	}
	// The child has its own copies; ours would hide its EOF.
	inR.Close()
	outW.Close()
	t.stdin, t.stdout = inW, outR
	go func() {
		err := t.cmd.Wait()
		t.waitErr = err
		// Until the group is gone its id is not reused: a signal to the
		// group can only reach what is left of it.
		killGroupRest(t.cmd.Process, t.group)
		close(t.exited)
	}()
	s := &stream{t: t, Stream: stdio.NewStream(readOnly{outR}, writeOnly{inW}, t.opts.Stdio)}
	t.stream = s
	return s, nil
}

// FirstInvalidLine returns the start of the first line the child wrote on
// stdout that was not a JSON-RPC message (see
// stdio.Stream.FirstInvalidLine), or "". A child that does so usually
// logs to stdout where it should log to stderr; a caller can quote the
// line when the connection fails, or warn.
func (t *Transport) FirstInvalidLine() string {
	t.mu.Lock()
	s := t.stream
	t.mu.Unlock()
	if s == nil {
		return ""
	}
	return s.FirstInvalidLine()
}

// Done returns a channel closed once the process has exited and been
// reaped (also when Start failed, or Close came before Start).
func (t *Transport) Done() <-chan struct{} { return t.exited }

// Wait blocks until the process has exited and returns what exec.Cmd.Wait
// returned (an *exec.ExitError for a non-zero status or a signal). It does
// not stop the process: call Close for that.
func (t *Transport) Wait() error {
	<-t.exited
	return t.waitErr
}

// Close shuts the process down: it closes the child's stdin, waits up to
// WaitDelay for it to exit, then sends SIGTERM and waits up to TermDelay,
// then sends SIGKILL. Meanwhile the child's stdout is drained, so a child
// still writing cannot block on a full pipe. Close returns once the
// process has been reaped; it returns nil however the process ended (see
// Wait for its exit status), or ErrStillRunning. It is safe to call more
// than once and before Start.
func (t *Transport) Close() error {
	t.closeOnce.Do(func() { t.closeErr = t.shutdown() })
	return t.closeErr
}

func (t *Transport) shutdown() error {
	t.mu.Lock()
	started, stdin, stdout := t.started, t.stdin, t.stdout
	t.started = true // no Start after Close
	t.mu.Unlock()
	if !started {
		t.waitErr = errNeverStarted
		close(t.exited)
		return nil
	}
	if stdin == nil { // Start failed
		return nil
	}
	_ = stdin.Close() // EOF: the stdio way to ask a server to exit

	drained := make(chan struct{})
	go func() {
		defer close(drained)
		_, _ = io.Copy(io.Discard, stdout) // ends at EOF or when stdout is closed below
	}()
	err := t.stop()
	_ = stdout.Close()
	<-drained
	return err
}

// stop waits for the exit, escalating to SIGTERM and SIGKILL.
func (t *Transport) stop() error {
	if t.waitExit(t.opts.waitDelay()) {
		return nil
	}
	if terminate(t.cmd.Process, t.group) == nil && t.waitExit(t.opts.termDelay()) {
		return nil
	}
	return t.killNow()
}

// killNow sends SIGKILL (to the group when the child leads one) and waits
// for the reaping, bounded.
func (t *Transport) killNow() error {
	_ = kill(t.cmd.Process, t.group)
	if t.waitExit(killWait) {
		return nil
	}
	return ErrStillRunning
}

// Kill ends the process at once with SIGKILL (the whole process group on
// Unix, as Close), without Close's polite steps: for a caller whose
// deadline has passed, or a server that stopped answering. It returns
// once the process has been reaped (or ErrStillRunning); a Close running
// concurrently, or called later, then finishes without waiting. Kill
// before Start, or after the process ended, does nothing.
func (t *Transport) Kill() error {
	t.mu.Lock()
	running := t.stdin != nil
	t.mu.Unlock()
	if !running {
		return nil
	}
	select {
	case <-t.exited:
		return nil
	default:
	}
	return t.killNow()
}

func (t *Transport) waitExit(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-t.exited:
		return true
	case <-timer.C:
		return false
	}
}

// stream is the stdio stream of a Transport; closing it shuts the process
// down.
type stream struct {
	*stdio.Stream
	t *Transport
}

// Close marks the stream closed and shuts the process down (see
// Transport.Close).
func (s *stream) Close() error {
	_ = s.Stream.Close() // closes nothing underneath: the Transport owns the files
	return s.t.Close()
}

// readOnly and writeOnly hide the files' Close methods from the stdio
// stream, so that the Transport decides the shutdown order. readOnly keeps
// SetReadDeadline, which lets reads honour their context.
type readOnly struct{ f *os.File }

func (r readOnly) Read(p []byte) (int, error)        { return r.f.Read(p) }
func (r readOnly) SetReadDeadline(t time.Time) error { return r.f.SetReadDeadline(t) }

type writeOnly struct{ f *os.File }

func (w writeOnly) Write(p []byte) (int, error) { return w.f.Write(p) }

// stderrSink forwards the child's stderr to the caller's writer, up to the
// cap, and swallows the rest and any write error so that the copy never
// stops draining the pipe.
type stderrSink struct {
	mu     sync.Mutex
	w      io.Writer
	left   int64
	capped bool
	failed bool
}

func (s *stderrSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := p
	if s.capped {
		if int64(len(q)) > s.left {
			q = q[:s.left]
		}
		s.left -= int64(len(q))
	}
	if len(q) > 0 && !s.failed {
		if _, err := s.w.Write(q); err != nil {
			s.failed = true
		}
	}
	return len(p), nil
}
