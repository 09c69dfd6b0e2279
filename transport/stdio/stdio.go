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

	"github.com/gopmcp/pmcp/internal/peer"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// DefaultMaxLineBytes is the default cap on one input line: 4 MiB.
const DefaultMaxLineBytes = 4 << 20

// DefaultNotificationQueueBytes is the default bound on the notification
// lines that may wait to be written after their Writes returned: 64 KiB.
const DefaultNotificationQueueBytes = 64 << 10

// ErrClosed is returned by Read and Write after Close. It is net.ErrClosed,
// so errors.Is(err, net.ErrClosed) works the same for every transport.
var ErrClosed = net.ErrClosed

// Options configures a Stream. The zero value is ready to use.
type Options struct {
	// MaxLineBytes caps the length of one input line, excluding its line
	// terminator. Zero means DefaultMaxLineBytes; a negative value disables
	// the cap (Limits.MaxMessageBytes still applies, but only after the
	// whole line has been buffered). Longer lines are skipped without being
	// buffered and reported as jsonrpc.ErrMessageTooLarge, with the id
	// found in the line's start (jsonrpc.TooLarge), so that a response
	// over the limit fails the call it answers.
	MaxLineBytes int
	// Limits is passed to jsonrpc.Decode for every line.
	Limits jsonrpc.Limits
	// NotificationQueueBytes bounds the lines waiting to be written whose
	// Writes already returned: a notification's Write (a Request without
	// an id) returns once its line is queued while the queue holds fewer
	// bytes than this, and waits for the write otherwise. A tool's progress
	// notifications then go out together (with its response) instead of
	// one write and one wait each. Zero means
	// DefaultNotificationQueueBytes; negative means no queue: every Write
	// returns once its line is written. Requests and responses always wait.
	NotificationQueueBytes int
}

