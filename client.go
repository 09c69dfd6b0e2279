package pmcp

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/internal/rpcconn"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// SamplingHandler answers a server's sampling/createMessage: a real
// server-to-client request in the legacy era, an entry of an
// input_required result in the modern era. Both eras go through the same
// handler.
type SamplingHandler func(ctx context.Context, p *CreateMessageParams) (*CreateMessageResult, error)

// ElicitationHandler answers a server's elicitation/create (form mode, and
// URL mode when ClientOptions.ElicitationURL is set). Declining or
// cancelling is an ElicitResult with Action "decline" or "cancel", not an
// error.
type ElicitationHandler func(ctx context.Context, p *ElicitParams) (*ElicitResult, error)

// RootsHandler answers a server's roots/list.
type RootsHandler func(ctx context.Context) (*ListRootsResult, error)

// ProgressHandler receives the notifications/progress of one call (see
// WithProgress).
type ProgressHandler func(ctx context.Context, p *ProgressParams)

// ClientNotificationHandlers receive the server's notifications. Every
// field may be nil (the notification is then ignored).
//
// They run one at a time, in arrival order, on a worker goroutine owned by
// the session and fed by a bounded queue (ClientOptions.NotificationQueue,
// 256 by default), so they may call the session (for
// example ListTools after a list change) but should not take long: while
// one runs, later notifications wait and, once the queue is full, are
// dropped (each drop is logged at Warn on ClientOptions.Logger). Their
// ctx ends when the session closes.
type ClientNotificationHandlers struct {
	// LogMessage receives notifications/message at or above
	// ClientOptions.LogLevel (info when unset), in both eras.
	LogMessage func(ctx context.Context, p *LoggingMessageParams)
	// ToolsListChanged, PromptsListChanged and ResourcesListChanged receive
	// the list-changed notifications: pushed by a legacy server, delivered
	// on a Listen subscription by a modern one.
	ToolsListChanged     func(ctx context.Context)
	PromptsListChanged   func(ctx context.Context)
	ResourcesListChanged func(ctx context.Context)
	// ResourceUpdated receives notifications/resources/updated (after
	// Subscribe in the legacy era, on a Listen subscription in the modern).
	ResourceUpdated func(ctx context.Context, p *ResourceUpdatedParams)
	// SubscriptionAcknowledged receives the filter a modern server agreed
	// to honour for a Listen subscription; p.Meta carries the
	// subscription id.
	SubscriptionAcknowledged func(ctx context.Context, p *SubscriptionsAckParams)
	// ElicitationComplete receives notifications/elicitation/complete: a
	// legacy (2025-11-25) server saying that the out-of-band step of a
	// URL-mode elicitation finished, so a request it refused with
	// URL-elicitation-required (-32042) may be retried. p.ElicitationID is
	// the server's opaque id, untrusted. Only sent to clients that declare
	// URL-mode elicitation (ClientOptions.ElicitationURL).
	ElicitationComplete func(ctx context.Context, p *ElicitationCompleteParams)
	// TaskStatus receives task status pushed by the server: the 2025-11-25
	// notifications/tasks/status, and the 2026-07-28 notifications/tasks
	// on a Listen subscription whose filter names TaskIDs. For the tasks
	// the session created (CallToolTask) both eras need no further call:
	// a modern session opens that subscription itself.
	TaskStatus func(ctx context.Context, st *DetailedTask)
}

// clientDrainTimeout bounds how long the session lets the handlers of
// server-to-client requests run once the server has closed its side.
const clientDrainTimeout = 5 * time.Second

// Client is an MCP client configuration: identity, handlers and limits. It
// is immutable and may open any number of sessions with Connect.
type Client struct {
	opts ClientOptions
	info Implementation
	log  *slog.Logger
	// logLevel is ClientOptions.LogLevel resolved (see there): a real
	// level, or LevelOff for none.
	logLevel LoggingLevel
	// modern lists the modern versions the client speaks, newest (and
	// preferred) first; tests substitute it.
	modern []string

	// eras caches the era negotiated per HTTP origin (ConnectHTTP).
	eraMu sync.Mutex
	eras  map[string]Era

	// chain is the composed Middleware, nil when there is none.
	chain ClientHandler
}

