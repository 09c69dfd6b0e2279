package pmcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
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
	// resolve hands the response read from a request's own JSON body
	// straight to the waiting call (rpcconn.ReplySink); set by the Conn
	// before the first Write.
	resolve func(*jsonrpc.Response) bool
	done    chan struct{}
	ctx     context.Context // background work (GET stream); ends on Close
	cancel  context.CancelFunc
	wg      sync.WaitGroup

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

// ownIdleConnTimeout is how long the session's own http.Client keeps an
// idle connection for reuse: below the 5 s keep-alive timeout of the
// commonest servers (Node's http.Server, under the TypeScript SDK's
// servers; uvicorn, under the Python SDK's), with a second to spare for
// the server's idle clock starting before ours (the server goes idle once
// it has written the response, the client once it has read it).
const ownIdleConnTimeout = 4 * time.Second

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
		t.maxReconnects = defaultHTTPMaxReconnects
	}
	if t.retry <= 0 {
		t.retry = defaultHTTPRetry
	}
	if t.client == nil {
		t.own = &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         (&net.Dialer{Timeout: defaultHTTPDialTimeout, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout: defaultHTTPTLSHandshakeTimeout,
			// One idle connection per call in flight, up to many: a
			// session shared by a gateway's callers has as many calls in
			// flight as they do, and a smaller pool closes connections
			// the next calls dial again. Idle ones go after
			// IdleConnTimeout.
			MaxIdleConnsPerHost: 256,
			// A server closes a connection idle for its keep-alive
			// timeout (5 s in Node and uvicorn). When it does so just as
			// the client sends a request on it, the request is lost and
			// the call fails with io.EOF (or a reset): net/http retries a
			// POST on a reused connection only when none of it was
			// written (its bodies are bytes.Readers, so it can), and the
			// client must not retry either, since it cannot tell a server
			// that closed without reading the request from one that ran
			// it and then died (a tools/call may have side effects). The
			// one other provably safe case, the close seen before the
			// request went to the connection, lasts microseconds and is
			// an unexported net/http error: not worth matching its text.
			// The fix is not to reuse a connection the server may be
			// closing: drop it first. It costs nothing under load (a
			// connection in use is not idle) and, after a pause of 4 s
			// or more, one dial (and TLS handshake).
			IdleConnTimeout:       ownIdleConnTimeout,
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

// Header values every request shares (never modified).
var (
	hdrJSON       = []string{"application/json"}
	hdrAcceptPost = []string{"application/json, text/event-stream"}
	hdrAcceptSSE  = []string{"text/event-stream"}
)

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
