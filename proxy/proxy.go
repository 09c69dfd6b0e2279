// Package proxy serves MCP from upstream MCP servers: a pmcp.Server whose
// tools, resources, prompts, completions, subscriptions and notifications
// come from client sessions with one or more upstreams (a child process over
// stdio, a remote Streamable HTTP endpoint, any jsonrpc.Stream).
//
// The downstream side is an ordinary pmcp.Server, so it serves both eras
// over every transport; the upstream side is an ordinary pmcp.ClientSession,
// which negotiates its own era. The proxy translates between them:
//
//   - Requests for input. A modern (2026-07-28) downstream client gets an
//     input_required result for each elicitation, sampling or roots request
//     of the upstream (a legacy server-to-client request or a modern
//     input_required round alike); the upstream call is parked meanwhile,
//     under a random id sealed into the requestState (bounded by
//     Options.MaxParked and Options.ParkTimeout), and resumed when the
//     client retries with its inputResponses. A legacy downstream client
//     gets real server-to-client requests.
//   - Notifications. Progress of a call is forwarded in order to the
//     downstream request that caused it; log records to the call in flight
//     (filtered by its level); list changes and resource updates to every
//     downstream session or listen stream that asked. A modern upstream is
//     listened to (subscriptions/listen), a legacy one pushes.
//   - Cancellation: a cancelled downstream request cancels the upstream call
//     (notifications/cancelled, or a closed HTTP stream).
//   - _meta: the request's _meta (W3C trace context and any other member)
//     is passed upstream, except the members the client manages
//     (io.modelcontextprotocol/* and progressToken).
//   - Errors: a JSON-RPC error of the upstream reaches the downstream
//     unchanged (code, message, data). JSON-RPC ids are the client's own.
//   - Tasks: a task-augmented tools/call becomes one upstream, in the
//     upstream's era; the task's id carries the upstream's prefix and
//     tasks/* are routed back to the upstream session that owns it
//     (see tasks.go). Tasks and the skills extension are declared; the
//     upstreams that serve them answer (skills.go).
//
// # Process model
//
// By default every legacy downstream session gets its own upstream session
// (for a command upstream: its own child process), so no state leaks
// between users; it is closed when the downstream session ends. Modern
// downstream requests have no session and share one upstream session per
// upstream, as every request does with Options.Shared. An upstream session
// that ends is re-dialed on the next request, at most Options.MaxRestarts
// times per slot (a failed dial counts); the requests in flight get a
// -32603 error naming the upstream and why it ended (a child's exit
// status). Once the re-dials ran out, the slot's requests fail at once
// with a -32603 error naming the upstream, without dialing, for
// DefaultRestartReset; then the slot may dial again. Each call is bounded
// by its upstream's Upstream.CallTimeout, and an upstream with a Breaker
// is not contacted for a cool-down once it failed that many times in a
// row (breaker.go); Status shows both. SetUpstreams changes the upstreams
// while serving (reload.go).
//
// # Credentials
//
// The upstream authenticates with its own credentials (the DialFunc's
// HTTPClientOptions: Header, OAuth with a token store, or a token source
// of its own such as oauthclient.NewClientCredentials or
// oauthclient.NewTokenExchange as the Authorizer). Nothing of the
// downstream request is sent upstream: its Authorization header is never
// forwarded, and CommandOptions.HeaderToEnv refuses to map it. Headers a
// child is made for (HeaderToEnv, named in Upstream.SessionHeaders) give
// the modern requests carrying them a child of their own per distinct
// value, at most Options.MaxHeaderSessions per upstream.
//
// # Aggregation
//
// With several upstreams (or Options.Prefix), every upstream has a Name and
// its tools and prompts are listed as Name + Separator + name (Options.Separator, "_" by
// default) and routed back by that prefix. New refuses upstream names that
// would make the prefixes ambiguous (see Upstream.Name), and a list never
// shows a name twice: of items with one name (a misbehaving upstream's, or
// one resource URI served by two upstreams) the first is listed and the
// others are left out with a logged warning. Resources keep their URIs and
// a read is tried on each upstream in order, but for MCP Apps views: an
// upstream's ui://rest is listed, read and named by its tools as
// ui://Name + Separator + rest (apps.go). Options.AllowTools and
// Options.DenyTools are globs (path.Match) on the names the downstream sees,
// applied to tools/list and to tools/call alike (pmcp.DenyTools). With them,
// a call of a tool the upstream does not list is answered by the proxy,
// exactly as a denied tool is, rather than in the upstream's words, so that
// a caller cannot tell which names the globs hide.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/internal/workpool"
	"github.com/gopmcp/pmcp/reqstate"
)