// NewClient returns a Client for opts.
func NewClient(opts ClientOptions) *Client {
	c := &Client{opts: opts, modern: modernVersions}
	c.info = Implementation{Name: opts.Name, Version: opts.Version, Title: opts.Title}
	if c.info.Name == "" {
		c.info.Name = "pmcp-client"
	}
	if c.info.Version == "" {
		c.info.Version = "0.0.0"
	}
	c.log = opts.Logger
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.logLevel = resolveClientLogLevel(opts)
	c.buildChain()
	return c
}

// capabilities returns the capabilities the client declares in era e,
// derived from the handlers that are set. In the legacy era a roots
// handler also declares roots.listChanged (see
// ClientSession.NotifyRootsListChanged); the modern era has no such flag.
func (c *Client) capabilities(e Era) *ClientCapabilities {
	caps := &ClientCapabilities{}
	if c.opts.Sampling != nil {
		caps.Sampling = &SamplingCapability{}
		if c.opts.SamplingTools {
			caps.Sampling.Tools = map[string]any{}
		}
	}
	if c.opts.Elicitation != nil {
		caps.Elicitation = &ElicitationCapability{Form: map[string]any{}}
		if c.opts.ElicitationURL {
			caps.Elicitation.URL = map[string]any{}
		}
	}
	if c.opts.Roots != nil {
		caps.Roots = &RootsCapability{ListChanged: e == EraLegacy}
	}
	if c.opts.HostTasks && e == EraLegacy && (c.opts.Sampling != nil || c.opts.Elicitation != nil) {
		caps.Tasks = hostedTasksCapability(c.opts.Sampling != nil, c.opts.Elicitation != nil)
	}
	if len(c.opts.AppMIMETypes) > 0 {
		caps.Extensions = map[string]map[string]any{ExtensionApps: {"mimeTypes": c.opts.AppMIMETypes}}
	}
	return caps
}

func (c *Client) callTimeout() time.Duration {
	if c.opts.CallTimeout == 0 {
		return DefaultClientCallTimeout
	}
	return c.opts.CallTimeout
}

func (c *Client) probeTimeout() time.Duration {
	if c.opts.ProbeTimeout <= 0 {
		return defaultProbeTimeout
	}
	return c.opts.ProbeTimeout
}

func (c *Client) maxInputRounds() int {
	if c.opts.MaxInputRounds <= 0 {
		return defaultClientMaxInputRounds
	}
	return c.opts.MaxInputRounds
}

func (c *Client) maxPages() int {
	if c.opts.MaxPages <= 0 {
		return defaultMaxPages
	}
	return c.opts.MaxPages
}

// negotiated is what Connect learned about the server. Immutable once
// stored.
type negotiated struct {
	era          Era
	version      string
	serverInfo   *Implementation
	caps         ServerCapabilities
	instructions string
	// meta is the pre-encoded static part of the modern request _meta:
	// protocolVersion, clientCapabilities, clientInfo and logLevel.
	meta map[string]jsontext.Value
	// metaJSON is meta encoded once (keys sorted), the _meta of every
	// request that adds nothing to it; nil in the legacy era.
	metaJSON jsontext.Value
}

// ClientSession is one connection to a server, opened by Client.Connect.
// Its methods are safe for concurrent use. Close it when done: it owns a
// goroutine that reads the connection and one that runs the notification
// handlers.
type ClientSession struct {
	c    *Client
	conn *rpcconn.Conn
	neg  atomic.Pointer[negotiated]
	// http is the Streamable HTTP transport of a ConnectHTTP session
	// (nil over a stream). Cancelling a modern call over HTTP closes its
	// response stream instead of sending notifications/cancelled.
	http *httpTransport
	// eraHint is the era remembered for the server (ConnectHTTP's
	// per-origin cache), used like ClientOptions.Era.
	eraHint Era
	// transport describes the connection (see Transport).
	transport TransportInfo

	// ctx is the session's lifetime: cancelled when the connection ends.
	ctx    context.Context
	cancel context.CancelFunc
	// deadline is the latest shared call timeout (see sharedTimeout).
	deadline atomic.Pointer[sharedDeadline]

	progressMu  sync.Mutex
	progress    map[int64]ProgressHandler
	progressSeq atomic.Int64

	listenMu sync.Mutex
	listens  map[jsonrpc.ID]context.CancelCauseFunc

	// logLevel is the minimum level of the records delivered to
	// Notifications.LogMessage (a LoggingLevel; see ClientOptions.LogLevel).
	logLevel atomic.Uint32

	queue      chan clientEvent
	workerDone chan struct{}
	dropped    atomic.Uint64
	// queuedBytes is the size of the params waiting in queue.
	queuedBytes atomic.Int64
	// handlers counts client handlers running on session goroutines
	// (notification handlers and legacy server-to-client requests), so
	// that Close called from one of them does not wait for itself.
	handlers atomic.Int64

	runDone   chan struct{}
	runErr    error
	closeOnce sync.Once
	closeErr  error

	// hosted holds the client-hosted tasks (ClientOptions.HostTasks).
	hosted hostedTasks
	// tasksWatch follows the status of the tasks a modern session
	// created (see taskWatch).
	tasksWatch taskWatch
}

