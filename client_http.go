package pmcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gopmcp/pmcp/internal/peer"
	"github.com/gopmcp/pmcp/jsonrpc"
	"github.com/gopmcp/pmcp/oauth"
)

// Defaults of HTTPClientOptions.
const (
	// DefaultHTTPMaxMessageBytes caps one message the server sends over
	// HTTP: a JSON response body, or the data of one server-sent event.
	DefaultHTTPMaxMessageBytes = 16 << 20
	// DefaultHTTPMaxReconnects is how many times in a row the client
	// reconnects a legacy SSE stream that broke (by GET with
	// Last-Event-ID) before giving up on it.
	DefaultHTTPMaxReconnects = 5
	// DefaultHTTPRetry is the reconnection delay when the server announced
	// none with an SSE "retry:" field.
	DefaultHTTPRetry = time.Second
	// DefaultHTTPDialTimeout and DefaultHTTPTLSHandshakeTimeout bound
	// connection set-up of the client's own http.Client (when
	// HTTPClientOptions.HTTPClient is nil). Requests are bounded by the
	// session's call timeout (ClientOptions.CallTimeout).
	DefaultHTTPDialTimeout         = 30 * time.Second
	DefaultHTTPTLSHandshakeTimeout = 10 * time.Second
	// httpErrorBodyBytes caps how much of an error response is read.
	httpErrorBodyBytes = 64 << 10
	// httpCloseTimeout bounds the DELETE that ends a legacy session.
	httpCloseTimeout = 2 * time.Second
	// maxSessionIDBytes caps an Mcp-Session-Id the client accepts.
	maxSessionIDBytes = 1024
)

// ErrHTTPSessionExpired: the server answered 404 to a request carrying the
// legacy session id, so the session is gone. The ClientSession ends; open
// a new one. The error also carries the 404's *HTTPStatusError (and the
// *jsonrpc.Error of its body, when there is one).
var ErrHTTPSessionExpired = errors.New("pmcp: the server ended the HTTP session (404)")

// ErrHTTPStreamEnded: the server closed a response stream before it sent
// the response, and it could not be resumed (modern servers never resume:
// the request is lost and may be sent again).
var ErrHTTPStreamEnded = errors.New("pmcp: the HTTP response stream ended before the response")

// HTTPStatusError is returned (wrapped) when the server answers a POST
// with an HTTP error status. When the body held a JSON-RPC error, RPC is
// that error and errors.As finds it as a *jsonrpc.Error too.
type HTTPStatusError struct {
	StatusCode int
	// Body is the start of the response body, capped and sanitised.
	Body string
	RPC  *jsonrpc.Error
	// WWWAuthenticate is the challenge of a 401 or 403 answer, capped.
	WWWAuthenticate string
}

// Error implements error. The error code and description of a 401 or
// 403 challenge are part of it: they say why the server refused.
func (e *HTTPStatusError) Error() string {
	msg := fmt.Sprintf("HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if code, desc := e.Challenge(); code != "" {
		msg += " (" + code
		if desc != "" {
			msg += ": " + desc
		}
		msg += ")"
	}
	switch {
	case e.RPC != nil:
		msg += ": " + e.RPC.Error()
	case e.Body != "":
		msg += ": " + e.Body
	}
	return msg
}

// Challenge returns the error code (invalid_token, insufficient_scope,
// ...) and description of the Bearer or DPoP challenge in
// WWWAuthenticate (RFC 6750 §3), empty when there is none.
func (e *HTTPStatusError) Challenge() (code, description string) {
	if e.WWWAuthenticate == "" {
		return "", ""
	}
	chs := oauth.ParseChallenges([]string{e.WWWAuthenticate})
	return capPeerString(oauth.ChallengeParam(chs, "error")), capPeerString(oauth.ChallengeParam(chs, "error_description"))
}

// Unwrap returns the JSON-RPC error of the body, if any.
func (e *HTTPStatusError) Unwrap() error {
	if e.RPC == nil {
		return nil
	}
	return e.RPC
}

