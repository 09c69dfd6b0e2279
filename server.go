package pmcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/internal/rpcconn"
	"github.com/gopmcp/pmcp/reqstate"
)

// Defaults for ServerOptions.
const (
	DefaultPageSize           = 100
	DefaultPeerRequestTimeout = 60 * time.Second
	// DefaultProgressRate is the sustained number of progress notifications
	// per second a request may send; DefaultProgressBurst updates may go out
	// back to back. A final update (progress >= total) always goes out.
	DefaultProgressRate  = 10
	DefaultProgressBurst = 10
	// DefaultNotificationQueue bounds the resource-updated notifications
	// pending for one listener (a legacy session, a stream connection, a
	// subscriptions/listen stream). When it is full the newest is dropped
	// and counted (see Server.Stats). List-changed notifications need no
	// queue: changes of one list that the client has not been told of yet
	// become one notification.
	DefaultNotificationQueue = 64
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
	// PageSize is how many items a list page holds. Zero means
	// DefaultPageSize.
	PageSize int
	// PeerRequestTimeout bounds each server-to-client request (legacy era).
	// Zero means DefaultPeerRequestTimeout; negative disables.
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
	// pending per listener. Zero or negative means DefaultNotificationQueue.
	NotificationQueue int
	// MaxResourceSubscriptions caps the URIs of one subscriptions/listen
	// resourceSubscriptions filter and the resources/subscribe set of one
	// legacy session (-32602 beyond). Zero means
	// DefaultMaxResourceSubscriptions; negative disables the cap.
	MaxResourceSubscriptions int
	// MaxResourceURIBytes caps the length of one subscribed URI. Zero
	// means DefaultMaxResourceURIBytes; negative disables the cap.
	MaxResourceURIBytes int
	// MaxResourceSubscriptionBytes caps the summed length of the URIs of
	// one listen filter or one legacy session. Zero means
	// DefaultMaxResourceSubscriptionBytes; negative disables the cap.
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
	// progress >= total, always goes out). Zero means DefaultProgressRate
	// and DefaultProgressBurst; a negative value of either lifts the limit
	// (every increasing update goes out).
	ProgressRate, ProgressBurst int

	// DisableAccessLog turns off the access log: one Info record per
	// request written to Logger (see the README's Observability section).
	// It is on whenever Logger is set and enabled at Info.
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
	// replica) and returns ErrSharedKeysRequired without them.
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

// CompletionHandler answers completion/complete.
type CompletionHandler func(ctx context.Context, extra *RequestHandlerExtra, p *CompleteParams) (*CompleteResult, error)

// Server is an MCP server that speaks both protocol eras. Register tools,
// resources and prompts, then serve it over any transport (Serve for a
// stream such as stdio or an in-memory pipe). A Server is safe for
// concurrent use; registration may happen while it serves, and clients are
// told through list_changed notifications.
type Server struct {
	opts   ServerOptions
	info   Implementation
	logger *slog.Logger
	sealer *reqstate.Sealer

	mu        sync.Mutex // guards writes to the registries below
	tools     registry[*serverTool]
	resources registry[*serverResource]
	templates registry[*serverTemplate]
	prompts   registry[*serverPrompt]

	listeners listenerSet

	droppedNotifications atomic.Uint64
	// scoped is set once a registration with Scopes exists (see server_scopes.go).
	scoped atomic.Bool

	// chain and nchain are the composed middleware, nil when there is
	// none; accessLog is whether access records may be written.
	chain     MethodHandler
	nchain    NotificationHandler
	accessLog bool

	tasks  *taskServer
	skills skillSet

	// lastHandshake is the latest legacy handshake with the initialize
	// params it came from: a session whose params are byte-identical
	// shares it instead of keeping its own copy (see initialize).
	lastHandshake atomic.Pointer[keptHandshake]
}

// NewServer returns a Server. It fails only when opts are inconsistent
// (for example malformed request-state keys).
func NewServer(opts ServerOptions) (*Server, error) {
	s := &Server{opts: opts}
	s.info = Implementation{Name: opts.Name, Version: opts.Version, Title: opts.Title}
	if s.info.Name == "" {
		s.info.Name = "pmcp-server"
	}
	if s.info.Version == "" {
		s.info.Version = "0.0.0"
	}
	s.logger = opts.Logger
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	s.accessLog = opts.Logger != nil && !opts.DisableAccessLog
	s.buildChains()
	if opts.EventBus != nil && len(opts.RequestStateKeys) == 0 {
		return nil, ErrSharedKeysRequired
	}
	sealer, err := reqstate.New(reqstate.Options{Keys: opts.RequestStateKeys, TTL: opts.RequestStateTTL})
	if err != nil {
		return nil, fmt.Errorf("pmcp: request-state keys: %w", err)
	}
	s.sealer = sealer
	if opts.Tasks != nil {
		ts, err := newTaskServer(opts.Tasks)
		if err != nil {
			return nil, fmt.Errorf("pmcp: tasks: %w", err)
		}
		s.tasks = ts
	}
	if opts.EventBus != nil {
		_, err := opts.EventBus.Subscribe(func(e ServerEvent) {
			if ev, ok := fromPublic(e); ok {
				s.deliver(ev)
			}
		})
		if err != nil {
			return nil, fmt.Errorf("pmcp: event bus: %w", err)
		}
	}
	return s, nil
}

// Stats are counters operators can watch.
type ServerStats struct {
	// DroppedNotifications counts list-changed/resource-updated
	// notifications dropped because a listener's queue was full.
	DroppedNotifications uint64
	// Listeners is the number of live notification listeners.
	Listeners int
	// RunningTasks is the number of task handlers running in this process
	// (at most TaskOptions.MaxRunningTasks).
	RunningTasks int
}

// Stats returns a snapshot of the server's counters.
func (s *Server) Stats() ServerStats {
	st := ServerStats{DroppedNotifications: s.droppedNotifications.Load(), Listeners: s.listeners.len()}
	if s.tasks != nil {
		st.RunningTasks = len(s.tasks.sem)
	}
	return st
}

func (s *Server) pageSize() int {
	if s.opts.PageSize > 0 {
		return s.opts.PageSize
	}
	return DefaultPageSize
}

func (s *Server) maxRounds() int {
	if s.opts.MaxInputRounds > 0 {
		return s.opts.MaxInputRounds
	}
	return DefaultMaxInputRounds
}

func (s *Server) peerTimeout() time.Duration {
	if s.opts.PeerRequestTimeout == 0 {
		return DefaultPeerRequestTimeout
	}
	return s.opts.PeerRequestTimeout
}

// legacyTasksCapability is the 2025-11-25 tasks capability of a server
// with tasks: every request set it can serve.
var legacyTasksCapability = jsontext.Value(`{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`)

// capabilities reports what the server declares now in era.
// Capabilities set in ServerOptions are declared as they are, but for
// tasks, which each era declares its own way (see eraTasks).
func (s *Server) capabilities(era Era) ServerCapabilities {
	if c := s.opts.Capabilities; c != nil {
		return eraTasks(*c, era)
	}
	c := s.baseCapabilities()
	if s.skills.len() > 0 {
		c.Extensions = map[string]Object{ExtensionSkills: {}}
	}
	if s.tasks != nil {
		if era == EraModern {
			if c.Extensions == nil {
				c.Extensions = make(map[string]Object, 1)
			}
			c.Extensions[ExtensionTasks] = Object{}
		} else {
			c.Tasks = legacyTasksCapability
		}
	}
	return c
}

// eraTasks renders a tasks capability declared in either era's form (the
// 2025-11-25 Tasks member, or the 2026-07-28 tasks extension) in era's
// form: a server declaring ServerOptions.Capabilities (package proxy)
// states once that it serves tasks. c's maps are not written.
func eraTasks(c ServerCapabilities, era Era) ServerCapabilities {
	_, ext := c.Extensions[ExtensionTasks]
	if !ext && c.Tasks == nil {
		return c
	}
	if era == EraModern {
		c.Tasks = nil
		if !ext {
			m := make(map[string]Object, len(c.Extensions)+1)
			maps.Copy(m, c.Extensions)
			m[ExtensionTasks] = Object{}
			c.Extensions = m
		}
		return c
	}
	if c.Tasks == nil {
		c.Tasks = legacyTasksCapability
	}
	if ext {
		m := maps.Clone(c.Extensions)
		delete(m, ExtensionTasks)
		if len(m) == 0 {
			m = nil
		}
		c.Extensions = m
	}
	return c
}

func (s *Server) baseCapabilities() ServerCapabilities {
	c := ServerCapabilities{
		Logging:     Object{},
		Completions: Object{},
	}
	if s.tools.len() > 0 {
		c.Tools = &ListChangedCapability{ListChanged: true}
	}
	if s.prompts.len() > 0 {
		c.Prompts = &ListChangedCapability{ListChanged: true}
	}
	if s.resources.len() > 0 || s.templates.len() > 0 {
		c.Resources = &ResourcesCapability{Subscribe: true, ListChanged: true}
	}
	return c
}

// registry is a name-keyed set with a sorted, copy-on-write snapshot so
// readers on the request path never lock.
type registry[T any] struct {
	snap atomic.Pointer[regSnap[T]]
}

type regSnap[T any] struct {
	byKey map[string]T
	keys  []string // sorted
}

func (r *registry[T]) load() *regSnap[T] {
	if p := r.snap.Load(); p != nil {
		return p
	}
	return &regSnap[T]{}
}

func (r *registry[T]) get(k string) (T, bool) {
	v, ok := r.load().byKey[k]
	return v, ok
}

func (r *registry[T]) len() int { return len(r.load().keys) }

// put and remove must be called with Server.mu held.
func (r *registry[T]) put(k string, v T) {
	old := r.load()
	n := &regSnap[T]{byKey: make(map[string]T, len(old.byKey)+1)}
	for kk, vv := range old.byKey {
		n.byKey[kk] = vv
	}
	n.byKey[k] = v
	n.keys = make([]string, 0, len(n.byKey))
	for kk := range n.byKey {
		n.keys = append(n.keys, kk)
	}
	slices.Sort(n.keys)
	r.snap.Store(n)
}

func (r *registry[T]) remove(ks ...string) int {
	old := r.load()
	n := &regSnap[T]{byKey: make(map[string]T, len(old.byKey))}
	removed := 0
	for kk, vv := range old.byKey {
		if slices.Contains(ks, kk) {
			removed++
			continue
		}
		n.byKey[kk] = vv
	}
	if removed == 0 {
		return 0
	}
	n.keys = make([]string, 0, len(n.byKey))
	for kk := range n.byKey {
		n.keys = append(n.keys, kk)
	}
	slices.Sort(n.keys)
	r.snap.Store(n)
	return removed
}

// page returns the items after cursor (exclusive), at most size of them, and
// the cursor of the next page ("" when done). Cursors are opaque: the
// base64 of the last key served.
func (r *registry[T]) page(cursor string, size int) ([]T, string, error) {
	snap := r.load()
	start := 0
	if cursor != "" {
		after, err := decodeCursor(cursor)
		if err != nil {
			return nil, "", err
		}
		start, _ = slices.BinarySearch(snap.keys, after)
		if start < len(snap.keys) && snap.keys[start] == after {
			start++
		}
	}
	end := min(start+size, len(snap.keys))
	out := make([]T, 0, end-start)
	for _, k := range snap.keys[start:end] {
		out = append(out, snap.byKey[k])
	}
	next := ""
	if end < len(snap.keys) {
		next = encodeCursor(snap.keys[end-1])
	}
	return out, next, nil
}

// ErrInvalidRegistration is wrapped by every registration error.
var ErrInvalidRegistration = errors.New("pmcp: invalid registration")

func regErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidRegistration, fmt.Sprintf(format, args...))
}

// validToolName checks the SHOULD of the spec: 1-128 characters of
// [A-Za-z0-9_.-].
func validToolName(n string) bool {
	if n == "" || len(n) > 128 {
		return false
	}
	return strings.IndexFunc(n, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-')
	}) < 0
}
