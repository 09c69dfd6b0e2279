package pmcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/jsonrpc"
	"github.com/gopmcp/pmcp/tasks"
)

// taskServer is the Server's task state; nil when tasks are off.
type taskServer struct {
	store    tasks.Store
	owned    bool
	sem      chan struct{}
	replica  string
	leaseTTL time.Duration
	window   time.Duration

	base context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu      sync.Mutex
	running map[string]*taskRunner

	// hooks let tests order the creating request against its runner;
	// nil in production.
	hooks *taskHooks
}

// taskHooks are called, when set, at the points a test orders: the
// creating request right after it started the runner, the runner before
// it settles a task it created, the creating request when it waits for
// the runner to finish a task the runner created.
type taskHooks struct {
	afterStart, beforeSettle, waitRunner func()
}

func newTaskServer(o *TaskOptions) (*taskServer, error) {
	ts := &taskServer{store: o.Store, replica: o.ReplicaID, leaseTTL: o.LeaseTTL, window: o.InputWindow, running: make(map[string]*taskRunner)}
	if ts.store == nil {
		if _, err := tasks.NewRules(o.StoreOptions); err != nil {
			return nil, err
		}
		ts.store, ts.owned = &lazyStore{opts: o.StoreOptions}, true
	}
	n := o.MaxRunningTasks
	if n <= 0 {
		n = defaultMaxRunningTasks
	}
	ts.sem = make(chan struct{}, n)
	if ts.replica == "" {
		var b [9]byte
		_, _ = rand.Read(b[:])
		ts.replica = "replica-" + hex.EncodeToString(b[:])
	}
	if ts.leaseTTL <= 0 {
		ts.leaseTTL = tasks.DefaultLeaseTTL
	}
	if ts.window == 0 {
		ts.window = defaultTaskInputWindow
	}
	ts.base, ts.stop = context.WithCancel(context.Background())
	return ts, nil
}

// Close stops the server's background work: it cancels running task
// handlers, waits for them to settle their tasks, and closes the task
// store when the Server owns it. Serving after Close is not supported.
func (s *Server) Close() error {
	ts := s.tasks
	if ts == nil {
		return nil
	}
	ts.stop()
	ts.wg.Wait()
	if ts.owned {
		return ts.store.Close()
	}
	return nil
}

func hasTasksExtension(c *ClientCapabilities) bool {
	if c == nil {
		return false
	}
	_, ok := c.Extensions[ExtensionTasks]
	return ok
}

func missingTasksExtension() *MissingCapabilityError {
	return &MissingCapabilityError{Required: map[string]any{"extensions": map[string]any{ExtensionTasks: map[string]any{}}}}
}

// taskOwner names the principal a task is bound to: the authenticated
// caller (principalOf); without authentication the legacy session, or in
// the 2026-07-28 era one anonymous owner (there the 144-bit task id is the
// bearer handle).
func taskOwner(extra *RequestHandlerExtra) (string, error) {
	if extra.AuthInfo != nil || extra.AuthContext != nil {
		p, ok := principalOf(extra.AuthInfo, extra.AuthContext)
		if !ok || p == "" {
			return "", invalidParams("tasks need an identified caller: the request's authentication names no principal")
		}
		return p, nil
	}
	if extra.Era() == EraLegacy && extra.session != nil {
		return extra.session.taskOwnerID(), nil
	}
	return "anonymous", nil
}

// taskSupport is the registered task support of a tool.
func (st *serverTool) taskSupport() string {
	if st.tool.Execution == nil || st.tool.Execution.TaskSupport == "" {
		return TaskSupportForbidden
	}
	return st.tool.Execution.TaskSupport
}

