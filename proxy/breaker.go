package proxy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// The circuit breaker of an upstream is its health record (health.go) with
// a memory: the failures Status reports (a session that could not be had,
// a request that got no answer: transport errors and timeouts, never a
// JSON-RPC error the upstream answered with) are counted, and after
// Breaker.Failures of them in a row the upstream is open: every request
// routed to it fails at once with -32603 naming it, for Breaker.Cooldown.
// Then it is half-open: the next request (a downstream's, or a Probe) is a
// trial; the others still fail at once until its outcome is known. A trial
// answered closes the breaker, a trial failed opens it for another
// cool-down. Any answer of the upstream, from a request admitted before
// the breaker opened included, closes it. One record per upstream, shared
// by all of its sessions: the slots' restart budget (Options.MaxRestarts)
// still decides when one session is re-dialed.

// Breaker configures the circuit breaker of one upstream (Upstream.Breaker).
// The zero value turns it off.
type Breaker struct {
	// Failures is how many consecutive failures open the breaker. Zero
	// means no breaker.
	Failures int
	// Cooldown is how long the breaker stays open before a trial request.
	// Zero means DefaultBreakerCooldown.
	Cooldown time.Duration
}

// DefaultBreakerCooldown is Breaker.Cooldown's default.
const DefaultBreakerCooldown = 30 * time.Second

// BreakerState is the state of an upstream's circuit breaker
// (UpstreamStatus.Breaker).
type BreakerState string

// The states of a breaker; "" means the upstream has none.
const (
	BreakerClosed   BreakerState = "closed"
	BreakerOpen     BreakerState = "open"
	BreakerHalfOpen BreakerState = "half-open"
)

func (b Breaker) cooldown() time.Duration {
	if b.Cooldown > 0 {
		return b.Cooldown
	}
	return DefaultBreakerCooldown
}

// breaker is the breaker's part of a health record, guarded by its mu.
type breaker struct {
	cfg Breaker
	// fails counts the failures since the last success.
	fails int
	// openUntil is zero while closed; else the end of the cool-down
	// (open before it, half-open after).
	openUntil time.Time
	// trialUntil, when half-open, is how long the trial admitted may
	// take before another one is (its outcome may never be recorded: a
	// caller that gives up says nothing of the upstream).
	trialUntil time.Time
}

// state reports the breaker's state at now; called with the record's mu.
func (b *breaker) state(now time.Time) BreakerState {
	switch {
	case b.cfg.Failures <= 0:
		return ""
	case b.openUntil.IsZero():
		return BreakerClosed
	case now.Before(b.openUntil):
		return BreakerOpen
	}
	return BreakerHalfOpen
}

// record notes the outcome of a contact (err nil: an answer) and reports
// whether the breaker opened; called with the record's mu.
func (b *breaker) record(err error, now time.Time) (opened bool) {
	if err == nil {
		b.fails, b.openUntil, b.trialUntil = 0, time.Time{}, time.Time{}
		return false
	}
	b.fails++
	if b.cfg.Failures <= 0 || b.state(now) == BreakerOpen || b.fails < b.cfg.Failures {
		return false // off, open already (a late failure), or not yet
	}
	b.openUntil, b.trialUntil = now.Add(b.cfg.cooldown()), time.Time{}
	return true
}

// admit lets a request reach up, or refuses it at once while up's breaker
// is open (or half-open with its trial under way); the refusal is the
// proxy's -32603 naming the upstream. In half-open the admitted request
// is the trial, allowed trial long to report.
func (up *upstream) admit(trial time.Duration) error {
	h := &up.health
	if h.breaker.cfg.Failures <= 0 {
		return nil // no breaker (cfg is fixed once built): no lock per call
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	b := &h.breaker
	switch b.state(now) {
	case BreakerOpen:
	case BreakerHalfOpen:
		if now.Before(b.trialUntil) {
			break // a trial is under way
		}
		b.trialUntil = now.Add(trial)
		return nil
	default:
		return nil
	}
	until := b.openUntil
	if until.Before(now) {
		until = b.trialUntil
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("upstream %q is failing (%d failures in a row, the last: %v): circuit open, not contacted until %s",
		up.name, b.fails, h.err, until.UTC().Format(time.RFC3339))}
}

// errCallTimeout is the cause of a call's context when Upstream.CallTimeout
// ended it.
var errCallTimeout = errors.New("proxy: upstream call timeout")

// bound applies up's CallTimeout to one call (its requests for input
// included); with none, the call is bounded as any upstream request is
// (ClientOptions.CallTimeout, DefaultCallTimeout).
func (up *upstream) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if up.timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, up.timeout, errCallTimeout)
}

// timedOut reports whether ctx was ended by up's CallTimeout (bound), and
// then records the failure and returns the error the downstream gets.
func (p *Proxy) timedOut(ctx context.Context, up *upstream) error {
	if ctx.Err() == nil || !errors.Is(context.Cause(ctx), errCallTimeout) {
		return nil
	}
	err := &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("upstream %q: no answer within %v", up.name, up.timeout)}
	p.setHealth(up, err)
	return err
}
