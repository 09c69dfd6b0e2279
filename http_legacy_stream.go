package pmcp

import (
	"net/http"
)

// legacyGet opens the standalone SSE stream, or resumes a stream with
// Last-Event-ID.
func (h *StreamableHTTPHandler) legacyGet(w http.ResponseWriter, r *http.Request, auth authResult) {
	sess := h.lookupSession(w, r, auth)
	if sess == nil {
		return
	}
	if _, sse := accepts(r); !sse {
		refuseGETNotAcceptable.write(w, &h.refusals, noID)
		return
	}
	sess.active.Add(1)
	defer func() {
		sess.active.Add(-1)
		sess.touch()
	}()
	sw := newSSEWriter(w, h.opts.StreamWriteTimeout)
	if last, ok := headerValue(r.Header, headerLastEventID); ok {
		sid, n, ok := parseEventID(last)
		if !ok {
			refuseBadLastEventID.write(w, &h.refusals, noID)
			return
		}
		h.resume(w, r, sw, sess, sid, n)
		return
	}
	st, l := sess.standaloneStream()
	if st == nil {
		refuseSessionNotFound.write(w, &h.refusals, noID)
		return
	}
	a, _, floor := st.attach()
	sw.start(sess.id)
	sw.priming(eventID(st.id, floor), h.opts.SSERetry)
	h.pump(r.Context(), sw, st, a, pumpOptions{written: floor, events: l, idle: true})
	st.detach(a)
}

// resume serves a GET with Last-Event-ID n of stream sid. A live stream
// is replayed from the event store and taken over: its previous writer
// ends, so resumptions never hold more than one response per stream (as
// plain GETs of the standalone stream). A stream that has ended is
// replayed from the store and the response ends; an id the session never
// issued, or whose events are no longer stored, gets 400 at once.
func (h *StreamableHTTPHandler) resume(w http.ResponseWriter, r *http.Request, sw *sseWriter, sess *httpSession, sid string, n uint64) {
	st := sess.liveStream(sid)
	var events *listener
	if sid == standaloneStreamID && st == nil && n == 0 {
		// Resuming the standalone stream before it was ever opened.
		if st, events = sess.standaloneStream(); st == nil {
			refuseSessionNotFound.write(w, &h.refusals, noID)
			return
		}
	}
	if st != nil && n > st.lastSeq() {
		st = nil // an id this stream never issued
	}
	if st == nil {
		evs, err := h.store.After(r.Context(), sess.id, sid, n)
		if err != nil {
			h.log.Warn("pmcp: event store replay failed", "session", sess.id, "stream", sid, "error", err)
		}
		if len(evs) == 0 {
			refuseNothingToResume.write(w, &h.refusals, noID)
			return
		}
		h.resumed.Add(1)
		sw.start(sess.id)
		sw.priming(eventID(sid, n), h.opts.SSERetry)
		for _, ev := range evs {
			sw.event(eventID(sid, ev.Seq), ev.Data)
		}
		_ = sw.last()
		return
	}
	h.resumed.Add(1)
	sw.start(sess.id)
	sw.priming(eventID(sid, n), h.opts.SSERetry)
	a, upTo, _ := st.attach()
	defer st.detach(a)
	written := n
	evs, err := h.store.After(r.Context(), sess.id, sid, n)
	if err != nil {
		h.log.Warn("pmcp: event store replay failed", "session", sess.id, "stream", sid, "error", err)
	}
	for _, ev := range evs {
		if ev.Seq > upTo {
			break
		}
		sw.event(eventID(sid, ev.Seq), ev.Data)
		written = ev.Seq
	}
	po := pumpOptions{written: written}
	if sid == standaloneStreamID {
		if events == nil {
			_, events = sess.standaloneStream()
		}
		po.events, po.idle = events, true
	}
	h.pump(r.Context(), sw, st, a, po)
}

// legacyDelete ends a session.
func (h *StreamableHTTPHandler) legacyDelete(w http.ResponseWriter, r *http.Request, auth authResult) {
	sess := h.lookupSession(w, r, auth)
	if sess == nil {
		return
	}
	h.endSession(sess)
	w.WriteHeader(http.StatusOK)
}