// HTTPClientOptions configures the Streamable HTTP transport of
// Client.ConnectHTTP. The zero value (and nil) works.
type HTTPClientOptions struct {
	// HTTPClient sends the requests. Nil means a client of the session's
	// own (dial and TLS timeouts as above, closed with the session). A
	// given client's Timeout must be zero or longer than any stream the
	// session keeps open (subscriptions, the legacy GET stream).
	HTTPClient *http.Client
	// Header is added to every request (for example Authorization).
	// Headers the transport manages (Content-Type, Accept, Mcp-Session-Id,
	// MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Param-*,
	// Last-Event-ID) are removed from it.
	Header http.Header
	// MaxMessageBytes caps one message from the server (a JSON body or
	// one SSE event). Zero means DefaultHTTPMaxMessageBytes.
	MaxMessageBytes int
	// MaxReconnects caps consecutive reconnections of a legacy SSE stream.
	// Zero means DefaultHTTPMaxReconnects; negative disables reconnection.
	MaxReconnects int
	// DefaultRetry is the reconnection delay when the server gave none.
	// Zero means DefaultHTTPRetry.
	DefaultRetry time.Duration
	// NoStandaloneStream stops a legacy session from opening the GET
	// stream on which a server sends requests and notifications unrelated
	// to any request (list changes, resource updates).
	NoStandaloneStream bool
	// Authorizer turns on authorization of the session's requests, such
	// as MCP authorization with OAuth (*oauthclient.Config): on 401 (or
	// 403 with insufficient_scope) the client obtains a token and sends
	// the request again with it. Nil means none: a 401 is reported as
	// ErrAuthorizationRequired.
	Authorizer HTTPAuthorizer
}

// HTTPAuthorizer authorizes the requests of a Streamable HTTP session
// (HTTPClientOptions.Authorizer) by wrapping its transport;
// *oauthclient.Config is one.
type HTTPAuthorizer interface {
	// Wrap returns the transport that sends the requests to endpoint
	// through base (nil means http.DefaultTransport), adding credentials
	// and obtaining them when the server refuses. ConnectHTTP calls it
	// before any request, once for every transport it opens (there may
	// be more than one per session), with the client's logger; an error
	// (an invalid configuration) ends ConnectHTTP before any request.
	Wrap(base http.RoundTripper, endpoint string, log *slog.Logger) (http.RoundTripper, error)
}

// ConnectHTTP opens a session with the MCP server at endpoint (the URL of
// its Streamable HTTP endpoint, such as http://127.0.0.1:8080/mcp) and
// negotiates the era as Connect does: a modern server/discover first, read
// from the status and body of the answer; a recognised modern error means
// a modern server, anything else (400, 404 or 405 without a modern body,
// a legacy error) falls back to initialize. A 401 or 403 ends the attempt
// at once; a 401 is reported as ErrAuthorizationRequired (or
// ErrResourceMismatch) wrapping its *HTTPStatusError. With opts.Authorizer
// the client first tries to obtain a token (see oauthclient.Config); when
// that flow fails the error of the request wraps both the refusal (its
// *HTTPStatusError, and ErrAuthorizationRequired for a 401) and the
// flow's error. The negotiated era
// is cached per origin within the Client, so later sessions skip the
// probe (a failure other than a refusal forgets the entry and negotiates
// afresh).
//
// Everything above the transport is the same ClientSession as over a
// stream. Over HTTP, modern requests carry the mirrored headers of
// SEP-2243 (MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Param-*),
// tools whose x-mcp-header annotations are invalid are dropped from
// tools/list, and cancelling a modern call closes its response stream
// instead of sending notifications/cancelled. Legacy sessions keep the
// Mcp-Session-Id, open the standalone GET stream, resume broken SSE
// streams with Last-Event-ID and end with DELETE on Close.
func (c *Client) ConnectHTTP(ctx context.Context, endpoint string, options HTTPClientOptions) (*ClientSession, error) {
	opts := &options
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("pmcp: ConnectHTTP: %q is not an http(s) URL", endpoint)
	}
	// The first transport is made before any request, so that a bad
	// Authorizer (an invalid OAuth configuration) fails here.
	t, err := newHTTPTransport(u.String(), opts, c.log)
	if err != nil {
		return nil, err
	}
	origin := strings.ToLower(u.Scheme + "://" + u.Host)
	hint := EraUnknown
	if c.opts.Era == EraUnknown {
		hint = c.cachedEra(origin)
	}
	s, err := c.connect(ctx, t, connectConfig{http: t, eraHint: hint})
	// A cached era that no longer works is forgotten and the era
	// negotiated afresh, unless the server refused the client (401/403):
	// that is no sign of another era, and a second probe would only be
	// refused again.
	if err != nil && hint != EraUnknown && ctx.Err() == nil && !isTransportFailure(err) && !isAuthFailure(err) {
		c.forgetEra(origin)
		s, err = c.connectHTTP(ctx, u.String(), opts, EraUnknown)
	}
	var se *HTTPStatusError
	if errors.As(err, &se) && se.StatusCode == http.StatusUnauthorized && ctx.Err() == nil && !errors.Is(err, ErrAuthorizationRequired) {
		if t, terr := newHTTPTransport(u.String(), opts, c.log); terr == nil {
			err = authError(ctx, t.client, t.header, u.String(), se)
			_ = t.Close()
		}
	}
	if err != nil {
		return nil, err
	}
	c.rememberEra(origin, s.Era())
	return s, nil
}

