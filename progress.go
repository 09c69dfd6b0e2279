package pmcp

import (
	"context"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// progressReporter is the server's ProgressReporter for one request that
// carried a progressToken. It drops values that do not increase, and
// rate-limits with a token bucket (DefaultProgressBurst back to back, then
// DefaultProgressRate per second); a final update (progress >= total > 0)
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
	return newProgressReporterLimits(token, notify, DefaultProgressRate, DefaultProgressBurst)
}

// newProgressReporterLimits is newProgressReporter with the limits of
// ServerOptions.ProgressRate and ProgressBurst (zero: the default,
// negative: no limit).
func newProgressReporterLimits(token jsontext.Value, notify func(ctx context.Context, method string, params any) error, rate, burst int) *progressReporter {
	if rate == 0 {
		rate = DefaultProgressRate
	}
	if burst == 0 {
		burst = DefaultProgressBurst
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
