package proxy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// headerSlot returns, for a request with no session of its own, the key of
// the upstream session made for its values of the upstream's
// SessionHeaders, and those values as the header to dial with: "" and nil
// when it carries none of them (the plain shared session). The key is a
// digest, so that no credential is kept as a map key.
func headerSlot(h http.Header, names []string) (string, http.Header) {
	if len(names) == 0 || h == nil {
		return "", nil
	}
	var out http.Header
	sum := sha256.New()
	for _, name := range names {
		v := h.Get(name)
		if v == "" {
			continue
		}
		if out == nil {
			out = http.Header{}
		}
		out.Set(name, v)
		fmt.Fprintf(sum, "%s\x00%s\x00", name, v)
	}
	if out == nil {
		return "", nil
	}
	return hex.EncodeToString(sum.Sum(nil)), out
}

func (p *Proxy) maxHeaderSessions() int {
	if p.opts.MaxHeaderSessions > 0 {
		return p.opts.MaxHeaderSessions
	}
	return DefaultMaxHeaderSessions
}

// makeRoom makes room for one more header-keyed slot of up: at the bound,
// the least recently used one that is idle (no call in flight, no
// subscription, not dialing) is closed. Called with p.mu held.
func (p *Proxy) makeRoom(up *upstream) error {
	n := 0
	var lru *slot
	var lruKey slotKey
	for k, sl := range p.slots {
		if k.up != up || k.hdr == "" {
			continue
		}
		n++
		if sl.idle() && (lru == nil || sl.used < lru.used) {
			lru, lruKey = sl, k
		}
	}
	if n < p.maxHeaderSessions() {
		return nil
	}
	if lru == nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("upstream %q: %d sessions for distinct header values are busy", up.name, n)}
	}
	delete(p.slots, lruKey)
	p.closers.Add(1)
	go func() {
		defer p.closers.Done()
		lru.close()
	}()
	return nil
}

// idle reports whether nothing uses the slot: no call in flight, no
// resource subscription, no dial under way.
func (sl *slot) idle() bool {
	if !sl.mu.TryLock() {
		return false // dialing, or busy a moment
	}
	subs := len(sl.subs)
	sl.mu.Unlock()
	sl.jobsMu.Lock()
	jobs := len(sl.jobs)
	sl.jobsMu.Unlock()
	return subs == 0 && jobs == 0
}
