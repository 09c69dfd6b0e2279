package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// slot is where the upstream session of one upstream for one downstream
// session (or the shared one) lives. It dials on first use and again, at
// most Options.MaxRestarts times, after the session ended or a dial failed.
// Then it gives up: for DefaultRestartReset every request fails at once
// with an error naming the upstream, after which the slot gets a fresh
// budget (a session that ran for DefaultRestartReset gets one too).
type slot struct {
	p  *Proxy
	up *upstream

	mu     sync.Mutex // guards live, dials, closed, subs; held while dialing
	live   *live
	dials  int // dials since the budget was last reset, failed ones too
	closed bool
	// lastErr is why the last session ended or the last dial failed;
	// downUntil, once the dials ran out, when the slot may dial again.
	lastErr   error
	downUntil time.Time
	subs      map[string]int // resource URI → downstream subscriptions
	listenWG  sync.WaitGroup

	// hdr is the header a header-keyed slot dials with (see headerSlot);
	// used orders the slots' last use (Proxy.useSeq). Both are guarded
	// by the proxy's mu.
	hdr  http.Header
	used uint64

	// session is set for the upstream of one legacy downstream session
	// (not shared); peer is then the back-channel of its latest request,
	// for the upstream's roots requests outside calls (rootsOutsideCalls).
	session bool

	// jobsMu guards jobs and peer apart from mu, so that routing an
	// upstream's request never waits for a dial.
	jobsMu sync.Mutex
	jobs   []*job // in flight, oldest first
	peer   pmcp.Peer
	// drained, when set, is closed once jobs is empty (slot.drain).
	drained chan struct{}

	// toolsMu guards tools and prompts: the upstream session's tool and
	// prompt names, nil until read and after a list change (see hasName).
	toolsMu sync.Mutex
	tools   map[string]bool
	prompts map[string]bool
}

// live is one open upstream session.
type live struct {
	conn        Conn
	opened      time.Time
	stopListen  context.CancelFunc
	exitOnce    sync.Once
	exitErr     error
	modern      bool
	capsTools   bool
	capsPrompts bool
	capsRes     bool
	// tasks: the upstream serves task-augmented tools/call (proxy/tasks.go);
	// skills: it declares the skills extension (proxy/skills.go).
	tasks, skills bool
	// created lists, oldest first, the tasks one legacy downstream
	// session created on this 2026-07-28 upstream session (an era with
	// no tasks/list), for that session's tasks/list (proxy/tasks.go).
	created taskLog
}

func (l *live) done() bool {
	select {
	case <-l.conn.Session.Done():
		return true
	default:
		return false
	}
}

// exitReason waits for the reason the upstream ended.
func (l *live) exitReason() error {
	l.exitOnce.Do(func() {
		if l.conn.Exited != nil {
			l.exitErr = l.conn.Exited()
		} else if err := l.conn.Session.Wait(); err != nil {
			l.exitErr = err
		} else {
			l.exitErr = errors.New("the connection closed")
		}
	})
	return l.exitErr
}

// breakOn ends the session when err says that its transport broke: an
// HTTP server refused or dropped the connection. An HTTP session does not
// end by itself then (its requests are separate connections), so without
// this the slot would keep a session whose every call fails, and each
// failure would wait endGrace for an end that never comes; ended, it is
// re-dialed on the next request (within Options.MaxRestarts). Reports
// whether it did.
func (l *live) breakOn(err error) bool {
	var ue *url.Error
	if !errors.As(err, &ue) || errors.Is(ue.Err, context.Canceled) || errors.Is(ue.Err, context.DeadlineExceeded) {
		return false // not a transport failure, or a wait the caller or the call timeout ended
	}
	l.exitOnce.Do(func() { l.exitErr = err })
	_ = l.conn.Session.Close()
	return true
}

// ErrUpstreamGone is the cause of the errors a downstream gets when its
// upstream session ended and may not be restarted.
var ErrUpstreamGone = errors.New("proxy: upstream session ended")

