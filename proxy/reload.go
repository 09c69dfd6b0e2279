package proxy

import (
	"fmt"
	"slices"
	"time"
)

// errRemoved: a request was routed to an upstream SetUpstreams removed or
// replaced since (Proxy.conn routes it again).
var errRemoved = fmt.Errorf("%w: the upstream was removed", ErrUpstreamGone)

// drainTimeout bounds how long the sessions of a removed or replaced
// upstream stay open for the calls in flight on them (SetUpstreams).
const drainTimeout = 30 * time.Second

// SetUpstreams replaces the upstreams with ups, checked as New checks
// Options.Upstreams: an invalid set is refused (ErrInvalidOptions) and
// the current one kept. The downstream sessions stay; so do the upstream
// sessions of each upstream given again unchanged (the same Name,
// SessionHeaders, CallTimeout, Breaker and prefix, and the same non-empty
// Fingerprint; a single upstream gets a prefix once there are several,
// unless Options.Prefix gave it one already). Another upstream is new;
// one not given again, or changed, is removed: no request is routed to it
// from now on, and its sessions are closed once the calls in flight on
// them ended (at most 30 s later). When the set changed, every downstream
// session is told that the tool, prompt and resource lists changed.
func (p *Proxy) SetUpstreams(ups []Upstream) error {
	p.setMu.Lock()
	defer p.setMu.Unlock()
	next, err := p.build(ups)
	if err != nil {
		return err
	}
	old := p.upstreams()
	kept := make(map[*upstream]bool, len(old))
	for i, u := range next {
		for _, o := range old {
			if o.name == u.name && o.same(u) && !kept[o] {
				next[i] = o
				kept[o] = true
			}
		}
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return fmt.Errorf("%w: the proxy is closed", ErrUpstreamGone)
	}
	p.set.Store(&next)
	var drop []*slot
	for _, o := range old {
		if !kept[o] {
			o.gone.Store(true) // slotFor makes no slot for it any more
		}
	}
	for k, sl := range p.slots {
		if k.up.gone.Load() {
			delete(p.slots, k)
			drop = append(drop, sl)
		}
	}
	p.closers.Add(len(drop))
	p.mu.Unlock()
	for _, sl := range drop {
		go func() {
			defer p.closers.Done()
			sl.drain(drainTimeout)
			sl.close()
		}()
	}
	changed := len(kept) != len(old) || len(next) != len(old)
	if !changed {
		return nil
	}
	var added, removed []string
	for _, u := range next {
		if !kept[u] {
			added = append(added, u.name)
		}
	}
	for _, o := range old {
		if !kept[o] {
			removed = append(removed, o.name)
		}
	}
	p.log.Info("proxy: upstreams changed", "added", added, "removed", removed)
	p.srv.NotifyToolsListChanged()
	p.srv.NotifyPromptsListChanged()
	p.srv.NotifyResourcesListChanged()
	return nil
}

// same reports whether u is o given again unchanged (SetUpstreams).
func (o *upstream) same(u *upstream) bool {
	return o.fingerprint != "" && o.fingerprint == u.fingerprint && o.prefix == u.prefix &&
		o.timeout == u.timeout && o.health.breaker.cfg == u.health.breaker.cfg && slices.Equal(o.headers, u.headers)
}

// drain waits, at most d or until the proxy closes, for the calls in
// flight on the slot to end.
func (sl *slot) drain(d time.Duration) {
	sl.jobsMu.Lock()
	if len(sl.jobs) == 0 {
		sl.jobsMu.Unlock()
		return
	}
	idle := make(chan struct{})
	sl.drained = idle
	sl.jobsMu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
		sl.p.log.Warn("proxy: closing a removed upstream's session with calls in flight", "upstream", sl.up.name, "waited", d)
	case <-sl.p.base.Done():
	}
}

// successor is the upstream a request routed to up before a SetUpstreams
// goes to: up itself, or, once it was replaced, the upstream of its name
// in the current set (nil when it was removed), so that a change does not
// fail the requests already routed.
func (p *Proxy) successor(up *upstream) *upstream {
	if !up.gone.Load() {
		return up
	}
	for _, u := range p.upstreams() {
		if u.name == up.name {
			return u
		}
	}
	return nil
}
