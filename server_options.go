package pmcp

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/gopmcp/pmcp/internal/rpcconn"
	"github.com/gopmcp/pmcp/reqstate"
	"github.com/gopmcp/pmcp/tasks"
)

// The options of the server side — Server, its tasks, the Streamable HTTP
// handler and the in-memory event store — and the defaults of their
// fields, in one place. A zero field means its default.

// Defaults for ServerOptions.
const (
	defaultPageSize           = 100
	defaultPeerRequestTimeout = 60 * time.Second
	// defaultProgressRate is the sustained number of progress notifications
	// per second a request may send; defaultProgressBurst updates may go out
	// back to back. A final update (progress >= total) always goes out.
	defaultProgressRate  = 10
	defaultProgressBurst = 10
	// defaultNotificationQueue bounds the resource-updated notifications
	// pending for one listener (a legacy session, a stream connection, a
	// subscriptions/listen stream). When it is full the newest is dropped
	// and counted (see Server.Stats). List-changed notifications need no
	// queue: changes of one list that the client has not been told of yet
	// become one notification.
	defaultNotificationQueue = 64
	// DefaultMaxConcurrentRequests is the number of requests one stream
	// connection or one legacy HTTP session serves at once when
	// ServerOptions.MaxConcurrentRequests is 0; the connection stops
	// reading while it is reached.
	DefaultMaxConcurrentRequests = rpcconn.DefaultMaxConcurrent
)