// Defaults of Options.
const (
	// DefaultMaxParked bounds the modern downstream requests parked
	// between rounds, waiting for their client's input.
	DefaultMaxParked = 256
	// DefaultParkTimeout is how long a parked request waits for its
	// client's retry before the upstream call is cancelled.
	DefaultParkTimeout = 2 * time.Minute
	// DefaultMaxRestarts bounds how often one upstream slot is re-dialed
	// after its session ended.
	DefaultMaxRestarts = 3
	// DefaultRestartReset is how long an upstream session must have run
	// before it ended for its slot's restart count to start afresh, so a
	// long-lived gateway survives occasional crashes but not a crash loop;
	// it is also how long a slot whose re-dials ran out stays down
	// (answering at once with an error) before it may dial again.
	DefaultRestartReset = time.Minute
	// DefaultCallTimeout bounds one upstream call whose downstream request
	// has no deadline (waiting for a user's input included).
	DefaultCallTimeout = 10 * time.Minute
	// DefaultListTimeout bounds each upstream's part of a list aggregated
	// from several upstreams (see Options.ListTimeout).
	DefaultListTimeout = 10 * time.Second
	// DefaultSeparator joins an upstream's name and a tool or prompt name.
	DefaultSeparator = "_"
	// DefaultMaxHeaderSessions bounds the upstream sessions one upstream
	// keeps open for distinct values of its SessionHeaders.
	DefaultMaxHeaderSessions = 16
)

// Upstream is one upstream server.
type Upstream struct {
	// Name identifies the upstream in errors and logs and, when there are
	// several upstreams, prefixes its tools and prompts. Required with
	// several upstreams; no name joined with the Separator may then begin
	// another's ("a" and "a_b" with "_" are refused: "a_b_x" would be a's
	// tool "b_x" and a_b's tool "x"), so that every listed name routes to
	// one upstream whatever tools the upstreams list later.
	Name string
	// Dial opens a session with the upstream (see HTTP and Command).
	Dial DialFunc
	// SessionHeaders names the downstream HTTP headers an upstream
	// session is made for: the keys of a command's
	// CommandOptions.HeaderToEnv. A request with no session of its own
	// (every modern-era request) then shares an upstream session only
	// with the requests that carry the same values of these headers, and
	// Dial gets those values, and no other header, in Downstream.Header;
	// requests that carry none of them share the plain one. At most
	// Options.MaxHeaderSessions such sessions are open per upstream.
	// Ignored with Options.Shared (one session for all, no header). May
	// not name Authorization.
	SessionHeaders []string
	// CallTimeout bounds each call to the upstream (tools/call,
	// prompts/get, resources/read, waiting for the downstream's input
	// included) and each of its other requests (instead of
	// Options.Client.CallTimeout). A call without an answer by then
	// fails with -32603 naming the upstream, and counts as a failure of
	// the upstream (see Breaker). Zero means Options.Client.CallTimeout,
	// else DefaultCallTimeout.
	CallTimeout time.Duration
	// Breaker configures the upstream's circuit breaker; the zero value
	// has none.
	Breaker Breaker
	// Fingerprint identifies what Dial connects to and how (a digest of
	// its URL or command, credentials, ...), for SetUpstreams: an
	// upstream given again with the same Name, a non-empty Fingerprint
	// and the same other fields keeps its sessions; any other is
	// replaced. Empty means always replaced.
	Fingerprint string
}