// callToolOrTask runs tools/call synchronously or as a task, as the tool's
// registration, the era and the request decide.
func (s *Server) callToolOrTask(ctx context.Context, env *requestEnv, extra *RequestHandlerExtra, rs *reqState, p *CallToolParams) (Result, error) {
	ts := s.tasks
	if ts == nil {
		return s.callTool(ctx, extra, rs, p)
	}
	st := rs.tool
	if st == nil || st.tool.Name != p.Name {
		var ok bool
		if st, ok = s.tools.get(p.Name); !ok {
			return s.callTool(ctx, extra, rs, p)
		}
	}
	support := st.taskSupport()
	var ttl time.Duration
	if extra.Era() == EraModern {
		ext := hasTasksExtension(extra.ClientCapabilities())
		if support == TaskSupportRequired && !ext {
			return nil, missingTasksExtension()
		}
		if support == TaskSupportForbidden || !ext {
			return s.callTool(ctx, extra, rs, p)
		}
	} else {
		asked := len(p.Task) > 0 && string(p.Task) != "null"
		switch {
		case !asked && support == TaskSupportRequired:
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("tool %q runs only as a task: send params.task", p.Name)}
		case !asked:
			return s.callTool(ctx, extra, rs, p)
		case support == TaskSupportForbidden:
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("tool %q does not support task-augmented calls", p.Name)}
		}
		var md TaskMetadata
		if err := Unmarshal(p.Task, &md); err != nil || p.Task.Kind() != '{' {
			return nil, invalidParams("invalid params.task")
		}
		if md.TTL != nil {
			if *md.TTL < 0 {
				return nil, invalidParams("params.task.ttl must not be negative")
			}
			ttl = time.Duration(*md.TTL) * time.Millisecond
		}
	}
	// The tool's scopes are checked before a task exists, as for a
	// synchronous call.
	if err := authorize(extra, st.scopes); err != nil {
		return nil, err
	}
	owner, err := taskOwner(extra)
	if err != nil {
		return nil, err
	}
	select {
	case ts.sem <- struct{}{}:
	default:
		if support == TaskSupportRequired {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "too many running tasks; try again later"}
		}
		return s.callTool(ctx, extra, rs, p)
	}
	return s.startTask(ctx, env, extra, st, p, owner, ttl, rs.meta.ProgressToken)
}

// taskRunner is one running task handler of this process.
type taskRunner struct {
	s     *Server
	ts    *taskServer
	owner string
	era   Era
	ttl   time.Duration
	ctx   context.Context
	// cancel cancels the handler's ctx.
	cancel context.CancelFunc
	// notify sends notifications/tasks/status (legacy; nil when the
	// session has no channel of its own).
	notify func(ctx context.Context, method string, params any) error

	mu sync.Mutex
	id string
	// decided: the task was created (created) or the call ended without
	// one (input required before the window closed).
	decided, created bool
	// early receives the outcome when the handler finishes before the
	// task was created (an input_required round or a creation error).
	early chan earlyOutcome
	// ended is closed when run returns (the task settled, or the call
	// ended without one), so a creating call still inside its input window
	// answers then instead of waiting for the window to close.
	ended chan struct{}
	// returned is set once the handler has returned (before the runner
	// creates or settles the task).
	returned atomic.Bool
	// cancelRequested is set by a 2026-07-28 tasks/cancel.
	cancelRequested bool
	// seq numbers the task's own input-request keys.
	seq int
	// used holds the input keys issued for the task (never reused).
	used map[string]bool
	// waiter is the back-channel of a legacy tasks/result waiting on the
	// task (nil when none); waiterCh is closed when one arrives.
	waiters  []*taskWaiter
	waiterCh chan struct{}
	lease    *time.Timer
}

// taskWaiter is the back-channel of one legacy tasks/result waiting on a task.
type taskWaiter struct {
	call func(ctx context.Context, method string, params any) (jsontext.Value, error)
}

type earlyOutcome struct {
	res Result
	err error
}

