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
	"github.com/gopmcp/pmcp/reqstate"
)

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
	// apps is set once a UI resource is registered (see apps.go).
	apps atomic.Bool

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
	// lastMeta is the latest modern request's client capabilities and
	// info, decoded: requests that carry the same bytes share them.
	lastMeta metaCache
	// infoMeta is {serverInfo: &info}, the _meta of most modern results:
	// shared by them, never written (see mergeResultMeta).
	infoMeta Meta
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
	s.infoMeta = Meta{MetaServerInfo: &s.info}
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
	// RunningTasks is the number of task handlers running in this process
	// (at most TaskOptions.MaxRunningTasks).
	RunningTasks int
}

// Stats returns a snapshot of the server's counters.
func (s *Server) Stats() ServerStats {
	st := ServerStats{DroppedNotifications: s.droppedNotifications.Load()}
	if s.tasks != nil {
		st.RunningTasks = len(s.tasks.sem)
	}
	return st
}

func (s *Server) pageSize() int {
	if s.opts.PageSize > 0 {
		return s.opts.PageSize
	}
	return defaultPageSize
}

func (s *Server) maxRounds() int {
	if s.opts.MaxInputRounds > 0 {
		return s.opts.MaxInputRounds
	}
	return DefaultMaxInputRounds
}

func (s *Server) peerTimeout() time.Duration {
	if s.opts.PeerRequestTimeout == 0 {
		return defaultPeerRequestTimeout
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
		c.Extensions = map[string]map[string]any{ExtensionSkills: {}}
	}
	if s.apps.Load() {
		if c.Extensions == nil {
			c.Extensions = make(map[string]map[string]any, 1)
		}
		c.Extensions[ExtensionApps] = map[string]any{}
	}
	if s.tasks != nil {
		if era == EraModern {
			if c.Extensions == nil {
				c.Extensions = make(map[string]map[string]any, 1)
			}
			c.Extensions[ExtensionTasks] = map[string]any{}
		} else {
			c.Tasks = legacyTasksCapability
		}
	}
	return c
}

// declares reports whether the server has declared capability c: from
// ServerOptions.Capabilities when they are explicit, from the registries
// otherwise. The two sources differ on purpose for completion (gated only
// when explicit), skills (gated only by the registry) and resource
// subscriptions (explicit: resources with subscribe; registry: resources).
func (s *Server) declares(c capability) bool {
	if ex := s.opts.Capabilities; ex != nil {
		switch c {
		case capTools:
			return ex.Tools != nil
		case capPrompts:
			return ex.Prompts != nil
		case capResources:
			return ex.Resources != nil
		case capResourcesSubscribe:
			return ex.Resources != nil && ex.Resources.Subscribe
		case capCompletions:
			return ex.Completions != nil
		case capTasks:
			// Declared in either era's form: the legacy capability or the
			// modern extension. Undeclared, tasks must not be served: it
			// needs the task runner only ServerOptions.Tasks starts.
			_, ext := ex.Extensions[ExtensionTasks]
			return len(ex.Tasks) > 0 || ext
		}
		return true
	}
	switch c {
	case capTools:
		return s.tools.len() > 0
	case capPrompts:
		return s.prompts.len() > 0
	case capResources, capResourcesSubscribe:
		return s.resources.len() > 0 || s.templates.len() > 0
	case capTasks:
		return s.tasks != nil
	case capSkills:
		return s.skills.len() > 0
	}
	return true
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
			m := make(map[string]map[string]any, len(c.Extensions)+1)
			maps.Copy(m, c.Extensions)
			m[ExtensionTasks] = map[string]any{}
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
		Logging:     map[string]any{},
		Completions: map[string]any{},
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