// Connect opens a session over st (stdio, an in-memory pipe, a command
// transport: any jsonrpc.Stream) and negotiates the protocol era: it probes
// server/discover at 2026-07-28 and falls back to the legacy initialize
// handshake when the server does not speak the modern protocol (see
// ClientOptions.Era to force one). ctx bounds the negotiation only, not the
// session. The session owns st from now on; on failure st is closed and
// nothing keeps running.
func (c *Client) Connect(ctx context.Context, st jsonrpc.Stream) (*ClientSession, error) {
	if st == nil {
		return nil, errors.New("pmcp: Connect: nil stream")
	}
	return c.connect(ctx, st, connectConfig{})
}

// connectConfig carries what a transport-specific Connect adds.
type connectConfig struct {
	http    *httpTransport
	eraHint Era
}

// connect opens a session over st: the one code path of every transport.
func (c *Client) connect(ctx context.Context, st jsonrpc.Stream, cfg connectConfig) (*ClientSession, error) {
	s := &ClientSession{
		http:       cfg.http,
		eraHint:    cfg.eraHint,
		c:          c,
		progress:   make(map[int64]ProgressHandler),
		listens:    make(map[jsonrpc.ID]context.CancelCauseFunc),
		workerDone: make(chan struct{}),
		runDone:    make(chan struct{}),
	}
	n := c.opts.NotificationQueue
	if n <= 0 {
		n = defaultClientNotificationQueue
	}
	s.queue = make(chan clientEvent, n)
	s.logLevel.Store(uint32(c.logLevel))
	s.transport = clientTransport(st, cfg.http)
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.conn = rpcconn.NewConn(&idStream{Stream: st}, rpcconn.HandlerFunc(s.handle), rpcconn.ConnOptions{
		MarshalResult:   func(v any) (jsontext.Value, error) { b, err := Marshal(v); return b, err },
		Logger:          c.log,
		OnCallCancelled: s.onCallCancelled,
		// After the server closes its side, handlers still answering it
		// (a legacy sampling request waiting for a user) get this long.
		DrainTimeout: clientDrainTimeout,
	})
	if s.http != nil {
		s.http.onAbandon = s.onCallCancelled
	}
	go s.worker()
	go func() {
		err := s.conn.Run(s.ctx)
		// Release the stream as soon as the connection ends (for a command
		// transport this reaps the process).
		_ = s.conn.Close()
		s.cancel()
		s.runErr = err
		close(s.runDone)
	}()
	if err := s.negotiate(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// Close ends the session: it closes the stream (which, for a command
// transport, shuts the server process down), cancels the calls and
// handlers in flight, and waits for the session's goroutines. When called
// from one of the session's own handlers it does not wait for that handler
// (which could never return); the goroutines then end as soon as the
// handlers return. Later calls return the first call's result.
func (s *ClientSession) Close() error {
	s.closeOnce.Do(func() {
		err := s.conn.Close()
		if errors.Is(err, jsonrpc.ErrClosed) {
			err = nil
		}
		s.closeErr = err
		s.cancel()
		if d := s.deadline.Swap(nil); d != nil && d.cancel != nil {
			d.cancel() // the earlier ones end at their deadlines
		}
		s.hosted.close()
		s.tasksWatch.wait()
	})
	if s.handlers.Load() == 0 {
		<-s.runDone
		<-s.workerDone
	}
	return s.closeErr
}

// Wait blocks until the connection has ended (Close, the server closing
// its side, a fatal transport error) and the session's goroutines have
// returned, and reports why: nil when the server closed the connection
// cleanly or Close was called.
func (s *ClientSession) Wait() error {
	<-s.runDone
	<-s.workerDone
	s.tasksWatch.wait()
	if errors.Is(s.runErr, jsonrpc.ErrClosed) || errors.Is(s.runErr, context.Canceled) {
		return nil
	}
	return s.runErr
}

// Done returns a channel closed when the connection has ended, for
// instance because the server process exited.
func (s *ClientSession) Done() <-chan struct{} { return s.runDone }

func (s *ClientSession) negotiation() *negotiated {
	if n := s.neg.Load(); n != nil {
		return n
	}
	return &negotiated{}
}

// Era returns the negotiated protocol era.
func (s *ClientSession) Era() Era { return s.negotiation().era }

// ProtocolVersion returns the negotiated protocol version.
func (s *ClientSession) ProtocolVersion() string { return s.negotiation().version }

// ServerInfo returns the server's self-reported implementation (nil when
// it sent none). Informational only: never use it for authorization.
func (s *ClientSession) ServerInfo() *Implementation {
	if i := s.negotiation().serverInfo; i != nil {
		cp := *i
		return &cp
	}
	return nil
}

// ServerCapabilities returns a copy of the capabilities the server
// declared at initialize or server/discover. The maps inside are shared
// with the session: do not modify them.
func (s *ClientSession) ServerCapabilities() *ServerCapabilities {
	caps := s.negotiation().caps
	return &caps
}

// Instructions returns the server's usage instructions, "" when none.
func (s *ClientSession) Instructions() string { return s.negotiation().instructions }

// SessionID returns the legacy Mcp-Session-Id the server assigned to this
// session over Streamable HTTP; "" over streams (stdio, in-memory,
// command), in the modern era, and when the server assigned none. It is
// the value of OpenTelemetry's mcp.session.id on client spans.
func (s *ClientSession) SessionID() string {
	if s.http == nil {
		return ""
	}
	s.http.mu.Lock()
	defer s.http.mu.Unlock()
	return s.http.sessionID
}

// idSlotKey is the context key of an *idSlot: a Call made with such a ctx
// reports the JSON-RPC id it was given, before the request is written.
type idSlotKey struct{}

type idSlot struct {
	onID func(id jsonrpc.ID)
	// req is the client middleware's request the slot was made for
	// (clientTerminal): it learns its id, and the transport what the
	// client encoded for it (ClientRequest.own). prev is the slot of the
	// ctx it was made in, which learns the id too.
	req  *ClientRequest
	prev *idSlot
}

// report gives id to the slot and the slots it chains.
func (slot *idSlot) report(id jsonrpc.ID) {
	for ; slot != nil; slot = slot.prev {
		if slot.req != nil {
			slot.req.ID = id
		}
		if slot.onID != nil {
			slot.onID(id)
		}
	}
}

// idStream wraps the session's stream to learn the ids of chosen calls
// (subscriptions/listen), which the connection allocates internally.
type idStream struct {
	jsonrpc.Stream
}

// SetReplySink passes the Conn's resolve function on to the stream, if it
// takes one (rpcconn.ReplySink).
func (st *idStream) SetReplySink(resolve func(*jsonrpc.Response) bool) {
	if rs, ok := st.Stream.(rpcconn.ReplySink); ok {
		rs.SetReplySink(resolve)
	}
}

func (st *idStream) Write(ctx context.Context, m jsonrpc.Message) error {
	if r, ok := m.(*jsonrpc.Request); ok && r.ID.IsValid() {
		if slot, ok := ctx.Value(idSlotKey{}).(*idSlot); ok {
			slot.report(r.ID)
		}
	}
	return st.Stream.Write(ctx, m)
}

// resolveClientLogLevel gives ClientOptions.LogLevel its one meaning for
// both eras: unset is DefaultLogLevel with a LogMessage handler and
// LevelOff without; anything out of range is LevelOff.
func resolveClientLogLevel(opts ClientOptions) LoggingLevel {
	switch lvl := opts.LogLevel; {
	case lvl == LevelUnset && opts.Notifications.LogMessage != nil:
		return DefaultLogLevel
	case lvl >= LevelDebug && lvl <= LevelEmergency:
		return lvl
	}
	return LevelOff
}
