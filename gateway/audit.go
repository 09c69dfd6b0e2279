package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// AuditLogOptions configure an AuditLog. The zero value works.
type AuditLogOptions struct {
	// QueueSize bounds the records waiting to be written; a record that
	// finds the queue full is dropped and counted (Stats().Dropped).
	// Zero means 4096.
	QueueSize int
	// Logger receives the reports of dropped records and failed writes,
	// at most one line per ReportInterval. Nil means slog.Default().
	Logger *slog.Logger
	// ReportInterval is the least time between two report lines. Zero
	// means 10 seconds.
	ReportInterval time.Duration
	// CloseTimeout bounds how long Close waits for the queued records to
	// be written. Zero means 5 seconds.
	CloseTimeout time.Duration
}

// Defaults of AuditLogOptions.
const (
	defaultAuditQueue          = 4096
	defaultAuditReportInterval = 10 * time.Second
	defaultAuditCloseTimeout   = 5 * time.Second
	// auditBatchBytes caps what one Write carries: the writer drains the
	// queue into one buffer up to this size, so a busy log costs one
	// write system call per batch, not per record.
	auditBatchBytes = 64 << 10
)

// ErrAuditCloseTimeout is returned (wrapped) by Close when the writer did
// not take the queued records within AuditLogOptions.CloseTimeout; those
// records are counted as dropped.
var ErrAuditCloseTimeout = errors.New("gateway: audit log writer did not drain in time")

// AuditStats are an AuditLog's counters since it was created.
type AuditStats struct {
	// Written records reached the writer (its Write returned no error).
	Written uint64
	// Dropped records never reached the writer: the queue was full, the
	// log was closed, or Close gave up waiting for a stuck writer.
	Dropped uint64
	// Failed records were handed to a Write that returned an error (a
	// full disk); they are not retried.
	Failed uint64
	// Queued is how many records wait to be written now.
	Queued int
}

// AuditLog writes AuditRecords as JSON lines (one object per line, keys
// in a fixed order, see the package's audit line format below) from one
// goroutine of its own. Record, the sink the gateway's middleware calls,
// never blocks: it queues the record, or drops and counts it when the
// queue is full. A slow or failing writer (a full disk, a stuck network
// file system) therefore never holds up a call; it shows in Stats and in
// rate-limited warnings on the logger.
//
// The line format: {"time","subject","clientId","method","target",
// "upstream","decision","outcome","code","durationMs","arguments"}, with
// time in RFC 3339 UTC to the nanosecond, durationMs a decimal number of
// milliseconds (microsecond resolution), and subject, clientId, target,
// upstream, code and arguments left out when empty. Strings that are not
// valid UTF-8 have the invalid bytes replaced by U+FFFD, so every line is
// strict JSON.
type AuditLog struct {
	w      io.Writer
	closer io.Closer // the file OpenAuditFile opened; nil for NewAuditLog
	q      chan AuditRecord
	opts   AuditLogOptions
	log    *slog.Logger

	stop      chan struct{} // closed by Close: drain and exit
	abandon   chan struct{} // closed by Close after its timeout: drop the rest
	done      chan struct{} // closed when the writer goroutine returned
	closeOnce sync.Once
	closeErr  error
	closed    atomic.Bool

	written, dropped, failed atomic.Uint64

	// Reporting (see report).
	lastReport atomic.Int64 // unix nanoseconds of the last report line
	reportMu   sync.Mutex
	lastErr    error // the last write error, guarded by reportMu
	reported   struct{ dropped, failed uint64 }
}

// NewAuditLog starts an AuditLog writing to w, which the caller keeps
// owning: Close does not close it. w is only ever called from the log's
// own goroutine.
func NewAuditLog(w io.Writer, opts AuditLogOptions) *AuditLog {
	if opts.QueueSize <= 0 {
		opts.QueueSize = defaultAuditQueue
	}
	if opts.ReportInterval <= 0 {
		opts.ReportInterval = defaultAuditReportInterval
	}
	if opts.CloseTimeout <= 0 {
		opts.CloseTimeout = defaultAuditCloseTimeout
	}
	l := &AuditLog{
		w: w, q: make(chan AuditRecord, opts.QueueSize), opts: opts, log: opts.Logger,
		stop: make(chan struct{}), abandon: make(chan struct{}), done: make(chan struct{}),
	}
	if l.log == nil {
		l.log = slog.Default()
	}
	go l.run()
	return l
}

// OpenAuditFile opens path for appending (creating it with mode 0600,
// readable by its owner only: the trail names who called what) and starts
// an AuditLog on it. Close closes the file.
func OpenAuditFile(path string, opts AuditLogOptions) (*AuditLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("gateway: audit file: %w", err)
	}
	l := NewAuditLog(f, opts)
	l.closer = f
	return l, nil
}

// Record queues rec to be written and returns at once; it is the sink
// the gateway hands each request's record to. When the queue is full, or
// the log is closed, rec is dropped and counted (a Record racing with
// Close may also be written or lost). rec.Arguments must not be changed
// after the call.
func (l *AuditLog) Record(rec AuditRecord) {
	if l.closed.Load() {
		l.drop(1)
		return
	}
	select {
	case l.q <- rec:
	default:
		l.drop(1)
	}
}

