package pmcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// This file holds every method of the Streamable HTTP client transport
// (httpTransport, declared in client_http.go): the writing side (requests,
// round trips, statuses) and the reading side (SSE reply streams, their
// resumption, the legacy standalone GET stream, and what the transport
// learns from the server's messages).

// Read returns the next message the server sent on any response stream.
func (t *httpTransport) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-t.incoming:
		return m, nil
	case <-t.done:
		t.mu.Lock()
		err := t.fatal
		t.mu.Unlock()
		if err != nil {
			return nil, err
		}
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close ends a legacy session with DELETE (best effort, bounded), stops
// the background streams and, when the http.Client is the transport's
// own, closes its idle connections.
func (t *httpTransport) Close() error {
	t.closeOnce.Do(func() {
		t.mu.Lock()
		sid := t.sessionID
		t.mu.Unlock()
		if sid != "" {
			ctx, cancel := context.WithTimeout(context.Background(), httpCloseTimeout)
			if req, err := t.newRequest(ctx, http.MethodDelete, nil); err == nil {
				if resp, err := t.client.Do(req); err == nil {
					drainClose(resp.Body)
				}
			}
			cancel()
		}
		close(t.done)
		t.cancel()
		t.wg.Wait()
		if t.own != nil {
			t.own.CloseIdleConnections()
		}
	})
	return nil
}

// fail ends the transport with err (Read returns it).
func (t *httpTransport) fail(err error) {
	t.mu.Lock()
	if t.fatal == nil {
		t.fatal = err
	}
	t.mu.Unlock()
	t.closeOnce.Do(func() {
		close(t.done)
		t.cancel()
		go func() {
			t.wg.Wait()
			if t.own != nil {
				t.own.CloseIdleConnections()
			}
		}()
	})
}

func (t *httpTransport) closed() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// newRequest builds a request to the endpoint with the user's and the
// session's headers.
func (t *httpTransport) newRequest(ctx context.Context, method string, body []byte) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.endpoint, rd)
	if err != nil {
		return nil, err
	}
	req.Header = make(http.Header, len(t.header)+8)
	for k, vs := range t.header {
		req.Header[k] = vs
	}
	t.mu.Lock()
	sid, v := t.sessionID, t.legacyVersion
	if sid != "" && (len(t.sidHdr) == 0 || t.sidHdr[0] != sid) {
		t.sidHdr = []string{sid}
	}
	if v != "" && (len(t.versionHdr) == 0 || t.versionHdr[0] != v) {
		t.versionHdr = []string{v}
	}
	sidHdr, versionHdr := t.sidHdr, t.versionHdr
	t.mu.Unlock()
	// Header values are shared, read-only slices: a request's headers
	// are never modified once sent.
	if sid != "" {
		req.Header[headerSessionID] = sidHdr
	}
	if v != "" {
		req.Header[headerProtocolVersion] = versionHdr
	}
	switch method {
	case http.MethodPost:
		req.Header["Content-Type"] = hdrJSON
		req.Header["Accept"] = hdrAcceptPost
	case http.MethodGet:
		req.Header["Accept"] = hdrAcceptSSE
	}
	return req, nil
}

// Write sends m as a POST. For a request it returns once the response has
// been queued for Read; for a notification or response once the server
// accepted it.
func (t *httpTransport) Write(ctx context.Context, m jsonrpc.Message) error {
	if t.closed() {
		return jsonrpc.ErrClosed
	}
	body, err := jsonrpc.Encode(m)
	if err != nil {
		return err
	}
	req, _ := m.(*jsonrpc.Request)
	var extra http.Header
	modern := false
	if req != nil {
		if op := ownParamsOf(ctx, req.Params); op != nil {
			extra, modern = ownHeaders(req.Method, op, t.bindings) // no need to read them back
		} else {
			extra, _, modern = mirroredHeaders(req.Method, req.Params, t.bindings)
		}
	}
	if req == nil || !req.ID.IsValid() {
		if err := t.send(ctx, body, extra); err != nil {
			return err
		}
		if req != nil && req.Method == NotificationInitialized {
			t.sessionStarted(ctx)
		}
		return nil
	}
	return t.roundTrip(ctx, req, body, extra, modern)
}