func (c *Client) connectHTTP(ctx context.Context, endpoint string, opts *HTTPClientOptions, hint Era) (*ClientSession, error) {
	t, err := newHTTPTransport(endpoint, opts, c.log)
	if err != nil {
		return nil, err
	}
	return c.connect(ctx, t, connectConfig{http: t, eraHint: hint})
}

// cachedEra returns the era remembered for origin.
func (c *Client) cachedEra(origin string) Era {
	c.eraMu.Lock()
	defer c.eraMu.Unlock()
	return c.eras[origin]
}

func (c *Client) rememberEra(origin string, e Era) {
	c.eraMu.Lock()
	defer c.eraMu.Unlock()
	if c.eras == nil {
		c.eras = make(map[string]Era)
	}
	if len(c.eras) >= maxCachedOrigins {
		clear(c.eras)
	}
	c.eras[origin] = e
}

func (c *Client) forgetEra(origin string) {
	c.eraMu.Lock()
	defer c.eraMu.Unlock()
	delete(c.eras, origin)
}

// maxCachedOrigins bounds the per-origin era cache.
const maxCachedOrigins = 1024

// isTransportFailure reports whether err is a failure to talk to the HTTP
// server at all (refused connection, DNS, TLS), as opposed to an answer or
// a timeout.
func isTransportFailure(err error) bool {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return false
	}
	return !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled)
}

// isAuthFailure reports whether err is an HTTP 401 or 403: the server
// refuses the client, whatever the era.
func isAuthFailure(err error) bool {
	var se *HTTPStatusError
	return errors.As(err, &se) && (se.StatusCode == http.StatusUnauthorized || se.StatusCode == http.StatusForbidden)
}

// httpTransport is the client side of Streamable HTTP as a jsonrpc.Stream:
// Write sends each message as a POST and, for a request, reads the reply
// (one JSON body or an SSE stream) into the queue Read serves, returning
// only once the response is in (or with the error that prevented it).
// Transport failures are therefore Go errors of the call, never forged
// JSON-RPC errors.
type httpTransport struct {
	endpoint      string
	client        *http.Client
	own           *http.Transport // non-nil when the client is ours
	header        http.Header
	maxMsg        int
	maxReconnects int
	retry         time.Duration
	standalone    bool
	log           *slog.Logger

	incoming chan jsonrpc.Message
	done     chan struct{}
	ctx      context.Context // background work (GET stream); ends on Close
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	// onAbandon is called when a request is given up because its ctx
	// ended (the session sends notifications/cancelled when legacy).
	onAbandon func(id jsonrpc.ID, method string, cause error)

	mu            sync.Mutex
	sessionID     string
	legacyVersion string
	// sidHdr and versionHdr are sessionID and legacyVersion as header
	// values, built once and shared by every request (never mutated).
	sidHdr, versionHdr []string
	getStarted         bool
	fatal              error
	tools              map[string][]paramBinding
	waiting            map[jsonrpc.ID]waiter
	closeOnce          sync.Once
}

