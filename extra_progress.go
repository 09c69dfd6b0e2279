package pmcp

import (
	"context"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// progressReporter is the server's ProgressReporter for one request that
// carried a progressToken. It drops values that do not increase, and
// rate-limits with a token bucket (defaultProgressBurst back to back, then
// defaultProgressRate per second); a final update (progress >= total > 0)
// is always sent.
type progressReporter struct {
	token  jsontext.Value
	notify func(ctx context.Context, method string, params any) error
	now    func() time.Time
	// rate and burst are the token bucket's; unlimited skips it.
	rate, burst float64
	unlimited   bool

	mu      sync.Mutex
	last    float64
	sent    bool
	tokens  float64
	refill  time.Time
	dropped int
}

func newProgressReporter(token jsontext.Value, notify func(ctx context.Context, method string, params any) error) *progressReporter {
	return newProgressReporterLimits(token, notify, defaultProgressRate, defaultProgressBurst)
}

// newProgressReporterLimits is newProgressReporter with the limits of
// ServerOptions.ProgressRate and ProgressBurst (zero: the default,
// negative: no limit).
func newProgressReporterLimits(token jsontext.Value, notify func(ctx context.Context, method string, params any) error, rate, burst int) *progressReporter {
	if rate == 0 {
		rate = defaultProgressRate
	}
	if burst == 0 {
		burst = defaultProgressBurst
	}
	r := &progressReporter{token: token, notify: notify, now: time.Now, rate: float64(rate), burst: float64(burst), tokens: float64(burst)}
	r.unlimited = rate < 0 || burst < 0
	return r
}

// ReportProgress implements ProgressReporter.
func (r *progressReporter) ReportProgress(ctx context.Context, p Progress) error {
	r.mu.Lock()
	if r.sent && p.Progress <= r.last {
		r.mu.Unlock()
		return nil // progress must increase
	}
	final := p.Total > 0 && p.Progress >= p.Total || r.unlimited
	now := r.now()
	if !r.refill.IsZero() {
		r.tokens = min(r.burst, r.tokens+now.Sub(r.refill).Seconds()*r.rate)
	}
	r.refill = now
	if r.tokens < 1 && !final {
		r.dropped++
		r.mu.Unlock()
		return nil
	}
	if r.tokens >= 1 {
		r.tokens--
	}
	r.last, r.sent = p.Progress, true
	r.mu.Unlock()
	params := &ProgressParams{ProgressToken: r.token, Progress: p.Progress, Message: p.Message}
	if p.Total > 0 {
		t := p.Total
		params.Total = &t
	}
	return r.notify(ctx, NotificationProgress, params)
}

// ProgressReporter sends progress notifications for one request.
type ProgressReporter interface {
	ReportProgress(ctx context.Context, p Progress) error
}

// ProgressReporterFunc adapts a function to ProgressReporter.
type ProgressReporterFunc func(ctx context.Context, p Progress) error

// ReportProgress calls f.
func (f ProgressReporterFunc) ReportProgress(ctx context.Context, p Progress) error { return f(ctx, p) }

// Progress is one progress update. Total is 0 when unknown.
type Progress struct {
	Progress float64
	Total    float64
	Message  string
}

// ReportProgress sends a progress update when the request carried a
// progressToken; otherwise it is a no-op returning nil. The server's
// reporter rate-limits updates (see ServerOptions.ProgressRate), drops values that
// do not increase, and always sends a final update (progress >= total).
// total <= 0 means unknown.
func (e *RequestHandlerExtra) ReportProgress(progress, total float64, message string) error {
	if e.ProgressReporter == nil {
		return nil
	}
	return e.ProgressReporter.ReportProgress(e.ctx, Progress{Progress: progress, Total: total, Message: message})
}

// ReportPercent reports progress as a percentage of 100.
func (e *RequestHandlerExtra) ReportPercent(percent float64, message string) error {
	return e.ReportProgress(percent, 100, message)
}

// ReportCount reports count-based progress: current of total items.
func (e *RequestHandlerExtra) ReportCount(current, total int, message string) error {
	return e.ReportProgress(float64(current), float64(total), message)
}