// startTask runs the tool's handler on a runner goroutine and answers with
// a CreateTaskResult once the task exists (or with the handler's
// input_required round when it asked for input before that).
func (s *Server) startTask(ctx context.Context, env *requestEnv, extra *RequestHandlerExtra, st *serverTool, p *CallToolParams, owner string, ttl time.Duration, progressToken jsontext.Value) (Result, error) {
	ts := s.tasks
	runCtx, cancel := context.WithCancel(ts.base)
	r := &taskRunner{s: s, ts: ts, owner: owner, era: extra.Era(), ttl: ttl, ctx: runCtx, cancel: cancel,
		early: make(chan earlyOutcome, 1), ended: make(chan struct{}), waiterCh: make(chan struct{}), used: make(map[string]bool)}
	if r.era == EraLegacy && extra.session != nil {
		r.notify = extra.session.notify
	}
	rextra := runnerExtra(runCtx, extra, r)
	if r.notify != nil {
		// 2025-11-25: progress (for the request's token) and log records
		// go on the session's own channel, since the request is over.
		if len(progressToken) > 0 {
			rextra.ProgressReporter = newProgressReporter(cloneRaw(progressToken), r.notify)
		}
		rextra.LogSink = &notifySink{ctx: runCtx, notify: r.notify}
	}
	pc := copyCallParams(p)
	window := ts.window
	if r.era != EraModern {
		window = -1
	}
	if window < 0 {
		if _, err := r.commit(); err != nil {
			cancel()
			<-ts.sem
			return nil, err
		}
	}
	ts.wg.Add(1)
	go r.run(rextra, st, pc)
	if ts.hooks != nil {
		ts.hooks.afterStart()
	}
	if window >= 0 {
		switch decided := r.isDecided(); {
		case decided && r.returned.Load():
			// The runner decided first, after its handler returned: it is
			// settling the task it created, or it holds the early outcome
			// (input asked for before any task existed, or a failed
			// creation). Either way it ends at once: wait for it, so that
			// the reply is the settled task, not the task still working;
			// commit below finds it, or the early outcome. (A handler
			// still running that created its task early, with a status
			// message, is answered with the working task.)
			if ts.hooks != nil {
				ts.hooks.waitRunner()
			}
			<-r.ended
		case !decided:
			t := time.NewTimer(window)
			select {
			case <-t.C:
			case out := <-r.early:
				t.Stop()
				return out.res, out.err
			case <-r.ended:
				// The handler is done within the window: the task
				// (complete at once) is answered now; commit below finds
				// it, or the early outcome when the call ended without
				// one.
				t.Stop()
			case <-ctx.Done():
				t.Stop()
				if r.abandon() {
					return nil, ctx.Err()
				}
			}
		}
	}
	task, err := r.commit()
	if err != nil {
		// The handler finished first with an input round or an error.
		out := <-r.early
		return out.res, out.err
	}
	if r.era == EraModern {
		dt := modernTask(task, false)
		dt.ResultType = ResultTypeTask
		return dt, nil
	}
	return &CreateTaskResult{Task: legacyTask(task)}, nil
}

var errNoTask = errors.New("pmcp: the call ended before its task was created")

func (r *taskRunner) isDecided() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.decided
}

// abandon gives up a call whose request ended before its task existed.
func (r *taskRunner) abandon() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.decided {
		return false
	}
	r.decided = true
	r.cancel()
	return true
}

// commit creates the task unless that was decided already; it returns
// errNoTask when the call ended without one.
func (r *taskRunner) commit() (tasks.Task, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.decided {
		if !r.created {
			return tasks.Task{}, errNoTask
		}
		return r.ts.store.Get(context.Background(), r.owner, r.id)
	}
	r.decided = true
	task, err := r.ts.store.Create(context.Background(), r.owner, tasks.Spec{TTL: r.ttl, Holder: r.ts.replica, LeaseTTL: r.ts.leaseTTL})
	if err != nil {
		r.cancel()
		if errors.Is(err, tasks.ErrLimit) {
			return tasks.Task{}, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "cannot create the task: " + err.Error()}
		}
		return tasks.Task{}, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "cannot create the task"}
	}
	r.created, r.id = true, task.ID
	r.ts.mu.Lock()
	r.ts.running[task.ID] = r
	r.ts.mu.Unlock()
	r.lease = time.AfterFunc(r.ts.leaseTTL/3, r.renew)
	return task, nil
}