func (t *httpTransport) bindings(tool string) []paramBinding {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.tools[tool]
}

// post sends one POST with body and the extra headers.
func (t *httpTransport) post(ctx context.Context, body []byte, extra http.Header) (*http.Response, error) {
	hr, err := t.newRequest(ctx, http.MethodPost, body)
	if err != nil {
		return nil, err
	}
	for k, vs := range outgoingHeader(ctx) { // from client middleware
		if !managedHeader(k) {
			hr.Header[http.CanonicalHeaderKey(k)] = vs
		}
	}
	for k, vs := range extra {
		hr.Header[k] = vs
	}
	return t.client.Do(hr)
}

// send posts a notification or a response.
func (t *httpTransport) send(ctx context.Context, body []byte, extra http.Header) error {
	resp, err := t.post(ctx, body, extra)
	if err != nil {
		return err
	}
	defer drainClose(resp.Body)
	if resp.StatusCode/100 != 2 {
		return t.statusError(resp)
	}
	return nil
}

// statusError reads an error response into an *HTTPStatusError. A 404 to
// a request of a legacy session means the session is gone: the transport
// then fails for good.
func (t *httpTransport) statusError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, httpErrorBodyBytes))
	e := &HTTPStatusError{StatusCode: resp.StatusCode}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		e.WWWAuthenticate = capPeerString(resp.Header.Get("WWW-Authenticate"))
	}
	if m, err := jsonrpc.Decode(bytes.TrimSpace(b), jsonrpc.Limits{MaxMessageBytes: httpErrorBodyBytes}); err == nil {
		if r, ok := m.(*jsonrpc.Response); ok && r.Error != nil {
			e.RPC = boundedPeerError(r.Error)
		}
	}
	if e.RPC == nil {
		e.Body = capPeerString(strings.TrimSpace(string(b)))
		if len(e.Body) > 200 {
			e.Body = e.Body[:200] + "..."
		}
	}
	t.mu.Lock()
	sid := t.sessionID
	t.mu.Unlock()
	if resp.StatusCode == http.StatusNotFound && sid != "" {
		err := fmt.Errorf("%w: %w", ErrHTTPSessionExpired, e)
		t.fail(err)
		return err
	}
	return e
}

