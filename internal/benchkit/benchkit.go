// Package benchkit holds what the benchmarks of several packages of this
// module share: the process CPU time per iteration, and a response writer
// and request body that are reused from one iteration to the next.
package benchkit

import (
	"bytes"
	"net/http"
	"testing"
	"time"
)

// PerOp runs loop under b.Loop and, where the platform can tell, reports
// the process CPU time (user and system) per iteration as "cpu-ns/op"
// besides the wall-clock ns/op. On a shared machine the wall clock counts
// the time other processes held the CPU; the process CPU time (garbage
// collection included) does not, which makes A/B comparisons of the same
// code path far less noisy.
func PerOp(b *testing.B, loop func()) {
	b.Helper()
	start, ok := processCPU()
	n := 0
	for b.Loop() {
		loop()
		n++
	}
	if end, _ := processCPU(); ok && n > 0 {
		b.ReportMetric(float64(end-start)/float64(n), "cpu-ns/op")
	}
}

// ResponseWriter is a reusable http.ResponseWriter that keeps the status
// and the body. Its deadline and flush methods make
// http.ResponseController work as on a real connection (where they are
// cheap), instead of failing with errors a real server never builds.
type ResponseWriter struct {
	H      http.Header
	Status int
	Body   []byte
}

// NewResponseWriter returns an empty ResponseWriter.
func NewResponseWriter() *ResponseWriter { return &ResponseWriter{H: http.Header{}} }

// Header returns the response header, reused across requests.
func (w *ResponseWriter) Header() http.Header { return w.H }

// WriteHeader keeps the first status.
func (w *ResponseWriter) WriteHeader(code int) {
	if w.Status == 0 {
		w.Status = code
	}
}

// Write appends p to the body.
func (w *ResponseWriter) Write(p []byte) (int, error) {
	if w.Status == 0 {
		w.Status = http.StatusOK
	}
	w.Body = append(w.Body, p...)
	return len(p), nil
}

// SetReadDeadline does nothing.
func (w *ResponseWriter) SetReadDeadline(time.Time) error { return nil }

// SetWriteDeadline does nothing.
func (w *ResponseWriter) SetWriteDeadline(time.Time) error { return nil }

// FlushError does nothing.
func (w *ResponseWriter) FlushError() error { return nil }

// Reset empties w for the next request, keeping its buffers.
func (w *ResponseWriter) Reset() {
	clear(w.H)
	w.Status = 0
	w.Body = w.Body[:0]
}

// Body is a reusable request body: Reset it with the bytes of the next
// request.
type Body struct{ bytes.Reader }

// Close does nothing: the body is reused.
func (*Body) Close() error { return nil }