// Options configures a Proxy. Zero values mean the documented defaults.
type Options struct {
	// Upstreams are the servers proxied, at least one.
	Upstreams []Upstream
	// Shared makes every downstream session use one upstream session per
	// upstream (for a command: one child, multiplexed). False means one
	// upstream session per legacy downstream session.
	Shared bool
	// Prefix prefixes the tools and prompts of a single upstream with its
	// Name too (several upstreams always are), so that names do not change
	// when a second upstream is added.
	Prefix bool
	// Separator joins an upstream's Name and its tool and prompt names.
	// "" means DefaultSeparator.
	Separator string
	// AllowTools, when not empty, lists the globs (path.Match syntax) of
	// the tool names the downstream may see and call; DenyTools the globs
	// of those it may not. Names are matched as the downstream sees them
	// (with their prefix). Deny wins.
	AllowTools, DenyTools []string
	// AnswerUnknown makes the proxy answer a tools/call or prompts/get of
	// a name its upstream does not list itself, exactly as pmcp.DenyTools
	// and pmcp.DenyPrompts answer a hidden one, instead of passing the
	// upstream's own words on: set it when a middleware hides names per
	// caller (package gateway), so that no caller can tell a hidden name
	// from one that does not exist. Tool globs imply it for tools.
	AnswerUnknown bool
	// Server configures the downstream server (Name, Version, Logger,
	// Middleware, ...). Its Capabilities are set by the proxy; its
	// Middleware runs before the proxy's.
	Server pmcp.ServerOptions
	// Client configures the upstream client (Name, Version, Era,
	// CallTimeout, ...). Its input handlers and notification handlers are
	// set by the proxy. A zero CallTimeout means DefaultCallTimeout; a
	// LevelUnset LogLevel means LevelDebug (records are filtered per
	// downstream request). Its AppMIMETypes (pmcp.AppMIMEType when empty)
	// are declared by the upstream sessions several downstream clients
	// share; the others declare their own client's (see apps.go).
	Client pmcp.ClientOptions
	// ListTimeout bounds each upstream's part of a list aggregated from
	// several upstreams (opening its session included): an upstream that
	// has not answered by then is left out of the list and marked down in
	// Status, so one that hangs cannot hold every list up. Zero means
	// DefaultListTimeout. With one upstream, lists are forwarded unbounded
	// (but by the downstream request's own deadline and CallTimeout).
	ListTimeout time.Duration
	// MaxParked bounds the parked modern requests. Zero means
	// DefaultMaxParked.
	MaxParked int
	// ParkTimeout bounds how long one stays parked. Zero means
	// DefaultParkTimeout.
	ParkTimeout time.Duration
	// MaxHeaderSessions bounds, per upstream, the sessions opened for
	// distinct values of Upstream.SessionHeaders. When it is reached, the
	// least recently used one with nothing in flight is closed for a new
	// one; when there is none, the request fails with -32603. Zero means
	// DefaultMaxHeaderSessions.
	MaxHeaderSessions int
	// MaxRestarts bounds the re-dials of one upstream slot (after its
	// session ended or a dial failed) within DefaultRestartReset. Zero
	// means DefaultMaxRestarts; negative means never re-dial.
	MaxRestarts int
	// RequestStateKeys seal the requestState of bridged rounds (see
	// reqstate). Empty means one random key: parked requests live in this
	// process anyway.
	RequestStateKeys []reqstate.Key
	// Logger receives the proxy's diagnostics and the upstream log records
	// no downstream request takes. Nil means Server.Logger, else discard.
	Logger *slog.Logger
}

// Proxy is an MCP server backed by upstream sessions.
type Proxy struct {
	opts Options
	sep  string
	srv  *pmcp.Server
	// set holds the upstreams, in order (SetUpstreams replaces it);
	// setMu orders the replacements.
	set    atomic.Pointer[[]*upstream]
	setMu  sync.Mutex
	sealer *reqstate.Sealer
	log    *slog.Logger
	base   context.Context
	stop   context.CancelFunc
	jobs   sync.WaitGroup
	// workers run the jobs on goroutines that keep the stack a call grew
	// (encoding the upstream request's params grows a new goroutine's
	// stack two or three times).
	workers *workpool.Pool[*job]
	parked  parking
	pumps   pumps
	// filtered is set when tool globs apply or Options.AnswerUnknown (see unknownName).
	filtered bool
	// closers are the goroutines closing the slots of ended sessions.
	closers sync.WaitGroup
	// probing holds the one Probe running; lastProbe is guarded by it.
	probing   chan struct{}
	lastProbe time.Time
	// taskIDs binds the task ids shown downstream to their principal.
	taskIDs *taskIDs

	mu     sync.Mutex
	slots  map[slotKey]*slot
	closed bool
	// useSeq orders the slots' last use (slot.used), for makeRoom.
	useSeq uint64
	// watches counts the tasks polled for status pushes (tasks_watch.go).
	watches int
}