// roundTrip posts a request and reads its reply until the response to it
// has been queued.
func (t *httpTransport) roundTrip(ctx context.Context, req *jsonrpc.Request, body []byte, extra http.Header, modern bool) (err error) {
	// rctx ends as soon as the response is in, whichever stream brought
	// it, so that no stream of this request is read any longer.
	rctx, rcancel := context.WithCancel(ctx)
	defer rcancel()
	answered := make(chan struct{})
	t.mu.Lock()
	t.waiting[req.ID] = waiter{answered, rcancel}
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		delete(t.waiting, req.ID)
		t.mu.Unlock()
		if err != nil && ctx.Err() != nil {
			if t.onAbandon != nil && req.Method != MethodInitialize {
				t.onAbandon(req.ID, req.Method, context.Cause(ctx))
			}
			err = ctx.Err()
		}
	}()
	resp, err := t.post(rctx, body, extra)
	if err != nil {
		return err
	}
	defer drainClose(resp.Body)
	if resp.StatusCode/100 != 2 {
		return t.statusError(resp)
	}
	if req.Method == MethodInitialize {
		if err := t.adoptSession(resp); err != nil {
			return err
		}
	}
	rc := &replyContext{req: req, modern: modern, answered: answered}
	ct := resp.Header.Get("Content-Type")
	if ct != "application/json" && ct != "text/event-stream" {
		ct, _, _ = mime.ParseMediaType(ct)
	}
	switch {
	case resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusNoContent:
		return fmt.Errorf("pmcp: %s: the server accepted the request (HTTP %d) without answering it", req.Method, resp.StatusCode)
	case ct == "application/json":
		b, err := readBody(resp, t.maxMsg)
		if err != nil {
			return err
		}
		if len(b) > t.maxMsg {
			return fmt.Errorf("pmcp: %s: response body larger than %d bytes", req.Method, t.maxMsg)
		}
		m, err := jsonrpc.Decode(b, jsonrpc.Limits{MaxMessageBytes: t.maxMsg})
		if err != nil {
			return fmt.Errorf("pmcp: %s: malformed response body: %s", req.Method, capPeerString(err.Error()))
		}
		if r, ok := m.(*jsonrpc.Response); ok && r.ID == req.ID && t.resolve != nil {
			// The body is this one message: nothing of the request was
			// read before it, so handing it over directly keeps the order.
			t.prepare(rc, r)
			t.resolve(r)
			t.answered(r.ID)
		} else if err := t.deliver(rctx, rc, m); err != nil {
			return err
		}
		if !rc.done() {
			return fmt.Errorf("pmcp: %s: the response body did not answer the request", req.Method)
		}
		return nil
	case ct == "text/event-stream":
		return t.readReplyStream(rctx, rc, resp.Body)
	}
	return fmt.Errorf("pmcp: %s: unexpected response Content-Type %q", req.Method, capPeerString(resp.Header.Get("Content-Type")))
}

// adoptSession records the session id a legacy server minted at
// initialize.
func (t *httpTransport) adoptSession(resp *http.Response) error {
	sid := resp.Header.Get(headerSessionID)
	if sid == "" {
		return nil
	}
	if len(sid) > maxSessionIDBytes {
		return fmt.Errorf("pmcp: initialize: Mcp-Session-Id longer than %d bytes", maxSessionIDBytes)
	}
	for i := 0; i < len(sid); i++ {
		if c := sid[i]; c < 0x21 || c > 0x7e {
			return errors.New("pmcp: initialize: Mcp-Session-Id has characters outside visible ASCII")
		}
	}
	t.mu.Lock()
	t.sessionID = sid
	t.mu.Unlock()
	return nil
}

// readReplyStream reads the SSE reply of a request. A legacy stream that
// ends before the response is resumed by GET with Last-Event-ID after the
// announced retry delay; a modern one is lost.
func (t *httpTransport) readReplyStream(ctx context.Context, rc *replyContext, body io.ReadCloser) error {
	lastID, retry := "", t.retry
	attempts := 0
	for {
		err := t.readEvents(ctx, rc, body, &lastID, &retry)
		body.Close()
		if rc.done() {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if t.closed() {
			return jsonrpc.ErrClosed
		}
		if err != nil && errors.Is(err, ErrSSEEventTooLarge) {
			return fmt.Errorf("pmcp: %s: %w", rc.req.Method, err)
		}
		if rc.modern || lastID == "" || t.maxReconnects < 0 {
			return streamEnded(rc, err)
		}
		if body, err = t.resume(ctx, rc, lastID, retry, &attempts); body == nil {
			return err
		}
	}
}

// streamEnded is ErrHTTPStreamEnded for rc's request, with why.
func streamEnded(rc *replyContext, why error) error {
	if why != nil {
		return fmt.Errorf("%w (%s): %w", ErrHTTPStreamEnded, rc.req.Method, why)
	}
	return fmt.Errorf("%w (%s)", ErrHTTPStreamEnded, rc.req.Method)
}

// resume reopens a broken legacy reply stream after lastID: after the
// retry delay, at most MaxReconnects attempts in all. A refused
// connection ends it at once (the server is gone, and waiting will not
// bring it back within the call); so does a 404 (the session is gone).
// It returns the new body, or nil and the error that ends the request.
func (t *httpTransport) resume(ctx context.Context, rc *replyContext, lastID string, retry time.Duration, attempts *int) (io.ReadCloser, error) {
	var last error
	for *attempts < t.maxReconnects {
		*attempts++
		if err := t.sleep(ctx, retry, rc.answered); err != nil {
			if rc.done() {
				return nil, nil
			}
			return nil, err
		}
		resp, err := t.get(ctx, lastID)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil && errors.Is(err, syscall.ECONNREFUSED):
			return nil, streamEnded(rc, err)
		case err != nil:
			last = err
			continue
		case resp.StatusCode/100 != 2:
			serr := t.statusError(resp)
			drainClose(resp.Body)
			if errors.Is(serr, ErrHTTPSessionExpired) {
				return nil, serr
			}
			last = serr
			continue
		}
		return resp.Body, nil
	}
	return nil, streamEnded(rc, last)
}

