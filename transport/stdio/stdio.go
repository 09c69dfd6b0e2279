// Package stdio implements the MCP stdio transport: JSON-RPC messages
// framed as newline-delimited JSON over a byte stream, typically a child
// process's standard input and output.
//
// Each message is one line of compact JSON terminated by '\n'. On input a
// trailing '\r' is tolerated, blank lines are skipped, and every line is
// decoded with jsonrpc.Decode, so the codec's strictness and limits apply.
// A bad line (malformed, invalid, or longer than the line limit) is
// reported as a *jsonrpc.DecodeError and the stream stays usable.
package stdio

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// DefaultMaxLineBytes is the default cap on one input line: 4 MiB.
const DefaultMaxLineBytes = 4 << 20

// ErrClosed is returned by Read and Write after Close. It is net.ErrClosed,
// so errors.Is(err, net.ErrClosed) works the same for every transport.
var ErrClosed = net.ErrClosed

// Options configures a Stream. The zero value is ready to use.
type Options struct {
	// MaxLineBytes caps the length of one input line, excluding its line
	// terminator. Zero means DefaultMaxLineBytes; a negative value disables
	// the cap (Limits.MaxMessageBytes still applies, but only after the
	// whole line has been buffered). Longer lines are skipped without being
	// buffered and reported as jsonrpc.ErrMessageTooLarge.
	MaxLineBytes int
	// Limits is passed to jsonrpc.Decode for every line.
	Limits jsonrpc.Limits
}

func (o Options) maxLine() int {
	if o.MaxLineBytes == 0 {
		return DefaultMaxLineBytes
	}
	return o.MaxLineBytes
}

// Stream is a jsonrpc.Stream over newline-delimited JSON. Read and Write
// may be called concurrently with each other; concurrent Reads are
// serialized, and concurrent Writes never interleave.
type Stream struct {
	r       io.Reader
	w       io.Writer
	maxLine int
	limits  jsonrpc.Limits

	rmu      sync.Mutex // serializes Read; guards the fields below
	br       *bufio.Reader
	dl       deadliner // r, when its read deadline works
	partial  []byte    // start of a line whose rest is still to be read
	skipping bool      // discarding the rest of an over-long line

	wmu  sync.Mutex // serializes Write
	werr error      // sticky: a failed write may have left a partial line

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

var _ jsonrpc.Stream = (*Stream)(nil)

// NewStream returns a Stream reading messages from r and writing them to w.
// Close closes r and w if they implement io.Closer.
func NewStream(r io.Reader, w io.Writer, opts Options) *Stream {
	s := &Stream{
		r:       r,
		w:       w,
		maxLine: opts.maxLine(),
		limits:  opts.Limits,
		br:      bufio.NewReaderSize(r, 64<<10),
	}
	// Probe the deadline: an *os.File in blocking mode has the method but
	// reports os.ErrNoDeadline.
	if d, ok := r.(deadliner); ok && d.SetReadDeadline(time.Time{}) == nil {
		s.dl = d
	}
	return s
}

type deadliner interface {
	SetReadDeadline(t time.Time) error
}

// Stdio returns a Stream over os.Stdin and os.Stdout, for an MCP server run
// as a subprocess. Closing it closes both files.
func Stdio(opts Options) *Stream {
	return NewStream(os.Stdin, os.Stdout, opts)
}

// Read returns the next message. It returns io.EOF at the clean end of
// input; a final line without a terminating newline is still a message.
// A line that is not a valid message yields a *jsonrpc.DecodeError (a line
// over the limit one that matches jsonrpc.ErrMessageTooLarge), after which
// the stream is still usable.
//
// Cancellation: an io.Reader cannot be interrupted in general, so Read
// blocks until a line, the end of input or an error arrives, and ctx is
// only checked before reading. Closing the stream (or the underlying
// reader) is the way to unblock it; Read then returns ErrClosed once the
// reader returns. The exception is a reader with a working
// SetReadDeadline method (net.Conn, or an *os.File for a pipe or socket in
// non-blocking mode, such as one from os.Pipe): Read then also returns
// ctx.Err() as soon as ctx is done, keeping any partly read line for the
// next Read, and the Stream owns the reader's read deadline. Ordinary
// os.Stdin is usually in blocking mode and cannot be interrupted this way;
// nor, for that matter, can Close unblock a pending read on it. No
// goroutine is ever left running.
func (s *Stream) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.rmu.Lock()
	defer s.rmu.Unlock()
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if s.dl != nil && ctx.Done() != nil {
		fired := make(chan struct{})
		stop := context.AfterFunc(ctx, func() {
			s.dl.SetReadDeadline(aLongTimeAgo) // wakes the pending read
			close(fired)
		})
		defer func() {
			if !stop() {
				<-fired
				s.dl.SetReadDeadline(time.Time{})
			}
		}()
	}
	for {
		if s.br.Buffered() == 0 {
			// The read below may block the thread (a blocking standard
			// input cannot use the poller), and with it the processor
			// until the runtime takes it back. Let the goroutines that
			// are ready (handlers with replies to write) run first.
			runtime.Gosched()
		}
		line, err := s.readLine()
		if err != nil {
			switch {
			case ctx.Err() != nil && errors.Is(err, os.ErrDeadlineExceeded):
				return nil, ctx.Err()
			case s.closed.Load() && err != io.EOF:
				return nil, ErrClosed
			}
			return nil, err
		}
		if len(bytes.TrimLeft(line, " \t\r")) == 0 {
			continue // blank line
		}
		return jsonrpc.Decode(line, s.limits)
	}
}