// ServerOptions configures a Server. The zero value works; each field says
// what its zero value means.
type ServerOptions struct {
	// Name and Version identify the server (serverInfo). Empty Name means
	// "pmcp-server", empty Version means "0.0.0".
	Name, Version string
	// Title is an optional display name.
	Title string
	// Instructions is sent in the initialize and server/discover results.
	Instructions string
	// PageSize is how many items a list page holds. Zero means 100.
	PageSize int
	// PeerRequestTimeout bounds each server-to-client request (legacy era).
	// Zero means 60 s; negative disables.
	PeerRequestTimeout time.Duration
	// RequestStateKeys seal the modern-era requestState. Keys[0] seals, all
	// keys verify. Empty means one random key per Server: fine for a single
	// process, but replicas behind a load balancer must share keys.
	RequestStateKeys []reqstate.Key
	// RequestStateTTL is how long a requestState stays valid. Zero means
	// reqstate.DefaultTTL (5 minutes).
	RequestStateTTL time.Duration
	// MaxInputRounds caps multi-round-trip rounds per request. Zero means
	// DefaultMaxInputRounds.
	MaxInputRounds int
	// CacheTTL is the ttlMs hint put on cacheable modern results. Zero
	// means 0 ms (immediately stale).
	CacheTTL time.Duration
	// Completion answers completion/complete. Nil means every request gets
	// an empty list of values.
	Completion CompletionHandler
	// Logger receives the server's own diagnostics (panics, dropped
	// notifications). Nil means slog.Default's handler is not used: logs are
	// discarded.
	Logger *slog.Logger
	// RootsListChanged is called when a legacy client reports that its roots
	// changed. Nil means the notification is ignored.
	RootsListChanged func(ctx context.Context)
	// MaxConcurrentRequests bounds requests served at once per stream
	// connection or legacy HTTP session. A request waiting for the
	// client's answer to a server-to-client request (sampling,
	// elicitation, roots) does not count meanwhile. Zero means
	// DefaultMaxConcurrentRequests; negative disables.
	MaxConcurrentRequests int
	// NotificationQueue bounds the distinct resource-updated notifications
	// pending per listener. Zero or negative means 64.
	NotificationQueue int
	// MaxResourceSubscriptions caps the URIs of one subscriptions/listen
	// resourceSubscriptions filter and the resources/subscribe set of one
	// legacy session (-32602 beyond). Zero means 1,024; negative disables
	// the cap.
	MaxResourceSubscriptions int
	// MaxResourceURIBytes caps the length of one subscribed URI. Zero
	// means 2,048; negative disables the cap.
	MaxResourceURIBytes int
	// MaxResourceSubscriptionBytes caps the summed length of the URIs of
	// one listen filter or one legacy session. Zero means 64 KiB; negative
	// disables the cap.
	MaxResourceSubscriptionBytes int

	// Middleware wraps every incoming request (see Middleware). The first
	// one is the outermost: it runs first and sees the final outcome. Nil
	// or empty means none, at no cost.
	Middleware []Middleware
	// NameKnown, when set, is asked by Request.NameRegistered about a
	// name of method (tools/call, prompts/get, resources/read and
	// resources/(un)subscribe) that nothing registered on the server has:
	// true counts it as registered. A middleware that serves names of its
	// own (package proxy answers for the names its upstreams last listed)
	// sets it, so that those names are metric label values. It must be
	// cheap, safe for concurrent use, and true only for a bounded set of
	// names chosen by the server, never by callers. Nil means none.
	NameKnown func(method, name string) bool
	// WatchTask, when set, is asked by a 2026-07-28 subscriptions/listen
	// about each of its taskIds that the server's own tasks (TaskOptions)
	// do not have: ok true adds the id to the acknowledgement and sends
	// each task the channel carries as notifications/tasks (the first
	// one the task's current state) until the channel is closed or ctx
	// (the listen's) is done; ok false leaves the id out, as an unknown
	// one. It is for a middleware that serves tasks of its own (package
	// proxy); it must answer false for tasks of another principal than
	// extra's (RequestHandlerExtra.Principal), and the goroutine sending
	// on the channel must stop when ctx is done. Nil means none.
	WatchTask func(ctx context.Context, extra *RequestHandlerExtra, taskID string) (tasks <-chan *DetailedTask, ok bool)
	// NotificationMiddleware wraps every incoming client notification, the
	// first one outermost. Nil or empty means none.
	NotificationMiddleware []NotificationMiddleware
	// ProgressRate is the sustained number of progress notifications per
	// second one request may send, and ProgressBurst how many may go out
	// back to back; the updates above them are dropped (a final update,
	// progress >= total, always goes out). Zero means 10 per
	// second and a burst of 10; a negative value of either lifts the limit
	// (every increasing update goes out).
	ProgressRate, ProgressBurst int

	// DisableAccessLog turns off the access log: one Info record per
	// request written to Logger (see the README's Observability section).
	// It is on whenever Logger is set and enabled at Info. The record's
	// message is "mcp request" and its attributes, in this order, are:
	//
	//	key               value
	//	method            the JSON-RPC method
	//	name              the tool, prompt or resource named (when there is one)
	//	era               "legacy" or "modern" (when known)
	//	protocol_version  the negotiated or declared version (when known)
	//	id                the JSON-RPC id
	//	session           the legacy HTTP session id (when there is one)
	//	transport         TransportInfo.Name: "stdio", "http", "memory", ...
	//	duration          the time the request took, up to its encoded response
	//	outcome           "ok", "tool_error" (a tools/call result with isError)
	//	                  or "error" (a JSON-RPC error)
	//	code              the JSON-RPC error code (outcome "error" only)
	//	response_bytes    the size of the encoded response
	//	principal         the authenticated subject (when there is one)
	//
	// A record never holds arguments, results, tokens, error messages,
	// headers or Metadata values.
	DisableAccessLog bool

	// Tasks turns on tasks in both eras (see TaskOptions). Nil means no
	// tasks: tools/call always answers synchronously and tasks/* get
	// -32601. A Server with tasks holds a store and runners: call Close.
	Tasks *TaskOptions

	// EventBus shares list changes and resource updates with the other
	// replicas of this server (see EventBus). The Server subscribes once in
	// NewServer, for the bus's lifetime, so give each Server its own bus
	// value. Nil means this process's listeners only. A bus means
	// replicas: NewServer then requires RequestStateKeys (shared by every
	// replica) and returns ErrSharedKeysRequired without them. Each
	// Publish the Server makes is bounded by 5 s.
	EventBus EventBus

	// Capabilities, when not nil, is declared at initialize and
	// server/discover instead of the capabilities derived from what is
	// registered, and gates the feature methods the same way: a server
	// whose requests are all answered by a middleware (package proxy)
	// declares what it serves; resources/subscribe then accepts URIs
	// that are not registered (the middleware vouches for them). Tasks
	// declared in either era's form (Tasks, or the tasks extension under
	// Extensions) are declared in each era's own form. Nil means derived
	// from the registrations.
	Capabilities *ServerCapabilities
}