// renew extends the runner's lease every LeaseTTL/3 and, at the same
// beat, notices a cancel made where the runner could not be reached (on
// another replica sharing the store): the handler's ctx is cancelled then.
func (r *taskRunner) renew() {
	if r.ctx.Err() != nil {
		return
	}
	ctx := context.Background()
	if _, err := r.ts.store.Renew(ctx, r.id, r.ts.replica, r.ts.leaseTTL); err != nil {
		r.cancel() // the lease is lost: another runner or the sweeper owns the task now
		return
	}
	if t, err := r.ts.store.Get(ctx, r.owner, r.id); err == nil && (t.CancelRequested || t.Status.Terminal()) {
		r.mu.Lock()
		r.cancelRequested = true
		r.mu.Unlock()
		r.cancel()
		return
	}
	r.mu.Lock()
	if r.lease != nil {
		r.lease.Reset(r.ts.leaseTTL / 3)
	}
	r.mu.Unlock()
}

// run executes the handler, feeding input rounds through the task, and
// settles the task with the outcome.
func (r *taskRunner) run(extra *RequestHandlerExtra, st *serverTool, p *CallToolParams) {
	defer close(r.ended) // last: after the task is settled
	defer r.ts.wg.Done()
	defer func() { <-r.ts.sem }()
	defer r.cancel()
	var res Result
	var err error
	func() {
		defer func() {
			if v := recover(); v != nil {
				r.s.logger.Error("pmcp: task handler panicked", "tool", p.Name, "panic", fmt.Sprint(v))
				res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error: handler panicked"}
			}
		}()
		for {
			res, err = r.s.runTool(extra.ctx, extra, st, p)
			ir := asInputRequired(err)
			if ir == nil {
				return
			}
			r.mu.Lock()
			if !r.decided {
				// Input asked for before the task exists: an ordinary
				// input_required round of the creating request.
				r.decided = true
				r.mu.Unlock()
				r.early <- earlyOutcome{err: err}
				res, err = nil, errNoTask
				return
			}
			r.mu.Unlock()
			answers, aerr := r.askModern(extra.ctx, ir.Requests)
			if aerr != nil {
				res, err = nil, aerr
				return
			}
			extra.mrtr = &mrtrIn{responses: answers, continuation: ir.Continuation, verified: ir.Continuation != nil}
		}
	}()
	r.returned.Store(true)
	if errors.Is(err, errNoTask) {
		return
	}
	if _, cerr := r.commit(); cerr != nil {
		if !errors.Is(cerr, errNoTask) {
			r.early <- earlyOutcome{err: cerr}
		}
		return
	}
	r.mu.Lock()
	if r.lease != nil {
		r.lease.Stop()
	}
	r.mu.Unlock()
	if r.ts.hooks != nil {
		r.ts.hooks.beforeSettle()
	}
	r.settle(extra, res, err)
	r.ts.mu.Lock()
	delete(r.ts.running, r.id)
	r.ts.mu.Unlock()
}