var aLongTimeAgo = time.Unix(1, 0)

// readLine returns the next line without its terminator, in a freshly
// allocated slice (jsonrpc.Decode aliases it). An over-long line is
// consumed without being kept and reported as a *jsonrpc.DecodeError. If
// reading fails mid-line, what was read is kept for the next call.
func (s *Stream) readLine() ([]byte, error) {
	for {
		chunk, err := s.br.ReadSlice('\n')
		if s.skipping {
			switch err {
			case nil, io.EOF:
				s.skipping = false
				return nil, s.tooLong()
			case bufio.ErrBufferFull:
				continue
			}
			return nil, err
		}
		switch err {
		case nil: // chunk ends with '\n'
			return s.checkLine(s.take(chunk[:len(chunk)-1]))
		case bufio.ErrBufferFull:
			s.partial = append(s.partial, chunk...)
			// One more byte is allowed for a '\r' before the '\n'.
			if s.maxLine >= 0 && len(s.partial) > s.maxLine+1 {
				s.partial, s.skipping = nil, true
			}
		case io.EOF:
			if len(s.partial)+len(chunk) == 0 {
				return nil, io.EOF
			}
			return s.checkLine(s.take(chunk))
		default:
			s.partial = append(s.partial, chunk...)
			return nil, err
		}
	}
}

// take returns the pending partial line followed by chunk, as a slice
// that nothing else references, and clears the partial line.
func (s *Stream) take(chunk []byte) []byte {
	if s.partial == nil {
		return append(make([]byte, 0, len(chunk)), chunk...)
	}
	line := append(s.partial, chunk...)
	s.partial = nil
	return line
}

// checkLine strips a trailing '\r' and enforces the line limit.
func (s *Stream) checkLine(line []byte) ([]byte, error) {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if s.maxLine >= 0 && len(line) > s.maxLine {
		return nil, s.tooLong()
	}
	return line, nil
}

func (s *Stream) tooLong() error {
	return &jsonrpc.DecodeError{
		Code: jsonrpc.CodeParseError,
		Msg:  "line exceeds the limit of " + strconv.Itoa(s.maxLine) + " bytes",
		Err:  jsonrpc.ErrMessageTooLarge,
	}
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// Write encodes m as one line and writes it with a single Write call on
// the underlying writer. Concurrent Writes are serialized.
//
// Like Read, Write checks ctx only before writing: a write blocked on the
// underlying writer cannot be interrupted except by closing it. If writing
// fails, the line may have been written partially, so the error is sticky:
// every later Write returns it too.
func (s *Stream) Write(ctx context.Context, m jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed.Load() {
		return ErrClosed
	}
	bp := bufPool.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= 64<<10 {
			bufPool.Put(bp)
		}
	}()
	b, err := jsonrpc.AppendMessage((*bp)[:0], m)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	*bp = b

	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.werr != nil {
		return s.werr
	}
	if s.closed.Load() {
		return ErrClosed
	}
	if _, err := s.w.Write(b); err != nil {
		if s.closed.Load() {
			err = ErrClosed
		}
		s.werr = err
		return err
	}
	return nil
}

// Close closes the underlying writer and reader when they implement
// io.Closer (once, if they are the same value). It is safe to call more
// than once; later calls return the first call's result. Close does not
// wait for a pending Read or Write; closing the underlying reader and
// writer is what unblocks them.
func (s *Stream) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		var errs []error
		if c, ok := s.w.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
		if c, ok := s.r.(io.Closer); ok && !sameCloser(s.r, s.w) {
			errs = append(errs, c.Close())
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// sameCloser reports whether r and w are the same comparable value.
func sameCloser(r io.Reader, w io.Writer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false // incomparable dynamic types
		}
	}()
	return any(r) == any(w)
}

// TransportName reports "stdio" (what pmcp's middleware and access log
// show as the transport).
func (s *Stream) TransportName() string { return "stdio" }