// Stats returns the log's counters.
func (l *AuditLog) Stats() AuditStats {
	return AuditStats{Written: l.written.Load(), Dropped: l.dropped.Load(), Failed: l.failed.Load(), Queued: len(l.q)}
}

// Close stops taking records, writes the queued ones and stops the
// writer goroutine, waiting at most AuditLogOptions.CloseTimeout. When
// the writer is stuck past that, Close counts the records still queued as
// dropped, closes the file if OpenAuditFile opened it (which unblocks a
// write to a pipe) and returns an error wrapping ErrAuditCloseTimeout;
// the goroutine then exits as soon as its pending Write returns. Close is idempotent: later
// calls return the first call's result.
func (l *AuditLog) Close() error {
	l.closeOnce.Do(func() {
		l.closed.Store(true)
		close(l.stop)
		t := time.NewTimer(l.opts.CloseTimeout)
		defer t.Stop()
		select {
		case <-l.done:
		case <-t.C:
			close(l.abandon)
			l.closeErr = fmt.Errorf("%w after %v (%d records queued)", ErrAuditCloseTimeout, l.opts.CloseTimeout, len(l.q))
		}
		if l.closer != nil {
			if err := l.closer.Close(); err != nil && l.closeErr == nil {
				l.closeErr = fmt.Errorf("gateway: audit file: %w", err)
			}
		}
		l.report(true)
	})
	return l.closeErr
}

// drop counts n dropped records and reports them (rate-limited) from the
// caller's goroutine: a writer stuck in Write cannot report them itself.
func (l *AuditLog) drop(n uint64) {
	l.dropped.Add(n)
	l.report(false)
}

// report logs one warning line with the counters when records were
// dropped or failed since the last line, and at least ReportInterval has
// passed since it (or force is set). At most one caller wins the slot, so
// a flood of drops costs one line per interval.
func (l *AuditLog) report(force bool) {
	now := time.Now().UnixNano()
	last := l.lastReport.Load()
	if !force && now-last < int64(l.opts.ReportInterval) {
		return
	}
	if !force && !l.lastReport.CompareAndSwap(last, now) {
		return
	}
	l.lastReport.Store(now)
	l.reportMu.Lock()
	dropped, failed := l.dropped.Load(), l.failed.Load()
	if dropped == l.reported.dropped && failed == l.reported.failed {
		l.reportMu.Unlock()
		return
	}
	newDropped, newFailed := dropped-l.reported.dropped, failed-l.reported.failed
	l.reported.dropped, l.reported.failed = dropped, failed
	lastErr := l.lastErr
	l.reportMu.Unlock()
	attrs := []slog.Attr{
		slog.Uint64("dropped", newDropped), slog.Uint64("failed", newFailed),
		slog.Uint64("droppedTotal", dropped), slog.Uint64("failedTotal", failed),
	}
	if lastErr != nil {
		attrs = append(attrs, slog.String("lastError", lastErr.Error()))
	}
	l.log.LogAttrs(context.Background(), slog.LevelWarn, "audit log: records lost", attrs...)
}

// run is the writer goroutine: it batches queued records into one buffer
// and writes it, until Close.
func (l *AuditLog) run() {
	defer close(l.done)
	buf := make([]byte, 0, auditBatchBytes)
	torn := false // the last write ended mid-line
	for {
		var rec AuditRecord
		select {
		case rec = <-l.q:
		case <-l.stop:
			// Drain what is queued, then exit (or give up when Close's
			// timeout passes while a write is stuck).
			for {
				select {
				case <-l.abandon:
					l.drop(uint64(len(l.q)))
					return
				default:
				}
				select {
				case rec = <-l.q:
				default:
					return
				}
				buf, torn = l.writeBatch(buf, rec, torn)
			}
		}
		buf, torn = l.writeBatch(buf, rec, torn)
	}
}

// writeBatch encodes first and whatever else is queued (up to the batch
// size) and writes them in one Write. It returns the buffer for reuse and
// whether the write left a partial line (the next write then starts with
// a newline, so one torn record never spoils the next line).
func (l *AuditLog) writeBatch(buf []byte, first AuditRecord, torn bool) ([]byte, bool) {
	buf = buf[:0]
	if torn {
		buf = append(buf, '\n')
	}
	buf = appendAuditLine(buf, &first)
	n := uint64(1)
	for len(buf) < auditBatchBytes {
		select {
		case rec := <-l.q:
			buf = appendAuditLine(buf, &rec)
			n++
			continue
		default:
		}
		break
	}
	wrote, err := l.w.Write(buf)
	if err == nil && wrote < len(buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		l.failed.Add(n)
		l.reportMu.Lock()
		l.lastErr = err
		l.reportMu.Unlock()
		l.report(false)
		torn = wrote > 0 && buf[wrote-1] != '\n'
	} else {
		l.written.Add(n)
		torn = false
	}
	if cap(buf) > 4*auditBatchBytes {
		buf = make([]byte, 0, auditBatchBytes) // one huge record does not pin its buffer
	}
	return buf, torn
}