func (o Options) queueBytes() int {
	switch {
	case o.NotificationQueueBytes == 0:
		return DefaultNotificationQueueBytes
	case o.NotificationQueueBytes < 0:
		return 0
	}
	return o.NotificationQueueBytes
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
	// maxQueued is the bound of Options.NotificationQueueBytes; 0: none.
	maxQueued int

	rmu      sync.Mutex // serializes Read; guards the fields below
	br       *bufio.Reader
	dl       deadliner // r, when its read deadline works
	partial  []byte    // start of a line whose rest is still to be read
	skipping bool      // discarding the rest of an over-long line
	// head is the start of the over-long line being skipped, for its id
	// (jsonrpc.TooLarge).
	head []byte

	// Writes are group-committed: a Write appends its line to the open
	// batch; the first one to open a batch (its leader) lets the other
	// ready goroutines run, then writes the whole batch with one Write on
	// w. The others wait for that write and return its result.
	qmu  sync.Mutex // guards cur and werr
	cur  *wbatch    // the batch still open to joiners, or nil
	wmu  sync.Mutex // serializes writes on w
	werr error      // sticky: a failed write may have left a partial line
	// unanswered counts the requests read and not yet answered by a
	// written response. A batch leader yields to let other responses join
	// only while some are (a server in a pipelined burst); otherwise (one
	// request at a time, or a client writing its requests) it writes at
	// once.
	unanswered atomic.Int64

	// firstInvalid is the start of the first line that was not a
	// message (see FirstInvalidLine); set once.
	firstInvalid atomic.Pointer[string]

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

var _ jsonrpc.Stream = (*Stream)(nil)

// NewStream returns a Stream reading messages from r and writing them to w.
// Close closes r and w if they implement io.Closer.
func NewStream(r io.Reader, w io.Writer, opts Options) *Stream {
	s := &Stream{
		r:         r,
		w:         w,
		maxLine:   opts.maxLine(),
		limits:    opts.Limits,
		maxQueued: opts.queueBytes(),
		br:        bufio.NewReaderSize(r, 64<<10),
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
//
// When standard input is a pipe or a socket (as for a server spawned by a
// client), it is put in non-blocking mode and read through the Go
// runtime's poller, so waiting for the client parks a goroutine instead
// of tying up a thread (and the processor of a server pinned to one core,
// until the runtime takes it back); the server then also honours ctx and
// Close while reading. A terminal or a regular file is read as it is.
// Standard input then belongs to the Stream: do not read os.Stdin
// elsewhere.
func Stdio(opts Options) *Stream {
	return NewStream(pollable(os.Stdin), os.Stdout, opts)
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
	// Arm the deadline only when the read may wait: a complete line that
	// is already buffered is returned without touching the reader (a
	// pipelined burst then costs no timer per message).
	if s.dl != nil && ctx.Done() != nil && !s.lineBuffered() {
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
			s.yieldToWriters()
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
		m, err := jsonrpc.Decode(line, s.limits)
		if r, ok := m.(*jsonrpc.Request); ok && r.ID.IsValid() {
			s.unanswered.Add(1)
		}
		if err != nil && s.firstInvalid.Load() == nil {
			q := peer.CapString(string(bytes.TrimRight(line[:min(len(line), MaxQuotedLineBytes+1)], "\r")), MaxQuotedLineBytes)
			s.firstInvalid.CompareAndSwap(nil, &q)
		}
		return m, err
	}
}

// MaxQuotedLineBytes bounds the line FirstInvalidLine keeps.
const MaxQuotedLineBytes = 200

// FirstInvalidLine returns the start of the first line Read could not
// decode as a JSON-RPC message (at most MaxQuotedLineBytes, cut on a rune
// boundary and marked with "...", control characters replaced), or ""
// when every line so far was one. A peer that writes anything else on
// the stream, typically a server that logs to stdout instead of stderr,
// can be told which line was wrong. Safe to call concurrently with Read.
func (s *Stream) FirstInvalidLine() string {
	if p := s.firstInvalid.Load(); p != nil {
		return *p
	}
	return ""
}

var aLongTimeAgo = time.Unix(1, 0)

// lineBuffered reports whether a whole non-blank line is buffered, so
// that Read returns without reading from the reader. s.rmu is held.
func (s *Stream) lineBuffered() bool {
	if s.skipping || len(s.partial) > 0 {
		return false
	}
	b, _ := s.br.Peek(s.br.Buffered())
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return false
		}
		if len(bytes.TrimLeft(b[:i], " \t\r")) > 0 {
			return true
		}
		b = b[i+1:] // a blank line, skipped by Read
	}
}

// readLine returns the next line without its terminator, in a freshly
// allocated slice (jsonrpc.Decode aliases it). An over-long line is
// consumed without being kept and reported as a *jsonrpc.DecodeError. If
// reading fails mid-line, what was read is kept for the next call.
func (s *Stream) readLine() ([]byte, error) {
	for {
		chunk, err := s.br.ReadSlice('\n')
		if s.skipping {
			if room := jsonrpc.TooLargePrefix - len(s.head); room > 0 {
				c := bytes.TrimSuffix(chunk, []byte("\n"))
				s.head = append(s.head, c[:min(room, len(c))]...)
			}
			switch err {
			case nil, io.EOF:
				s.skipping = false
				head := s.head
				s.head = nil
				return nil, s.tooLong(head)
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
				s.head = append([]byte(nil), s.partial[:min(len(s.partial), jsonrpc.TooLargePrefix)]...)
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
		return nil, s.tooLong(line)
	}
	return line, nil
}

// tooLong is the error for an over-long line that starts with head: with
// the line's id when head shows it, so that a response over the limit
// fails the call it answers instead of leaving it waiting.
func (s *Stream) tooLong(head []byte) error {
	return jsonrpc.TooLarge(head, "line exceeds the limit of "+strconv.Itoa(s.maxLine)+" bytes")
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// wbatch is the lines of concurrent Writes, written together.
type wbatch struct {
	buf  *[]byte
	done chan struct{} // closed once buf was written; made by the first joiner
	err  error         // the write's result, set before done is closed
}

// Write encodes m as one line and writes it to the underlying writer.
// Concurrent Writes are serialized and never interleave; lines that are
// ready together (several responses of a pipelined burst) are coalesced
// into one Write call on the underlying writer. Lines are written in the
// order their Writes were called.
//
// A request or a response returns once its line was written, or failed;
// so does a notification when Options.NotificationQueueBytes is negative
// or the queue is full. Otherwise a notification returns once its line is
// queued: it is written soon (by a goroutine, or with a line written
// after it), and always before any line written after it, so when a
// later request or response Write returns, every notification queued
// before it was written too.
//
// Like Read, Write checks ctx only before writing: a write blocked on the
// underlying writer cannot be interrupted except by closing it. If writing
// fails, the line may have been written partially, so the error is sticky:
// every later Write returns it too (a queued notification's failure is
// returned by the Writes after it).
func (s *Stream) Write(ctx context.Context, m jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed.Load() {
		return ErrClosed
	}
	lp := bufPool.Get().(*[]byte)
	line, err := jsonrpc.AppendMessage((*lp)[:0], m)
	if err != nil {
		putBuf(lp)
		return err
	}
	line = append(line, '\n')
	*lp = line

	s.qmu.Lock()
	if s.werr != nil {
		err := s.werr
		s.qmu.Unlock()
		putBuf(lp)
		return err
	}
	others := s.unanswered.Load()
	queue := false
	switch r := m.(type) {
	case *jsonrpc.Response:
		if r.ID.IsValid() {
			others = s.unanswered.Add(-1)
		}
	case *jsonrpc.Request:
		queue = !r.ID.IsValid() && s.maxQueued > 0
	}
	if b := s.cur; b != nil {
		// Join the open batch and wait for it to be written, unless this
		// is a notification and the batch has room.
		queue = queue && len(*b.buf)+len(line) <= s.maxQueued
		*b.buf = append(*b.buf, line...)
		if queue {
			s.qmu.Unlock()
			putBuf(lp)
			return nil
		}
		if b.done == nil {
			b.done = make(chan struct{})
		}
		done := b.done
		s.qmu.Unlock()
		putBuf(lp)
		<-done
		return b.err
	}
	b := &wbatch{buf: lp}
	s.cur = b
	s.qmu.Unlock()
	if queue && len(line) <= s.maxQueued {
		// A notification opening a batch: a goroutine writes it, so the
		// notifications and the response that follow at once (a tool's
		// progress, then its result) join it instead of each waiting for
		// its own write.
		go s.writeQueued(b)
		return nil
	}

	// Leader. While other requests are being served, let the goroutines
	// that are ready (handlers with their responses) join first. Only the
	// leader writes the batch; the read loop yields to it before a read
	// that may block the thread (Read's yieldToWriters), so yielding here
	// does not leave the batch waiting on a read.
	if others > 0 {
		runtime.Gosched()
	}
	s.wmu.Lock()
	s.writeBatch(b)
	s.wmu.Unlock()
	s.qmu.Lock()
	err = b.err
	s.qmu.Unlock()
	return err
}

// writeQueued writes batch b, opened by a queued notification.
func (s *Stream) writeQueued(b *wbatch) {
	if s.unanswered.Load() > 0 {
		runtime.Gosched()
	}
	s.wmu.Lock()
	s.writeBatch(b)
	s.wmu.Unlock()
}

// maxReadYields bounds the yields of yieldToWriters to the open batch's
// writer.
const maxReadYields = 4

// yieldToWriters is called by Read before a read that may wait. That read
// may block the thread (a blocking standard input cannot use the poller),
// and with it the processor until the runtime takes it back; so the
// goroutines that are ready (handlers with replies to write) run first,
// and then, while a batch is open, its writer (the leader, which yielded
// to let them join, or a queued notification's goroutine) gets the
// processor to write it before the read, not after it returns.
//
// Read only yields, a bounded number of times, and never writes nor waits
// for a write: a write may wait for the peer to read (a full pipe, or an
// in-memory one such as io.Pipe that has no buffer at all), and a peer
// whose read loop is doing the same would never read again.
func (s *Stream) yieldToWriters() {
	runtime.Gosched()
	for range maxReadYields {
		s.qmu.Lock()
		open := s.cur != nil
		s.qmu.Unlock()
		if !open {
			return
		}
		runtime.Gosched()
	}
}

// writeBatch closes b to joiners and writes it. Only the Write that
// opened b (its leader, or writeQueued for it) calls it, once. s.wmu is
// held.
func (s *Stream) writeBatch(b *wbatch) {
	s.qmu.Lock()
	if s.cur == b {
		s.cur = nil
	}
	err := s.werr
	s.qmu.Unlock()
	if err == nil && s.closed.Load() {
		err = ErrClosed
	}
	if err == nil {
		if _, err = s.w.Write(*b.buf); err != nil && s.closed.Load() {
			err = ErrClosed
		}
	}
	s.qmu.Lock()
	if err != nil && s.werr == nil {
		s.werr = err
	}
	b.err = err
	done := b.done // no joiner can come any more: b is no longer s.cur
	s.qmu.Unlock()
	putBuf(b.buf)
	if done != nil {
		close(done)
	}
}

func putBuf(bp *[]byte) {
	if cap(*bp) <= 64<<10 {
		bufPool.Put(bp)
	}
}

// Close closes the underlying writer and reader when they implement
// io.Closer (once, if they are the same value). It is safe to call more
// than once; later calls return the first call's result. Close does not
// wait for a pending Read or Write; closing the underlying reader and
// writer is what unblocks them. Queued notifications not yet written
// when Close is called are not written.
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