// get returns the open upstream session, dialing one when there is none.
func (sl *slot) get(ctx context.Context, hdr http.Header) (*live, error) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.closed {
		return nil, fmt.Errorf("%w: upstream %q: the proxy session closed", ErrUpstreamGone, sl.up.name)
	}
	if sl.live != nil && !sl.live.done() {
		return sl.live, nil
	}
	if sl.live != nil {
		old := sl.live
		sl.live = nil
		old.stopListen()
		_ = old.conn.Session.Close()
		if time.Since(old.opened) >= DefaultRestartReset {
			sl.dials = 1 // it ran long enough: a fresh budget
		}
		sl.lastErr = fmt.Errorf("ended: %w", old.exitReason())
	}
	if !sl.downUntil.IsZero() && time.Now().After(sl.downUntil) {
		sl.downUntil, sl.dials = time.Time{}, 0 // the pause is over: a fresh budget
	}
	if sl.dials > sl.p.maxRestarts() {
		if sl.downUntil.IsZero() {
			sl.downUntil = time.Now().Add(DefaultRestartReset)
			sl.p.log.Warn("proxy: giving up on upstream", "upstream", sl.up.name, "reason", sl.lastErr, "retry_after", DefaultRestartReset)
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("upstream %q %v and was restarted %d times: giving up until %s", sl.up.name, sl.lastErr, sl.dials-1, sl.downUntil.UTC().Format(time.RFC3339))}
	}
	if sl.dials > 0 {
		sl.p.log.Warn("proxy: restarting upstream", "upstream", sl.up.name, "reason", sl.lastErr)
	}
	sl.dials++ // a failed dial counts: a child that cannot start is not restarted forever
	l, err := sl.dial(ctx, hdr)
	if err != nil {
		if ctx.Err() != nil {
			sl.dials-- // the caller gave up, which says nothing of the upstream
		}
		sl.lastErr = fmt.Errorf("cannot connect: %w", err)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("upstream %q: cannot connect: %v", sl.up.name, err)}
	}
	sl.live = l
	return l, nil
}

func (sl *slot) dial(ctx context.Context, hdr http.Header) (*live, error) {
	opts := sl.p.opts.Client
	opts.Elicitation = func(ctx context.Context, p *pmcp.ElicitParams) (*pmcp.ElicitResult, error) {
		ctx = withRelatedTask(ctx, p.Meta)
		cp := *p
		cp.Meta = nil
		if cp.Mode != "url" {
			cp.ElicitationID = ""
		}
		return askAs[pmcp.ElicitResult](ctx, sl, &pmcp.InputRequest{Method: pmcp.MethodElicitationCreate, Params: &cp})
	}
	opts.ElicitationURL = true
	opts.Sampling = func(ctx context.Context, p *pmcp.CreateMessageParams) (*pmcp.CreateMessageResult, error) {
		ctx = withRelatedTask(ctx, p.Meta)
		cp := *p
		cp.Meta = nil
		return askAs[pmcp.CreateMessageResult](ctx, sl, &pmcp.InputRequest{Method: pmcp.MethodSamplingCreateMessage, Params: &cp})
	}
	opts.SamplingTools = true
	opts.Roots = func(ctx context.Context) (*pmcp.ListRootsResult, error) {
		res, err := askAs[pmcp.ListRootsResult](ctx, sl, &pmcp.InputRequest{Method: pmcp.MethodRootsList, Params: &pmcp.ListRootsParams{}})
		if errors.Is(err, errNoCall) {
			return sl.rootsOutsideCalls(ctx)
		}
		return res, err
	}
	srv := sl.p.srv
	opts.Notifications = pmcp.ClientNotificationHandlers{
		LogMessage: sl.onLog,
		ToolsListChanged: func(context.Context) {
			sl.forgetTools()
			srv.NotifyToolsListChanged()
		},
		PromptsListChanged: func(context.Context) {
			sl.forgetPrompts()
			srv.NotifyPromptsListChanged()
		},
		ResourcesListChanged: func(context.Context) { srv.NotifyResourcesListChanged() },
		ResourceUpdated:      func(_ context.Context, p *pmcp.ResourceUpdatedParams) { srv.NotifyResourceUpdated(sl.up.outURI(p.URI)) },
	}
	opts.SyncLogMessages = true // a call's records before its result
	if opts.LogLevel == pmcp.LevelUnset {
		opts.LogLevel = pmcp.LevelDebug // filtered per downstream request
	}
	opts.CallTimeout = sl.p.upCallTimeout(sl.up)
	if opts.Logger == nil {
		opts.Logger = sl.p.log
	}
	appsClient(&opts, !sl.session)
	sl.forgetTools()
	sl.forgetPrompts()
	conn, err := sl.up.dial(ctx, pmcp.NewClient(opts), Downstream{Header: hdr})
	if err != nil {
		return nil, err
	}
	if conn.Session == nil {
		return nil, errors.New("the dialer returned no session")
	}
	l := &live{conn: conn, opened: time.Now(), stopListen: func() {}, modern: conn.Session.Era() == pmcp.EraModern}
	caps := conn.Session.ServerCapabilities()
	if caps != nil {
		l.capsTools, l.capsPrompts, l.capsRes = caps.Tools != nil, caps.Prompts != nil, caps.Resources != nil
		l.tasks = declaresTasks(caps)
		_, l.skills = caps.Extensions[pmcp.ExtensionSkills]
	}
	if !l.modern && l.capsRes {
		// The downstreams' subscriptions, recorded while the upstream
		// was down or before its last session ended (a modern one gets
		// them in startListen's filter).
		for uri := range sl.subs {
			_ = conn.Session.Subscribe(ctx, uri)
		}
	}
	sl.startListen(l)
	return l, nil
}