// get opens a GET stream, resuming after lastID when it is not empty.
func (t *httpTransport) get(ctx context.Context, lastID string) (*http.Response, error) {
	hr, err := t.newRequest(ctx, http.MethodGet, nil)
	if err != nil {
		return nil, err
	}
	if lastID != "" {
		hr.Header.Set(headerLastEventID, lastID)
	}
	return t.client.Do(hr)
}

// sleep waits d, or until ctx ends, the transport closes or stop fires
// (then it returns an error).
func (t *httpTransport) sleep(ctx context.Context, d time.Duration, stop <-chan struct{}) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.done:
		return jsonrpc.ErrClosed
	case <-stop:
		return errors.New("answered")
	}
}

// readEvents reads one SSE body, queueing its messages, until it ends or
// rc (when not nil) is answered. It keeps the last event id and retry.
func (t *httpTransport) readEvents(ctx context.Context, rc *replyContext, body io.Reader, lastID *string, retry *time.Duration) error {
	sr := newSSEDecoder(body, t.maxMsg)
	for {
		ev, err := sr.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if ev.hasID {
			*lastID = ev.id
		}
		if ev.hasRetry {
			*retry = ev.retry
		}
		if (ev.event != "" && ev.event != "message") || len(bytes.TrimSpace(ev.data)) == 0 {
			continue // priming event, or an event type that is not MCP
		}
		m, err := jsonrpc.Decode(ev.data, jsonrpc.Limits{MaxMessageBytes: t.maxMsg})
		if err != nil {
			t.log.Warn("pmcp: client: malformed message in an SSE stream dropped", "error", capPeerString(err.Error()))
			continue
		}
		if err := t.deliver(ctx, rc, m); err != nil {
			return err
		}
		if rc != nil && rc.done() {
			return nil
		}
	}
}

