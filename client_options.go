package pmcp

import (
	"log/slog"
	"net/http"
	"time"
)

// The options of the client side — Client, its HTTP transport and one
// call — and the defaults of their fields, in one place. A zero field
// means its default.

// Defaults of ClientOptions. Every limit is on by default; each option field
// says what its zero value means.
const (
	// DefaultClientCallTimeout bounds each request a client sends when the
	// caller's ctx has no deadline of its own.
	DefaultClientCallTimeout = 60 * time.Second
	// defaultProbeTimeout bounds the server/discover probe that decides the
	// era on a stream transport. A server that does not answer in time is
	// treated as a legacy server (the spec's rule for stdio).
	defaultProbeTimeout = 5 * time.Second
	// defaultClientMaxInputRounds caps the input_required rounds one
	// modern-era call may go through before the client gives up.
	defaultClientMaxInputRounds = 8
	// defaultMaxPages caps the pages the All* helpers fetch for one
	// listing.
	defaultMaxPages = 1000
	// defaultClientNotificationQueue is the capacity of the bounded queue
	// between the connection's read loop and the worker that runs the
	// notification handlers. When it is full the newest notification is
	// dropped and logged at Warn (ClientOptions.Logger) with the running
	// count.
	defaultClientNotificationQueue = 256
)

// ClientOptions configures a Client. The zero value works: each field says
// what its zero value means.
type ClientOptions struct {
	// Name and Version identify the client (clientInfo). Empty Name means
	// "pmcp-client", empty Version means "0.0.0". Title is optional.
	Name, Version, Title string

	// Sampling, Elicitation and Roots answer the server's requests for
	// input, in both eras. The capabilities the client declares are derived
	// from which of them are set: a nil handler declares nothing, so a
	// well-behaved server never asks for that kind of input.
	Sampling    SamplingHandler
	Elicitation ElicitationHandler
	Roots       RootsHandler
	// SamplingTools additionally declares sampling.tools (the handler can
	// deal with tools and toolChoice). Ignored without Sampling.
	SamplingTools bool
	// ElicitationURL additionally declares URL-mode elicitation. Ignored
	// without Elicitation.
	ElicitationURL bool

	// Notifications receive the server's notifications. The zero value
	// ignores them all.
	Notifications ClientNotificationHandlers
	// NotificationQueue is the capacity of the notification queue. Zero
	// means 256.
	NotificationQueue int
	// SyncLogMessages runs Notifications.LogMessage on the connection's
	// read loop, as progress is, instead of the notification worker: the
	// records a server sends while serving a call are then handled before
	// the call's result is delivered (a proxy forwards them to the request
	// that caused them). The handler must return quickly and must not call
	// the session. False queues them like every other notification.
	SyncLogMessages bool

	// LogLevel is the minimum level of the log records the client asks
	// for and delivers to Notifications.LogMessage, with one meaning in
	// both eras. LevelUnset (zero) means DefaultLogLevel (info) when a
	// LogMessage handler is set (what a handler set without a level most
	// likely wants, and what a legacy server applies when nobody set a
	// level), and none without one (nobody would read them). LevelOff
	// asks for none. Modern requests carry the
	// level in _meta (none: no logLevel, so the server sends no records);
	// in the legacy era Connect calls logging/setLevel with it when the
	// server declares logging. Either way the session drops records below
	// the level (all of them for LevelOff, for which the legacy protocol
	// has no value), so a server that ignores the level makes no
	// difference. ClientSession.SetLoggingLevel changes it for a legacy
	// session.
	LogLevel LoggingLevel

	// Era forces a protocol era. EraUnknown (zero) negotiates: probe
	// server/discover, fall back to initialize. EraModern skips the
	// fallback; EraLegacy skips the probe.
	Era Era
	// ProbeTimeout bounds the server/discover probe. Zero means 5 s.
	ProbeTimeout time.Duration
	// CallTimeout bounds each request whose ctx has no deadline. Zero
	// means DefaultClientCallTimeout; negative means no bound. In the
	// modern era it applies to each round of a multi-round-trip call, not
	// to the time the input handlers take. Calls made with the same ctx
	// share one timer: a call may run up to 1/64 of CallTimeout longer.
	CallTimeout time.Duration
	// MaxInputRounds caps the input_required rounds of one modern call.
	// Zero means 8.
	MaxInputRounds int
	// MaxPages caps the pages fetched by AllTools, AllResources,
	// AllResourceTemplates and AllPrompts. Zero means 1,000.
	MaxPages int

	// Logger receives the client's diagnostics (dropped notifications,
	// handler panics). Nil discards them.
	Logger *slog.Logger

	// Middleware wraps every request the client sends and every server
	// request for input it answers (see ClientMiddleware), the first one
	// outermost. Nil or empty means none.
	Middleware []ClientMiddleware

	// HostTasks lets a 2025-11-25 server ask for sampling and elicitation
	// as tasks (client-hosted tasks): the client declares
	// capabilities.tasks for the handlers it has, answers such a request
	// with a CreateTaskResult, runs the handler in the background and
	// serves tasks/get, tasks/result, tasks/list and tasks/cancel. At most
	// 16 run at once; they end with the session.
	HostTasks bool
	// AppMIMETypes, when set, declares the MCP Apps extension
	// (ExtensionApps) in the client's capabilities in both eras with these
	// view MIME types, normally []string{AppMIMEType}: the client is a
	// host that renders Apps views (see ReadAppResource).
	AppMIMETypes []string
}

