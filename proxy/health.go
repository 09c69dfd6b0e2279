package proxy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// UpstreamStatus is what the proxy last saw of one upstream (Proxy.Status,
// Proxy.Probe).
type UpstreamStatus struct {
	// Name is the upstream's Name ("upstream" for an unnamed one).
	Name string
	// Up reports that the last contact succeeded: a session opened, or a
	// request was answered (an error of the upstream's own is an answer).
	Up bool
	// Err is why the upstream is down: the last failure to connect, or of
	// a request for want of an answer. Nil when Up or never contacted.
	Err error
	// Since is when the upstream was last found up after being down, or
	// the other way round; zero until it was first contacted.
	Since time.Time
	// Breaker is the state of its circuit breaker (Upstream.Breaker), ""
	// when it has none; Failures counts its failures since the last
	// success. While the breaker is open the upstream is down and not
	// contacted, Probe included.
	Breaker  BreakerState
	Failures int
}

// health records one upstream's status.
type health struct {
	mu      sync.Mutex
	up      bool
	err     error
	since   time.Time
	breaker breaker
}

func (h *health) isDown() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err != nil
}

// minProbeInterval bounds how often Probe contacts the upstreams; a
// Probe sooner after the last returns the status that one found.
const minProbeInterval = time.Second

// Status reports each upstream's status as last seen, in the order of
// Options.Upstreams (or of the last SetUpstreams), without contacting any
// (see Probe).
func (p *Proxy) Status() []UpstreamStatus {
	ups := p.upstreams()
	out := make([]UpstreamStatus, len(ups))
	now := time.Now()
	for i, up := range ups {
		h := &up.health
		h.mu.Lock()
		out[i] = UpstreamStatus{Name: up.name, Up: h.up, Err: h.err, Since: h.since, Breaker: h.breaker.state(now), Failures: h.breaker.fails}
		h.mu.Unlock()
	}
	return out
}

// Probe contacts every upstream, concurrently, through its shared session
// (the one modern requests use, dialed when there is none), and reports
// their status as Status does: a legacy upstream is pinged, a modern one
// asked for the first page of a list it declares. An upstream that does
// not answer before ctx is done is down. Probes are at most one a second:
// a sooner one returns the last one's findings, so that a readiness
// endpoint polled hard cannot make the proxy re-dial a dead upstream
// (restart a child) any faster.
func (p *Proxy) Probe(ctx context.Context) []UpstreamStatus {
	select {
	case p.probing <- struct{}{}:
		defer func() { <-p.probing }()
	case <-ctx.Done():
		return p.Status()
	}
	if !p.lastProbe.IsZero() && time.Since(p.lastProbe) < minProbeInterval {
		return p.Status()
	}
	var wg sync.WaitGroup
	for _, up := range p.upstreams() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.probe(ctx, up)
		}()
	}
	wg.Wait()
	p.lastProbe = time.Now()
	return p.Status()
}

func (p *Proxy) probe(ctx context.Context, up *upstream) {
	_, l, err := p.conn(ctx, &pmcp.Request{}, up)
	if err != nil {
		if ctx.Err() != nil {
			p.setHealth(up, fmt.Errorf("no session before the probe's deadline: %w", ctx.Err()))
		}
		return // else conn recorded it
	}
	s := l.conn.Session
	switch {
	case !l.modern:
		err = s.Ping(ctx)
	case l.capsTools:
		_, err = s.ListTools(ctx, "")
	case l.capsPrompts:
		_, err = s.ListPrompts(ctx, "")
	case l.capsRes:
		_, err = s.ListResources(ctx, "")
	}
	if err != nil && ctx.Err() != nil {
		p.setHealth(up, fmt.Errorf("no answer before the probe's deadline: %w", ctx.Err()))
		return
	}
	p.observe(ctx, up, err)
	if err != nil {
		l.breakOn(err) // the next probe or request re-dials
	}
}

// observe records the outcome of a request to up's session: nil or an
// error the upstream answered with (a JSON-RPC error) mean up, any other
// error down, except the caller's own cancellation, which says nothing of
// the upstream.
func (p *Proxy) observe(ctx context.Context, up *upstream, err error) {
	if err == nil {
		p.setHealth(up, nil)
		return
	}
	var je *jsonrpc.Error // allocated: only on an error
	switch {
	case errors.As(err, &je):
		p.setHealth(up, nil)
	case ctx.Err() == nil:
		p.setHealth(up, err)
	}
}

// unreachable records that no session with up could be had (err from
// slot.get), unless the caller gave up or the proxy or the downstream
// session ended.
func (p *Proxy) unreachable(ctx context.Context, up *upstream, err error) {
	if ctx.Err() == nil && !errors.Is(err, ErrUpstreamGone) {
		p.setHealth(up, err)
	}
}

// setHealth records up as reachable (err nil) or down, and logs a change:
// Warn with the reason when it goes down, Info when it is back.
func (p *Proxy) setHealth(up *upstream, err error) {
	h := &up.health
	h.mu.Lock()
	now := time.Now()
	changed := h.since.IsZero() || h.up != (err == nil)
	h.up, h.err = err == nil, err
	if changed {
		h.since = now
	}
	opened := h.breaker.record(err, now)
	fails := h.breaker.fails
	h.mu.Unlock()
	if opened {
		p.log.Warn("proxy: upstream circuit open", "upstream", up.name, "failures", fails, "error", err, "cooldown", h.breaker.cfg.cooldown())
	}
	switch {
	case changed && err != nil:
		p.log.Warn("proxy: upstream unreachable", "upstream", up.name, "error", err)
	case changed:
		p.log.Info("proxy: upstream reachable", "upstream", up.name)
	}
}