// startListen opens, for a modern upstream, the subscriptions/listen stream
// that brings its list changes and the updates of the subscribed resources
// (a legacy upstream pushes them). Called with sl.mu held.
func (sl *slot) startListen(l *live) {
	l.stopListen()
	if !l.modern {
		return
	}
	f := pmcp.SubscriptionFilter{ToolsListChanged: l.capsTools, PromptsListChanged: l.capsPrompts, ResourcesListChanged: l.capsRes}
	if l.capsRes {
		for uri := range sl.subs {
			f.ResourceSubscriptions = append(f.ResourceSubscriptions, uri)
		}
	}
	if !f.ToolsListChanged && !f.PromptsListChanged && !f.ResourcesListChanged {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.stopListen = cancel
	sl.listenWG.Add(1)
	go func() {
		defer sl.listenWG.Done()
		err := l.conn.Session.Listen(ctx, f)
		if err != nil && ctx.Err() == nil && !l.done() {
			sl.p.log.Warn("proxy: upstream subscription ended", "upstream", sl.up.name, "error", err)
		}
	}()
}

// subscribe forwards a downstream resource subscription (add) or its end.
func (sl *slot) subscribe(ctx context.Context, uri string, add bool) error {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.subs == nil {
		sl.subs = make(map[string]int)
	}
	n := sl.subs[uri]
	if add {
		sl.subs[uri] = n + 1
	} else if n <= 1 {
		delete(sl.subs, uri)
	} else {
		sl.subs[uri] = n - 1
	}
	changed := (add && n == 0) || (!add && n == 1)
	l := sl.live
	if !changed || l == nil || l.done() {
		return nil
	}
	if l.modern {
		sl.startListen(l)
		return nil
	}
	if add {
		return l.conn.Session.Subscribe(ctx, uri)
	}
	return l.conn.Session.Unsubscribe(ctx, uri)
}

// close ends the slot's upstream session (a child process is shut down).
func (sl *slot) close() {
	sl.mu.Lock()
	sl.closed = true
	l := sl.live
	sl.live = nil
	sl.mu.Unlock()
	if l != nil {
		l.stopListen()
		_ = l.conn.Session.Close()
	}
	sl.listenWG.Wait()
}

// addJob and removeJob track the calls in flight, which a legacy upstream's
// requests for input and its log records are routed to.
func (sl *slot) addJob(j *job) {
	sl.jobsMu.Lock()
	sl.jobs = append(sl.jobs, j)
	sl.jobsMu.Unlock()
}

func (sl *slot) removeJob(j *job) {
	sl.jobsMu.Lock()
	for i, x := range sl.jobs {
		if x == j {
			sl.jobs = append(sl.jobs[:i], sl.jobs[i+1:]...)
			break
		}
	}
	if len(sl.jobs) == 0 && sl.drained != nil {
		close(sl.drained)
		sl.drained = nil
	}
	sl.jobsMu.Unlock()
}

// jobFor finds the call an upstream request for input belongs to and
// counts the request in its asking: the one whose ctx it carries (a modern
// upstream asks within the call), or the pump of the task it names, else
// (guessed) the oldest call in flight on the slot that is not already
// waiting for an answer, else the oldest (a legacy upstream's requests
// carry no link to the call they are for; with one call at a time, which
// a per-session upstream usually sees, the choice is exact). The choice and
// the count are one step, so concurrent requests go to distinct calls
// while there are enough.
func (sl *slot) jobFor(ctx context.Context) (_ *job, guessed bool) {
	if j, ok := ctx.Value(jobKey{}).(*job); ok {
		j.asking.Add(1)
		return j, false
	}
	if j := sl.p.pumpJob(ctx, sl); j != nil { // a task's, by its related-task _meta
		return j, false
	}
	sl.jobsMu.Lock()
	defer sl.jobsMu.Unlock()
	var pick *job
	for _, j := range sl.jobs {
		if j.ctx.Err() != nil || j.round.Load() == pumpRound {
			continue
		}
		if j.asking.Load() == 0 {
			pick = j
			break
		}
		if pick == nil {
			pick = j
		}
	}
	if pick != nil {
		pick.asking.Add(1)
	}
	return pick, true
}

// setPeer remembers the back-channel of the latest request of the slot's
// downstream session.
func (sl *slot) setPeer(peer pmcp.Peer) {
	sl.jobsMu.Lock()
	sl.peer = peer
	sl.jobsMu.Unlock()
}

// rootsOutsideCalls answers a roots/list a legacy upstream sends while no
// call is in flight (servers sync their roots after initialize and on a
// list change). The upstream of one downstream session asks that session's
// client, through the back-channel of its latest request; one shared by
// several clients gets an empty list, since no roots are common to all of
// them (and an error would only be logged by the upstream).
func (sl *slot) rootsOutsideCalls(ctx context.Context) (*pmcp.ListRootsResult, error) {
	if !sl.session {
		return &pmcp.ListRootsResult{Roots: []*pmcp.Root{}}, nil
	}
	sl.jobsMu.Lock()
	peer := sl.peer
	sl.jobsMu.Unlock()
	if peer == nil {
		return nil, errNoCall
	}
	return peer.ListRoots(ctx)
}

// errNoCall answers an upstream's request for input that no downstream call
// can take.
var errNoCall = errors.New("proxy: no downstream request is in flight to ask for this input")

// maxReroutes bounds how often a legacy upstream's request for input is
// routed to another call because the one it was routed to ended before
// answering it.
const maxReroutes = 8

func askAs[T any](ctx context.Context, sl *slot, req *pmcp.InputRequest) (*T, error) {
	var (
		raw jsontext.Value
		err error
	)
	for try := 0; ; try++ {
		j, guessed := sl.jobFor(ctx)
		if j == nil {
			return nil, errNoCall
		}
		var handed bool
		raw, handed, err = j.ask(ctx, req, guessed)
		if handed || !guessed || ctx.Err() != nil || try == maxReroutes {
			break
		}
		// A legacy request (no link to its call) was routed to a call
		// that ended before answering it: another call may be its own.
	}
	if err != nil {
		return nil, err
	}
	out := new(T)
	if err := pmcp.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("proxy: malformed answer from the downstream client: %w", err)
	}
	return out, nil
}