// Defaults of HTTPClientOptions.
const (
	// DefaultHTTPMaxMessageBytes caps one message the server sends over
	// HTTP: a JSON response body, or the data of one server-sent event.
	DefaultHTTPMaxMessageBytes = 16 << 20
	// defaultHTTPMaxReconnects is how many times in a row the client
	// reconnects a legacy SSE stream that broke (by GET with
	// Last-Event-ID) before giving up on it.
	defaultHTTPMaxReconnects = 5
	// defaultHTTPRetry is the reconnection delay when the server announced
	// none with an SSE "retry:" field.
	defaultHTTPRetry = time.Second
	// defaultHTTPDialTimeout and defaultHTTPTLSHandshakeTimeout bound
	// connection set-up of the client's own http.Client (when
	// HTTPClientOptions.HTTPClient is nil). Requests are bounded by the
	// session's call timeout (ClientOptions.CallTimeout).
	defaultHTTPDialTimeout         = 30 * time.Second
	defaultHTTPTLSHandshakeTimeout = 10 * time.Second
	// httpErrorBodyBytes caps how much of an error response is read.
	httpErrorBodyBytes = 64 << 10
	// httpCloseTimeout bounds the DELETE that ends a legacy session.
	httpCloseTimeout = 2 * time.Second
	// maxSessionIDBytes caps an Mcp-Session-Id the client accepts.
	maxSessionIDBytes = 1024
)

// HTTPClientOptions configures the Streamable HTTP transport of
// Client.ConnectHTTP. The zero value (and nil) works.
type HTTPClientOptions struct {
	// HTTPClient sends the requests. Nil means a client of the session's
	// own (dial and TLS timeouts as above, closed with the session) that
	// reuses a connection idle for less than 4 s only, so that it never
	// sends a call on a connection the server is closing at its keep-alive
	// timeout (5 s in Node and uvicorn). A given client is used as
	// configured, nothing of it changed: its Timeout must be zero or
	// longer than any stream the session keeps open (subscriptions, the
	// legacy GET stream), and its transport's IdleConnTimeout should be
	// below the server's keep-alive timeout (http.DefaultTransport's is
	// 90 s): otherwise a call made just as the server closes the idle
	// connection it reuses fails, with io.EOF or a connection reset, and
	// is not retried, since the server may have run it.
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
	// Zero means 5; negative disables reconnection.
	MaxReconnects int
	// DefaultRetry is the reconnection delay when the server gave none.
	// Zero means 1 s.
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

// Bounds of the client's task polling.
const (
	// defaultTaskPollInterval is used when the server suggests none.
	defaultTaskPollInterval = time.Second
	// minTaskPollInterval and maxTaskPollInterval clamp the server's
	// suggestion, so a server can neither make the client spin nor stall.
	minTaskPollInterval = 10 * time.Millisecond
	maxTaskPollInterval = time.Minute
)

// defaultMaxHostedTasks bounds the client-hosted tasks running at once in
// one session; a server asking for more gets -32603.
const defaultMaxHostedTasks = 16

// CallOption tunes one call (CallTool, ReadResource, GetPrompt, Complete).
type CallOption func(*callConfig)

// WithProgress asks the server for progress updates on this call (a fresh
// _meta.progressToken) and routes the matching notifications/progress to
// h until the call returns. h runs on the connection's read loop, before
// the call's own result is read: it must be quick and must not call the
// session (start a goroutine for more).
func WithProgress(h ProgressHandler) CallOption {
	return func(c *callConfig) { c.progress = h }
}

// WithMeta adds members to the request's _meta (for example W3C trace
// context: traceparent, tracestate). Keys the client manages itself (every
// io.modelcontextprotocol/ key and progressToken) are ignored here: they
// would change how the server reads the request.
func WithMeta(m Meta) CallOption {
	return func(c *callConfig) { c.meta = m }
}