type upstream struct {
	name   string
	prefix string
	dial   DialFunc
	health health
	// timeout is Upstream.CallTimeout; fingerprint Upstream.Fingerprint.
	timeout     time.Duration
	fingerprint string
	// gone is set, under the proxy's mu, once SetUpstreams removed or
	// replaced it: no slot may be made for it any more.
	gone atomic.Bool
	// headers are the canonical SessionHeaders, sorted.
	headers []string
	// known: the names it last listed (names_known.go).
	known knownNames
}

type slotKey struct {
	up   *upstream
	sess pmcp.SessionKey
	// hdr is the digest of the SessionHeaders values of a session-less
	// request ("" when it carries none of them: see headerSlot).
	hdr string
}

// ErrInvalidOptions wraps the reasons New refuses its options.
var ErrInvalidOptions = errors.New("proxy: invalid options")

// New returns a Proxy for opts. Serve its Server over any transport; Close
// it when done.
func New(opts Options) (*Proxy, error) {
	sep := opts.Separator
	if sep == "" {
		sep = DefaultSeparator
	}
	p := &Proxy{opts: opts, sep: sep, slots: make(map[slotKey]*slot), probing: make(chan struct{}, 1)}
	p.workers = workpool.New(p.runJob, workpool.Options{Keep: 16, MaxIdle: 1024, Linger: 10 * time.Second})
	ups, err := p.build(opts.Upstreams)
	if err != nil {
		return nil, err
	}
	p.set.Store(&ups)
	for _, g := range append(append([]string(nil), opts.AllowTools...), opts.DenyTools...) {
		if _, err := path.Match(g, ""); err != nil {
			return nil, fmt.Errorf("%w: tool glob %q: %v", ErrInvalidOptions, g, err)
		}
	}
	sealer, err := reqstate.New(reqstate.Options{Keys: opts.RequestStateKeys, TTL: max(opts.ParkTimeout, DefaultParkTimeout)})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidOptions, err)
	}
	p.sealer = sealer
	if p.taskIDs, err = newTaskIDs(opts.RequestStateKeys); err != nil {
		return nil, fmt.Errorf("proxy: task ids: %w", err)
	}
	p.log = opts.Logger
	if p.log == nil {
		p.log = opts.Server.Logger
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	so := opts.Server
	so.Capabilities = &pmcp.ServerCapabilities{
		Logging:     map[string]any{},
		Completions: map[string]any{},
		Tools:       &pmcp.ListChangedCapability{ListChanged: true},
		Prompts:     &pmcp.ListChangedCapability{ListChanged: true},
		Resources:   &pmcp.ResourcesCapability{Subscribe: true, ListChanged: true},
		// Tasks in each era's form (see tasks.go), and skills (skills.go):
		// declared without contacting the upstreams, which are dialed on
		// first use. Whether a tool runs as a task is each tool's
		// execution.taskSupport, listed as its upstream lists it.
		// MCP Apps alike (apps.go).
		Extensions: map[string]map[string]any{pmcp.ExtensionTasks: {}, pmcp.ExtensionSkills: {}, pmcp.ExtensionApps: {}},
	}
	mw := append([]pmcp.Middleware(nil), opts.Server.Middleware...)
	p.filtered = opts.AnswerUnknown
	if len(opts.AllowTools) > 0 || len(opts.DenyTools) > 0 {
		p.filtered = true
		allow, deny := opts.AllowTools, opts.DenyTools
		mw = append(mw, pmcp.DenyTools(func(_ context.Context, _ *pmcp.Request, name string) bool {
			return !ToolAllowed(allow, deny, name)
		}))
	}
	mw = append(mw, p.middleware)
	so.Middleware = mw
	userWatch := so.WatchTask
	so.WatchTask = func(ctx context.Context, extra *pmcp.RequestHandlerExtra, id string) (<-chan *pmcp.DetailedTask, bool) {
		if w, ok := p.watchModernTask(ctx, extra, id); ok || userWatch == nil {
			return w, ok
		}
		return userWatch(ctx, extra, id)
	}
	userKnown := so.NameKnown
	so.NameKnown = func(method, name string) bool {
		return p.nameKnown(method, name) || userKnown != nil && userKnown(method, name)
	}
	userRoots := so.RootsListChanged
	so.RootsListChanged = func(ctx context.Context) {
		if userRoots != nil {
			userRoots(ctx)
		}
		p.rootsChanged(ctx)
	}
	srv, err := pmcp.NewServer(so)
	if err != nil {
		return nil, err
	}
	p.srv = srv
	p.base, p.stop = context.WithCancel(context.Background())
	return p, nil
}