// settle moves the task to its terminal status. The _meta the handler set
// with SetResultMeta goes on the stored result, as on a synchronous one.
func (r *taskRunner) settle(extra *RequestHandlerExtra, res Result, err error) {
	ch := tasks.Change{Holder: r.ts.replica}
	r.mu.Lock()
	cancelled := r.cancelRequested
	r.mu.Unlock()
	switch {
	case cancelled || (err != nil && r.ctx.Err() != nil && r.ts.base.Err() == nil):
		ch.To = tasks.StatusCancelled
	case err != nil:
		ch.To = tasks.StatusFailed
		ch.Error = taskErrorOf(err)
	default:
		cr, _ := res.(*CallToolResult)
		if cr == nil {
			cr = &CallToolResult{}
		}
		out := *cr
		out.Meta = extra.mergeResultMeta(out.Meta, nil)
		if out.Content == nil {
			out.Content = []Content{}
		}
		if r.era == EraModern {
			out.ResultType = resultTypeComplete
		} else {
			out.ResultType = ""
		}
		raw, merr := Marshal(&out)
		if merr != nil {
			ch.To = tasks.StatusFailed
			ch.Error = &tasks.Error{Code: jsonrpc.CodeInternalError, Message: "cannot encode the tool result"}
			break
		}
		ch.To, ch.Result, ch.ResultIsError = tasks.StatusCompleted, raw, out.IsError
	}
	if r.ts.base.Err() != nil && ch.To == tasks.StatusCancelled {
		ch.To = tasks.StatusFailed
		ch.Error = &tasks.Error{Code: jsonrpc.CodeInternalError, Message: "server shut down before the task finished"}
	}
	t, uerr := r.ts.store.Update(context.Background(), r.owner, r.id, ch)
	if uerr == nil {
		r.notifyStatus(t)
	}
}

// taskErrorOf maps a handler's error to the task's error, as the
// dispatcher would send it (wireError). A task's outcome is stored for
// whoever asks for it later, not sent in the request's era: a
// *URLElicitationRequiredError is mapped as any other error (EraUnknown).
func taskErrorOf(err error) *tasks.Error {
	e := wireError(err, EraUnknown, nil)
	if e == nil { // err is nil: no handler ends a task with errListenEnded
		e = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
	}
	return &tasks.Error{Code: e.Code, Message: e.Message, Data: e.Data}
}

// notifyStatus sends notifications/tasks/status on a legacy session.
func (r *taskRunner) notifyStatus(t tasks.Task) {
	if r.notify == nil {
		return
	}
	lt := legacyTask(t)
	_ = r.notify(context.Background(), NotificationTasksStatus, &lt)
}

// runnerExtra is the handler context of a task: a copy of the creating
// request's, with the runner's ctx and a task peer, holding nothing of the
// request's buffers.
func runnerExtra(ctx context.Context, extra *RequestHandlerExtra, r *taskRunner) *RequestHandlerExtra {
	c := extra.Clone()
	c.ctx = ctx
	c.resultMeta = new(resultMetaSlot)
	c.closeStream = nil
	c.ProgressReporter = nil
	c.LogSink = nil
	c.notify = nil
	c.TaskRequest = cloneRaw(extra.TaskRequest)
	c.RequestMeta = cloneRaw(extra.RequestMeta)
	if extra.ProtocolContext != nil {
		pc := *extra.ProtocolContext
		if pc.ClientCapabilities != nil {
			caps := *pc.ClientCapabilities
			pc.ClientCapabilities = &caps
		}
		if pc.ClientInfo != nil {
			info := *pc.ClientInfo
			pc.ClientInfo = &info
		}
		c.ProtocolContext = &pc
	}
	if in := extra.mrtr; in != nil {
		cp := &mrtrIn{verified: in.verified, round: in.round, continuation: cloneRaw(in.continuation)}
		if in.responses != nil {
			cp.responses = make(InputResponses, len(in.responses))
			for k, v := range in.responses {
				cp.responses[k] = cloneRaw(v)
			}
		}
		c.mrtr = cp
	}
	c.Peer = &taskPeer{r: r, extra: c}
	c.task = r
	return c
}

func cloneRaw(v jsontext.Value) jsontext.Value {
	if v == nil {
		return nil
	}
	return append(jsontext.Value(nil), v...)
}

func copyCallParams(p *CallToolParams) *CallToolParams {
	return &CallToolParams{Name: p.Name, Arguments: cloneRaw(p.Arguments), Task: cloneRaw(p.Task), Meta: cloneRaw(p.Meta)}
}