// Defaults of StreamableHTTPOptions. Each limit is on by default; the
// option field documents what zero and negative values mean.
const (
	// DefaultMaxBodyBytes caps a POST body (4 MiB). Larger bodies, whether
	// declared by Content-Length or sent chunked, get 413.
	DefaultMaxBodyBytes = 4 << 20
	// DefaultMaxSessions caps the live legacy sessions; initialize gets 503
	// while the cap is reached.
	DefaultMaxSessions = 4096
	// DefaultSessionIdleTimeout ends a legacy session that has served no
	// request and held no stream for this long.
	DefaultSessionIdleTimeout = 10 * time.Minute
	// defaultNotificationBuffer is the capacity of the bounded queue of
	// progress and log notifications of one request (and of the standalone
	// GET stream). When it is full the newest notification is dropped and
	// counted in StreamableHTTPStats.DroppedNotifications.
	defaultNotificationBuffer = 64
	// defaultKeepAliveInterval is the period of the ": keep-alive" SSE
	// comments on idle streams.
	defaultKeepAliveInterval = 15 * time.Second
	// defaultSSERetry is the reconnection delay announced with "retry:" in
	// the priming event of every legacy SSE stream.
	defaultSSERetry = time.Second
	// defaultMaxListenStreams caps the open subscriptions/listen streams of
	// one handler; more get 503.
	defaultMaxListenStreams = 1024
	// defaultBodyReadTimeout bounds reading one request body, from the
	// moment the handler is called. A body not read to its end by then
	// (or not read at all, because the request was refused) is not
	// drained: the connection is closed after the reply.
	defaultBodyReadTimeout = 30 * time.Second
	// defaultStreamWriteTimeout bounds each write to a client (one SSE
	// batch or one JSON reply); a client that stops reading for longer
	// loses the stream (a legacy client can resume it).
	defaultStreamWriteTimeout = 30 * time.Second
)