// build checks the upstreams of New and SetUpstreams (see Upstream.Name)
// and makes their records.
func (p *Proxy) build(us []Upstream) ([]*upstream, error) {
	if len(us) == 0 {
		return nil, fmt.Errorf("%w: no upstream", ErrInvalidOptions)
	}
	var ups []*upstream
	for _, u := range us {
		if u.Dial == nil {
			return nil, fmt.Errorf("%w: upstream %q has no Dial", ErrInvalidOptions, u.Name)
		}
		if u.CallTimeout < 0 || u.Breaker.Failures < 0 || u.Breaker.Cooldown < 0 {
			return nil, fmt.Errorf("%w: upstream %q: negative CallTimeout or Breaker", ErrInvalidOptions, u.Name)
		}
		up := &upstream{name: u.Name, dial: u.Dial, timeout: u.CallTimeout, fingerprint: u.Fingerprint}
		up.health.breaker.cfg = u.Breaker
		for _, h := range u.SessionHeaders {
			h = http.CanonicalHeaderKey(h)
			if h == "Authorization" {
				return nil, fmt.Errorf("%w: upstream %q: %v", ErrInvalidOptions, u.Name, ErrHeaderToEnvAuthorization)
			}
			up.headers = append(up.headers, h)
		}
		slices.Sort(up.headers)
		up.headers = slices.Compact(up.headers)
		if len(us) > 1 || p.opts.Prefix {
			if u.Name == "" {
				return nil, fmt.Errorf("%w: prefixed upstreams need non-empty names", ErrInvalidOptions)
			}
			up.prefix = u.Name + p.sep
		}
		if up.name == "" {
			up.name = "upstream"
		}
		ups = append(ups, up)
	}
	if err := checkPrefixes(ups, p.sep); err != nil {
		return nil, err
	}
	return ups, nil
}