// deliver post-processes a message of the server (legacy version
// bookkeeping, the tools/list filter) and queues it for Read. A response
// is matched against the requests waiting for one.
func (t *httpTransport) deliver(ctx context.Context, rc *replyContext, m jsonrpc.Message) error {
	r, isResp := m.(*jsonrpc.Response)
	if isResp {
		t.prepare(rc, r)
	}
	select {
	case t.incoming <- m:
	case <-t.done:
		return jsonrpc.ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	if isResp {
		t.answered(r.ID)
	}
	return nil
}

// prepare reads what the transport keeps of the response to rc's request
// (the legacy version chosen at initialize) and filters a modern tool
// list, before the response is delivered.
func (t *httpTransport) prepare(rc *replyContext, r *jsonrpc.Response) {
	if rc == nil || r.ID != rc.req.ID || r.Error != nil {
		return
	}
	switch {
	case rc.req.Method == MethodInitialize:
		t.adoptLegacyVersion(r.Result)
	case rc.req.Method == MethodToolsList && rc.modern:
		r.Result = t.filterToolList(r.Result)
	}
}

// answered ends the wait of the request with id, once its response was
// delivered: its streams are no longer read.
func (t *httpTransport) answered(id jsonrpc.ID) {
	t.mu.Lock()
	w, ok := t.waiting[id]
	delete(t.waiting, id)
	t.mu.Unlock()
	if ok {
		close(w.answered)
		w.cancel()
	}
}

// SetReplySink implements rpcconn.ReplySink.
func (t *httpTransport) SetReplySink(resolve func(*jsonrpc.Response) bool) { t.resolve = resolve }

// adoptLegacyVersion records the version a legacy server chose, sent as
// MCP-Protocol-Version from then on.
func (t *httpTransport) adoptLegacyVersion(result jsontext.Value) {
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if json.Unmarshal(result, &r) == nil && EraOf(r.ProtocolVersion) == EraLegacy {
		t.mu.Lock()
		t.legacyVersion = r.ProtocolVersion
		t.mu.Unlock()
	}
}

// maxToolBindings bounds the tools whose header bindings are remembered.
const maxToolBindings = 10000

// filterToolList applies the x-mcp-header rules to a modern tools/list
// result: invalid tools are dropped (and logged), the bindings of the
// valid ones remembered for tools/call.
func (t *httpTransport) filterToolList(result jsontext.Value) jsontext.Value {
	out, bindings, dropped := filterTools(result)
	for _, d := range dropped {
		t.log.Warn("pmcp: client: tool dropped from tools/list: invalid x-mcp-header", "tool", d)
	}
	t.mu.Lock()
	for name, bs := range bindings {
		if len(t.tools) >= maxToolBindings {
			break
		}
		t.tools[name] = bs
	}
	t.mu.Unlock()
	return out
}

// sessionStarted is called once the legacy handshake is complete: it
// opens the standalone GET stream and waits (bounded by ctx) until the
// server has answered it, so that nothing the server sends there right
// after the handshake is lost.
func (t *httpTransport) sessionStarted(ctx context.Context) {
	t.mu.Lock()
	start := t.standalone && !t.getStarted && t.legacyVersion != ""
	t.getStarted = true
	t.mu.Unlock()
	if !start || t.closed() {
		return
	}
	ready := make(chan struct{})
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		t.standaloneLoop(ready)
	}()
	select {
	case <-ready:
	case <-ctx.Done():
	case <-t.done:
	}
}

// standaloneLoop keeps the legacy GET stream open: the server sends on it
// what belongs to no request. A graceful close is reconnected after the
// retry delay with Last-Event-ID; repeated failures (or 405, meaning the
// server offers no such stream) end it. ready is closed once the first
// attempt has been answered.
func (t *httpTransport) standaloneLoop(ready chan struct{}) {
	defer func() {
		select {
		case <-ready:
		default:
			close(ready)
		}
	}()
	lastID, retry := "", t.retry
	failures := 0
	for t.ctx.Err() == nil {
		resp, err := t.get(t.ctx, lastID)
		select {
		case <-ready:
		default:
			close(ready)
		}
		if err == nil && resp.StatusCode/100 != 2 {
			serr := t.statusError(resp)
			drainClose(resp.Body)
			if resp.StatusCode == http.StatusMethodNotAllowed || errors.Is(serr, ErrHTTPSessionExpired) {
				return
			}
			err = serr
		}
		if err == nil {
			ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
			if ct != "text/event-stream" {
				drainClose(resp.Body)
				return
			}
			before := lastID
			err = t.readEvents(t.ctx, nil, resp.Body, &lastID, &retry)
			drainClose(resp.Body)
			if err == nil || lastID != before {
				failures = 0
			}
		}
		if t.ctx.Err() != nil {
			return
		}
		if err != nil {
			failures++
			if t.maxReconnects < 0 || failures > t.maxReconnects {
				t.log.Warn("pmcp: client: standalone SSE stream given up", "error", capPeerString(err.Error()))
				return
			}
		}
		if t.sleep(t.ctx, retry, nil) != nil {
			return
		}
	}
}
