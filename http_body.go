package pmcp

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"time"
)

// bodyState is the request body of one ServeHTTP call. A body that is not
// read to its end, because reading it failed or timed out or because the
// request was refused first, must not be drained by net/http afterwards:
// it would do so without a deadline, and a client sending a byte now and
// then would hold the connection (and a graceful shutdown) indefinitely.
type bodyState struct {
	// rc is held by value: a *ResponseController was an allocation per
	// request.
	rc      http.ResponseController
	pending bool // the request has a body not read to its end
}

// aLongTimeAgo is a read deadline in the past: reads fail at once.
var aLongTimeAgo = time.Unix(1, 0)

// settle runs when ServeHTTP returns. A body still pending gets a read
// deadline in the past, so net/http's attempt to drain it fails at once
// and the connection is closed instead of reused.
func (b *bodyState) settle() {
	if b.pending {
		_ = b.rc.SetReadDeadline(aLongTimeAgo)
	}
}

// readBody reads the whole body within the size cap and the read timeout
// (armed by ServeHTTP). On a failure it answers the request
// (refuseTooLarge, refuseBadBody) and returns false; the connection is
// then closed after the reply (see bodyState).
func (h *StreamableHTTPHandler) readBody(w http.ResponseWriter, r *http.Request, bs *bodyState) ([]byte, bool) {
	max := h.opts.MaxBodyBytes
	if max > 0 && r.ContentLength > max {
		refuseTooLarge.write(w, &h.refusals, noID, max)
		return nil, false
	}
	if !bs.pending {
		return nil, true // no body
	}
	src := r.Body
	if max > 0 {
		src = http.MaxBytesReader(w, r.Body, max)
	}
	// The declared length sizes the buffer, up to bodyPrealloc: a client
	// that declares a large body and sends little of it pins no more.
	size := 512
	if r.ContentLength > 0 {
		size = int(min(r.ContentLength+1, bodyPrealloc)) // +1 so EOF needs no growth
	}
	buf := make([]byte, 0, size)
	for {
		n, err := src.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			// Clear the deadline: the server's background read of a
			// long-lived stream must not time out.
			bs.pending = false
			if h.opts.BodyReadTimeout > 0 {
				_ = bs.rc.SetReadDeadline(time.Time{})
			}
			return buf, true
		}
		if err != nil {
			// The deadline stays (settle moves it to the past): what is
			// left of the body is never read without one.
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				refuseTooLarge.write(w, &h.refusals, noID, max)
				return nil, false
			}
			refuseBadBody.write(w, &h.refusals, noID)
			return nil, false
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
	}
}

// bodyPrealloc caps the buffer readBody allocates from a declared
// Content-Length before any byte arrives; larger bodies grow it as they
// are read.
const bodyPrealloc = 64 << 10

// rewindBody makes a POST's body, already read, readable again for a
// SessionRouter.
func (h *StreamableHTTPHandler) rewindBody(r *http.Request, body []byte) {
	if h.opts.SessionRouter != nil && r.Header.Get(headerSessionID) != "" {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	}
}