// ToolAllowed reports whether name passes the allow and deny globs
// (path.Match syntax): it matches no deny glob and, when allow is not
// empty, at least one allow glob.
func ToolAllowed(allow, deny []string, name string) bool {
	for _, g := range deny {
		if ok, _ := path.Match(g, name); ok {
			return false
		}
	}
	if len(allow) == 0 {
		return true
	}
	for _, g := range allow {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// Server returns the downstream server: serve it over stdio (Serve) or
// Streamable HTTP (pmcp.NewStreamableHTTPHandler).
func (p *Proxy) Server() *pmcp.Server { return p.srv }

// Close ends every upstream session (child processes are shut down) and
// cancels the parked requests. Serving after Close fails every request.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	slots := p.slots
	p.slots = nil
	p.mu.Unlock()
	p.closeParked()
	p.stop()
	p.jobs.Wait()
	p.workers.Close()
	for _, sl := range slots {
		sl.close()
	}
	p.closers.Wait()
	return nil
}

func (p *Proxy) maxParked() int {
	if p.opts.MaxParked > 0 {
		return p.opts.MaxParked
	}
	return DefaultMaxParked
}

func (p *Proxy) parkTimeout() time.Duration {
	if p.opts.ParkTimeout > 0 {
		return p.opts.ParkTimeout
	}
	return DefaultParkTimeout
}

// maxRounds caps the input_required rounds of one bridged request, as
// ServerOptions.MaxInputRounds does for the server's own.
func (p *Proxy) maxRounds() int {
	if n := p.opts.Server.MaxInputRounds; n > 0 {
		return min(n, 256)
	}
	return pmcp.DefaultMaxInputRounds
}

func (p *Proxy) maxRestarts() int {
	switch {
	case p.opts.MaxRestarts > 0:
		return p.opts.MaxRestarts
	case p.opts.MaxRestarts < 0:
		return 0
	}
	return DefaultMaxRestarts
}

func (p *Proxy) listTimeout() time.Duration {
	if p.opts.ListTimeout > 0 {
		return p.opts.ListTimeout
	}
	return DefaultListTimeout
}

func (p *Proxy) callTimeout() time.Duration { return DefaultCallTimeout }

// upstreams returns the upstreams, in order; the slice is not written.
func (p *Proxy) upstreams() []*upstream { return *p.set.Load() }

// upCallTimeout is how long one request to up may take (the
// ClientOptions.CallTimeout of its sessions: negative means unbounded).
func (p *Proxy) upCallTimeout(up *upstream) time.Duration {
	switch {
	case up.timeout > 0:
		return up.timeout
	case p.opts.Client.CallTimeout != 0:
		return p.opts.Client.CallTimeout
	}
	return p.callTimeout()
}

// slotFor returns the slot of up for the request's downstream session.
func (p *Proxy) slotFor(req *pmcp.Request, up *upstream) (*slot, error) {
	key := slotKey{up: up}
	if !p.opts.Shared && req.Extra != nil {
		key.sess = req.Extra.SessionKey()
	}
	var hdr http.Header
	if key.sess.IsZero() && !p.opts.Shared {
		key.hdr, hdr = headerSlot(req.Header, up.headers)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("%w: the proxy is closed", ErrUpstreamGone)
	}
	if up.gone.Load() {
		return nil, fmt.Errorf("%w: %q", errRemoved, up.name)
	}
	p.useSeq++
	sl := p.slots[key]
	if sl != nil {
		sl.used = p.useSeq
		return sl, nil
	}
	if key.hdr != "" {
		if err := p.makeRoom(up); err != nil {
			return nil, err
		}
	}
	sl = &slot{p: p, up: up, hdr: hdr, used: p.useSeq}
	if !key.sess.IsZero() {
		k := key // a copy: capturing key would put it on the heap for every call
		if !req.Extra.OnSessionEnd(func() { p.dropSlot(k) }) {
			// The session holds too many end functions: share instead of
			// leaking a per-session upstream.
			key.sess = pmcp.SessionKey{}
			if s := p.slots[key]; s != nil {
				return s, nil
			}
		}
	}
	sl.session = !key.sess.IsZero()
	p.slots[key] = sl
	return sl, nil
}

// rootsChanged tells the legacy upstreams that a downstream client's roots
// changed (a modern upstream asks for roots when it needs them). The
// notification names no session, so every open legacy upstream hears it.
func (p *Proxy) rootsChanged(ctx context.Context) {
	p.mu.Lock()
	slots := make([]*slot, 0, len(p.slots))
	for _, sl := range p.slots {
		slots = append(slots, sl)
	}
	p.mu.Unlock()
	for _, sl := range slots {
		sl.mu.Lock()
		l := sl.live
		sl.mu.Unlock()
		if l != nil && !l.modern && !l.done() {
			_ = l.conn.Session.NotifyRootsListChanged(ctx)
		}
	}
}

func (p *Proxy) dropSlot(key slotKey) {
	p.mu.Lock()
	sl := p.slots[key]
	delete(p.slots, key)
	p.mu.Unlock()
	if sl != nil {
		p.closers.Add(1)
		go func() { // OnSessionEnd functions must return quickly
			defer p.closers.Done()
			sl.close()
		}()
	}
}