// StreamableHTTPOptions configures a StreamableHTTPHandler. The zero value
// is ready to use: every field says what zero means (see the options
// convention in the package documentation).
type StreamableHTTPOptions struct {
	// JSONResponse answers every request with one application/json body
	// instead of an SSE stream. Progress and log notifications are then
	// not sent (legacy sessions route them to the standalone GET stream).
	// Without it, a client that accepts both gets an SSE stream only when
	// the handler sends something before its result or, in the legacy
	// era, is still running after 100 ms (the stream's priming event then
	// lets the client resume it); a quicker reply is one JSON body either
	// way.
	JSONResponse bool
	// MaxBodyBytes caps a POST body. Zero means DefaultMaxBodyBytes;
	// negative disables the cap (the JSON-RPC decoder's limit then too).
	MaxBodyBytes int64
	// MaxSessions caps the live legacy sessions. Zero means
	// DefaultMaxSessions; negative disables the cap.
	MaxSessions int
	// SessionIdleTimeout ends idle legacy sessions. Zero means
	// DefaultSessionIdleTimeout; negative disables expiry.
	SessionIdleTimeout time.Duration
	// NotificationBuffer is the per-request notification queue capacity.
	// Zero or negative means 64.
	NotificationBuffer int
	// KeepAliveInterval is the period of SSE keep-alive comments. Zero
	// means 15 s; negative disables them.
	KeepAliveInterval time.Duration
	// SSERetry is the "retry:" value of legacy priming events. Zero or
	// negative means 1 s.
	SSERetry time.Duration
	// MaxListenStreams caps open subscriptions/listen streams. Zero means
	// 1,024; negative disables the cap.
	MaxListenStreams int
	// BodyReadTimeout bounds reading a request body. Zero means 30 s;
	// negative disables it (a body left unread
	// still closes the connection rather than being drained).
	BodyReadTimeout time.Duration
	// StreamWriteTimeout bounds each write to a client. Zero means 30 s;
	// negative disables it.
	StreamWriteTimeout time.Duration
	// DetachListenStreams serves subscriptions/listen streams without a
	// goroutine or net/http buffers of their own, for servers holding many
	// thousands of them: once a stream (one without taskIds) is
	// acknowledged, its connection is hijacked, the handler returns, and
	// 4 goroutines write the events of every such stream, each write
	// within StreamWriteTimeout (30 s if that is negative). The response carries the headers a middleware
	// set, Connection: close, and ends when the connection closes.
	// Trade-offs: HTTP/1.x only, and only when the ResponseWriter can be
	// hijacked (http.ResponseController); otherwise, as for streams with
	// taskIds, the stream is served as usual. The connection is no longer
	// read, so a client that leaves is noticed on the next write (the next
	// event or keep-alive: set KeepAliveInterval accordingly, not
	// negative). A stalled client holds one writer for up to the write
	// timeout, delaying other streams' events. Streams still count against
	// MaxListenStreams and end on Shutdown and Close; middleware sees the
	// listen request end once the stream is detached.
	DetachListenStreams bool
	// EventStore keeps legacy SSE events for Last-Event-ID resumption. Nil
	// means NewMemoryEventStore with default bounds.
	EventStore EventStore
	// SessionStore shares the records of legacy sessions between
	// replicas, so that one replica can adopt the sessions of a replica
	// that died, and mints replica-named session ids. Nil means one
	// process. Set it with SessionRouter, a shared EventStore and the
	// server's shared RequestStateKeys (package redis has all four; see
	// "Running several replicas" in the README). A call made outside a
	// request (a sweep, a close) is bounded by 5 s.
	SessionStore SessionStore
	// SessionRouter serves the requests naming a session another replica
	// holds, by forwarding them there. Nil means such requests are
	// adopted through SessionStore, or get 404 without one.
	SessionRouter SessionRouter

	// AllowedHosts lists Host values accepted besides the loopback ones:
	// a hostname (or bracketed IPv6 address), matching any port, or
	// host:port, matching that port only; compared case-insensitively.
	// The Host header is always checked (DNS-rebinding protection),
	// whatever interface the connection arrived on: by default only
	// localhost, 127.0.0.0/8 and [::1] pass, so a server listening on a
	// public address must list its public names here. A Host value that
	// is not a valid host with an optional port (1-65535) never passes.
	// A refused Host gets 403.
	AllowedHosts []string
	// DisableHostCheck turns the Host check off (for a server behind a
	// proxy that checks Host itself).
	DisableHostCheck bool
	// AllowedOrigins lists Origin values (scheme://host[:port], compared
	// case-insensitively) accepted besides loopback origins; "*" accepts
	// every origin. Requests without Origin are accepted; any other Origin
	// gets 403.
	AllowedOrigins []string
	// CORS answers preflight requests and adds Access-Control-* headers for
	// allowed origins. Off by default: no CORS headers are ever sent.
	CORS bool

	// Authenticate, when set, runs for every request before anything else
	// is read. An error gets 401 with a bare Bearer challenge, or the
	// status and challenges of an *AuthError it wraps (package auth builds
	// them). Legacy sessions (at initialize) and modern requestStates are
	// bound to the principal: AuthContext.Subject, else the bearer token
	// (by its SHA-256; fill Subject for state that survives token refresh),
	// else the client id. A session used by another principal answers 404,
	// as if unknown; a requestState replayed by another principal gets
	// -32602. A non-nil result naming none of these can open no session
	// (403) and resume no requestState.
	Authenticate func(r *http.Request) (*AuthInfo, *AuthContext, error)
	// InsufficientScope builds the answer to a request whose caller lacks
	// a scope its tool, prompt or resource was registered with (see
	// Tool.Scopes). The transport checks scopes before dispatch (after
	// its header and session checks), with the identity Authenticate
	// returned, and calls it with that AuthContext and every scope the
	// operation needs; the status and challenges of the *AuthError it
	// returns are sent (plug in auth.Authenticator.InsufficientScope,
	// whose challenge names the resource metadata), with the JSON-RPC
	// error of ErrInsufficientScope as body. Nil, or a result that is not a 403
	// *AuthError, sends 403 with `Bearer error="insufficient_scope",
	// scope="…"`. The decision itself is pmcp's: exact scope membership.
	InsufficientScope func(actx *AuthContext, required ...string) error
}

// Defaults for TaskOptions.
const (
	// defaultMaxRunningTasks bounds the task handlers running at once (one
	// goroutine each). A call that would exceed it runs synchronously when
	// its tool allows that, else it gets -32603.
	defaultMaxRunningTasks = 1_000
	// defaultTaskInputWindow is how long a 2026-07-28 tools/call waits for
	// its task-capable handler before it creates the task. A handler that
	// asks for input with RequireInput within the window ends the call with
	// input_required and no task (multi-round-trip input is settled before
	// the task exists); one that returns within it still gets a task, which
	// is complete at once.
	defaultTaskInputWindow = 20 * time.Millisecond
)