// newHTTPTransport makes the transport of one session; its error is
// the Authorizer's.
func newHTTPTransport(endpoint string, o *HTTPClientOptions, log *slog.Logger) (*httpTransport, error) {
	t := &httpTransport{
		endpoint:      endpoint,
		client:        o.HTTPClient,
		header:        http.Header{},
		maxMsg:        o.MaxMessageBytes,
		maxReconnects: o.MaxReconnects,
		retry:         o.DefaultRetry,
		standalone:    !o.NoStandaloneStream,
		log:           log,
		incoming:      make(chan jsonrpc.Message, 16),
		done:          make(chan struct{}),
		tools:         map[string][]paramBinding{},
		waiting:       map[jsonrpc.ID]waiter{},
	}
	if t.maxMsg <= 0 {
		t.maxMsg = DefaultHTTPMaxMessageBytes
	}
	if t.maxReconnects == 0 {
		t.maxReconnects = DefaultHTTPMaxReconnects
	}
	if t.retry <= 0 {
		t.retry = DefaultHTTPRetry
	}
	if t.client == nil {
		t.own = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: DefaultHTTPDialTimeout, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   DefaultHTTPTLSHandshakeTimeout,
			MaxIdleConnsPerHost:   8,
			IdleConnTimeout:       90 * time.Second,
			ExpectContinueTimeout: time.Second,
			ForceAttemptHTTP2:     true,
		}
		t.client = &http.Client{Transport: t.own}
	}
	if o.Authorizer != nil {
		rt, err := o.Authorizer.Wrap(t.client.Transport, endpoint, log)
		if err != nil {
			return nil, err
		}
		c := *t.client
		c.Transport = rt
		t.client = &c
	}
	for k, vs := range o.Header {
		if managedHeader(k) {
			continue
		}
		t.header[k] = append([]string(nil), vs...)
	}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	return t, nil
}

// managedHeader reports whether the transport sets header k itself.
func managedHeader(k string) bool {
	switch http.CanonicalHeaderKey(k) {
	case "Content-Type", "Accept", headerSessionID, headerProtocolVersion, headerMethod, headerName, headerLastEventID:
		return true
	}
	return strings.HasPrefix(http.CanonicalHeaderKey(k), headerParamPrefix)
}

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

// Header values every request shares (never modified).
var (
	hdrJSON       = []string{"application/json"}
	hdrAcceptPost = []string{"application/json, text/event-stream"}
	hdrAcceptSSE  = []string{"text/event-stream"}
)

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
		extra, _, modern = mirroredHeaders(req.Method, req.Params, t.bindings)
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
		if err := t.deliver(rctx, rc, m); err != nil {
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

// waiter is a request waiting for its response: answered is closed and
// the request's streams cancelled once the response is queued.
type waiter struct {
	answered chan struct{}
	cancel   context.CancelFunc
}

// replyContext tracks the reply to one request.
type replyContext struct {
	req      *jsonrpc.Request
	modern   bool
	answered chan struct{}
}

func (rc *replyContext) done() bool {
	select {
	case <-rc.answered:
		return true
	default:
		return false
	}
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

// drainClose reads a little of what is left of a body (so the connection
// can be reused) and closes it (peer.DrainClose).
func drainClose(b io.ReadCloser) { peer.DrainClose(b) }

// readBody reads a response body of at most max bytes (one more when it
// is larger, for the caller to report), in one allocation when the
// length is announced.
func readBody(resp *http.Response, max int) ([]byte, error) {
	if n := resp.ContentLength; n >= 0 && n <= int64(max) {
		b := make([]byte, n)
		if _, err := io.ReadFull(resp.Body, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	return io.ReadAll(io.LimitReader(resp.Body, int64(max)+1))
}