// onLog routes an upstream log record to the oldest call in flight that
// has a log sink (and asked for that level), else to the proxy's logger.
func (sl *slot) onLog(ctx context.Context, p *pmcp.LoggingMessageParams) {
	sl.jobsMu.Lock()
	var r *round
	for _, j := range sl.jobs {
		if r = j.round.Load(); r != nil && r.log != nil {
			break
		}
		r = nil
	}
	sl.jobsMu.Unlock()
	if r != nil {
		if p.Level >= r.level {
			r.log.Log(p)
		}
		return
	}
	data, _ := pmcp.Marshal(p.Data)
	sl.p.log.Info("upstream log", "upstream", sl.up.name, "level", p.Level.String(), "logger", p.Logger, "data", jsontext.Value(data))
}

func (sl *slot) forgetTools() {
	sl.toolsMu.Lock()
	sl.tools = nil
	sl.toolsMu.Unlock()
}

func (sl *slot) forgetPrompts() {
	sl.toolsMu.Lock()
	sl.prompts = nil
	sl.toolsMu.Unlock()
}

// hasName reports whether the upstream session l lists the tool (method
// tools/call) or prompt (prompts/get) name. The list is cached until the
// upstream says it changed; a name the cache lacks is looked up once more
// in a fresh list, so a change the upstream did not announce cannot hide
// a tool or prompt.
func (sl *slot) hasName(ctx context.Context, l *live, method, name string) (bool, error) {
	cache := &sl.tools
	if method == pmcp.MethodPromptsGet {
		cache = &sl.prompts
	}
	sl.toolsMu.Lock()
	known := (*cache)[name]
	sl.toolsMu.Unlock()
	if known {
		return true, nil
	}
	m := map[string]bool{}
	if method == pmcp.MethodPromptsGet {
		prompts, err := l.conn.Session.AllPrompts(ctx)
		if err != nil {
			return false, err
		}
		for _, p := range prompts {
			m[p.Name] = true
		}
	} else {
		tools, err := l.conn.Session.AllTools(ctx)
		if err != nil {
			return false, err
		}
		for _, t := range tools {
			m[t.Name] = true
		}
	}
	sl.toolsMu.Lock()
	*cache = m
	sl.toolsMu.Unlock()
	return m[name], nil
}