// TaskOptions turn on tasks (ServerOptions.Tasks). The zero value works.
type TaskOptions struct {
	// Store keeps the tasks. Nil means a tasks.MemoryStore built from
	// StoreOptions, owned (and closed) by the Server. A store shared by
	// replicas must be given here, with the same options on every replica.
	Store tasks.Store
	// StoreOptions configure the default memory store (ignored with Store).
	StoreOptions tasks.Options
	// MaxRunningTasks bounds the task handlers running at once in this
	// process (one goroutine each): a call that would exceed it runs
	// synchronously when its tool allows that, else it gets -32603. Zero
	// means 1,000.
	MaxRunningTasks int
	// ReplicaID names this process as the lease holder of the tasks it
	// runs. Empty means a random id.
	ReplicaID string
	// LeaseTTL is the lease a runner holds and renews every LeaseTTL/3.
	// Zero means tasks.DefaultLeaseTTL.
	LeaseTTL time.Duration
	// InputWindow is how long a 2026-07-28 tools/call waits for its
	// task-capable handler before it creates the task. A handler that asks
	// for input with RequireInput within the window ends the call with
	// input_required and no task (multi-round-trip input is settled before
	// the task exists); one that returns within it still gets a task, which
	// is complete at once. Zero means 20 ms; negative means the task is created before the handler starts (then a
	// RequireInput goes through the task: input_required and tasks/update).
	InputWindow time.Duration
}

// Defaults of MemoryEventStoreOptions.
const (
	// DefaultEventStoreMaxStreamEvents is how many events the in-memory
	// event store keeps per stream; older events of a longer stream are
	// evicted first.
	DefaultEventStoreMaxStreamEvents = 256
	// DefaultEventStoreMaxBytes caps the memory the in-memory event store
	// holds across all sessions (16 MiB): event payloads plus an estimate
	// of the store's own bookkeeping per event, stream and session. When it
	// is exceeded the oldest events, whatever their session, are evicted
	// first.
	DefaultEventStoreMaxBytes = 16 << 20
	// DefaultEventStoreMaxSessionBytes caps, the same way, what one session
	// holds in the in-memory event store (2 MiB): a session that exceeds it
	// loses its own oldest events, so it cannot push another session's
	// events out unless the sessions together fill DefaultEventStoreMaxBytes.
	DefaultEventStoreMaxSessionBytes = 2 << 20
)

// MemoryEventStoreOptions bound the store NewMemoryEventStore returns.
// Zero fields mean the defaults; negative fields disable that bound.
type MemoryEventStoreOptions struct {
	// MaxStreamEvents caps the events kept per stream. Zero means
	// DefaultEventStoreMaxStreamEvents.
	MaxStreamEvents int
	// MaxBytes caps the memory kept in total: payloads plus bookkeeping
	// (see DefaultEventStoreMaxBytes). Zero means DefaultEventStoreMaxBytes.
	MaxBytes int64
	// MaxSessionBytes caps the memory kept for one session, counted as
	// MaxBytes is. Zero means DefaultEventStoreMaxSessionBytes.
	MaxSessionBytes int64
}

// Bounds on client-supplied inputResponses (modern era). They are checked at
// ingress, before any handler runs. DefaultMaxInputResponses and
// DefaultMaxInputTotalBytes also bound a tasks/update (its inputResponses
// and its params), in the server and in proxy.
const (
	DefaultMaxInputResponses     = 64
	DefaultMaxInputResponseBytes = 64 << 10
	DefaultMaxInputTotalBytes    = 256 << 10
	defaultMaxInputDepth         = 32
	// DefaultMaxInputRounds caps how many input_required rounds one request
	// may go through before the server gives up with an error.
	DefaultMaxInputRounds = 16
)

// Bounds on resource subscriptions: the resourceSubscriptions filter of one
// modern subscriptions/listen stream, and the resources/subscribe set of
// one legacy session. Beyond them the request fails with -32602.
const (
	// defaultMaxResourceSubscriptions caps the URIs of one listen filter or
	// one legacy session.
	defaultMaxResourceSubscriptions = 1024
	// defaultMaxResourceURIBytes caps the length of one subscribed URI.
	defaultMaxResourceURIBytes = 2048
	// defaultMaxResourceSubscriptionBytes caps the summed length of the
	// URIs of one listen filter or one legacy session (64 KiB).
	defaultMaxResourceSubscriptionBytes = 64 << 10
)

// defaultDetachedWriters is the number of goroutines that write the events
// of detached listen streams (StreamableHTTPOptions.DetachListenStreams).
const defaultDetachedWriters = 4

// defaultSessionStoreTimeout bounds each SessionStore call the handler
// makes outside a request's own context (recording a session after its
// initialize was answered, deleting it when it ends).
const defaultSessionStoreTimeout = 5 * time.Second

// defaultEventBusPublishTimeout bounds one EventBus.Publish made by a
// Server (on AddTool, RemoveTools, NotifyResourceUpdated, ...).
const defaultEventBusPublishTimeout = 5 * time.Second
