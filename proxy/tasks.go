package proxy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// Tasks across the bridge. A downstream task-augmented tools/call (a
// 2025-11-25 params.task, or a 2026-07-28 request declaring the tasks
// extension) is forwarded as a task-augmented call (pmcp's CallToolTask,
// which speaks the upstream's era) to an upstream that declares tasks; the
// task the upstream creates is shown downstream under an id that begins
// with the prefix its tools have (none for a single unprefixed upstream)
// and is bound to the principal that created it (tasks_ids.go). tasks/get, tasks/result, tasks/cancel,
// tasks/update and tasks/list are routed back by that prefix, to the
// upstream session of the same downstream session (per-session upstreams)
// or the shared one, which is where the task's owner lives: nothing is
// kept in the proxy, so ids stay valid as long as the upstream keeps the
// task, and an id of another session's upstream is unknown there.
//
// The eras are translated both ways: a task is rendered in the downstream
// era's shape; a 2025-11-25 upstream's terminal task is read with
// tasks/result so that a 2026-07-28 client gets its result (a tool error
// completed with isError there, failed in the 2025-11-25 era); a
// 2025-11-25 client's blocking tasks/result waits for the upstream task
// (polling a 2026-07-28 upstream) and carries the upstream's requests for
// input to the client meanwhile.

// declaresTasks reports whether the upstream server serves task-augmented
// tools/call in its era.
func declaresTasks(c *pmcp.ServerCapabilities) bool {
	if c == nil {
		return false
	}
	if _, ok := c.Extensions[pmcp.ExtensionTasks]; ok {
		return true
	}
	return len(c.Tasks) > 0 && string(c.Tasks) != "null"
}

// hasTasksExtension reports whether a 2026-07-28 request declared the
// tasks extension.
func hasTasksExtension(c *pmcp.ClientCapabilities) bool {
	if c == nil {
		return false
	}
	_, ok := c.Extensions[pmcp.ExtensionTasks]
	return ok
}

func missingTasksExtension() error {
	return &pmcp.MissingCapabilityError{Required: map[string]any{"extensions": map[string]any{pmcp.ExtensionTasks: map[string]any{}}}}
}

// wantsTask reports whether a downstream tools/call asks for a task, and
// the lifetime a 2025-11-25 client asked for.
func wantsTask(req *pmcp.Request, fp *featureParams) (bool, time.Duration, error) {
	if req.Method != pmcp.MethodToolsCall {
		return false, 0, nil
	}
	if req.Extra.Era() == pmcp.EraModern {
		return hasTasksExtension(req.Extra.ClientCapabilities()), 0, nil
	}
	if len(fp.Task) == 0 || string(fp.Task) == "null" {
		return false, 0, nil
	}
	var md pmcp.TaskMetadata
	if fp.Task.Kind() != '{' || pmcp.Unmarshal(fp.Task, &md) != nil {
		return false, 0, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params.task"}
	}
	if md.TTL != nil && *md.TTL > 0 {
		return true, time.Duration(*md.TTL) * time.Millisecond, nil
	}
	return true, 0, nil
}

// callTask forwards a task-augmented tools/call: the created task as the
// downstream era shows it, or the upstream's synchronous answer.
func (p *Proxy) callTask(ctx context.Context, req *pmcp.Request, sl *slot, l *live, owner, name string, args any, ttl time.Duration, modern bool, opts []pmcp.CallOption) (pmcp.Result, error) {
	up := sl.up
	ct, err := l.conn.Session.CallToolTask(ctx, name, args, ttl, opts...)
	if err != nil {
		return nil, err
	}
	if ct.ID() == "" { // answered at once
		out, err := ct.Wait(ctx, nil)
		if err != nil {
			return nil, err
		}
		out.ResultType = ""
		return out, nil
	}
	st := *ct.Created
	if len(st.TaskID) > maxUpstreamTaskID {
		_ = ct.Cancel(context.WithoutCancel(ctx))
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("upstream %q: its task id is longer than %d bytes", up.name, maxUpstreamTaskID)}
	}
	if l.modern && sl.session {
		l.created.add(ct.ID())
	}
	if st.Terminal() {
		// Done at once: its outcome decides how it shows in the
		// downstream era (a tool error is failed in 2025-11-25).
		full, err := p.taskStatus(ctx, sl, l, ct, modern)
		if err != nil {
			return nil, err
		}
		st = *full
	}
	st.TaskID = p.taskIDs.mint(owner, up, st.TaskID)
	if modern {
		dt := modernTask(&st)
		dt.ResultType = pmcp.ResultTypeTask
		return dt, nil
	}
	p.watchLegacyTask(req.Extra, req.Extra.TaskStatusNotifier(), sl, l, ct, &st)
	return &pmcp.CreateTaskResult{Task: legacyTask(&st)}, nil
}

// taskParams are the params of the tasks/* requests.
type taskParams struct {
	TaskID         string                    `json:"taskId"`
	Cursor         string                    `json:"cursor"`
	InputResponses map[string]jsontext.Value `json:"inputResponses"`
}

func unknownTask() error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown task id"}
}

// errTaskCancelled is the 2025-11-25 answer to tasks/result for a
// cancelled task, as a pmcp server gives it.
func errTaskCancelled() error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "task was cancelled"}
}

// serveTask answers a downstream tasks/* request from the upstream that
// owns the task.
func (p *Proxy) serveTask(ctx context.Context, req *pmcp.Request) (pmcp.Result, error) {
	modern := req.Extra.Era() == pmcp.EraModern
	if modern && !hasTasksExtension(req.Extra.ClientCapabilities()) {
		return nil, missingTasksExtension()
	}
	var tp taskParams
	if err := pmcp.Unmarshal(req.Params, &tp); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: " + err.Error()}
	}
	if req.Method == pmcp.MethodTasksList {
		return p.listTasks(ctx, req, tp.Cursor)
	}
	if tp.TaskID == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing taskId"}
	}
	owner, err := taskOwner(req)
	if err != nil {
		return nil, unknownTask()
	}
	up, rest, ok := p.route(tp.TaskID)
	if !ok {
		return nil, unknownTask()
	}
	id, ok := p.taskIDs.open(owner, up, rest)
	if !ok {
		return nil, unknownTask()
	}
	sl, l, err := p.conn(ctx, req, up)
	if err != nil {
		return nil, err
	}
	if !l.tasks {
		return nil, unknownTask()
	}
	ct := l.conn.Session.Task(id)
	switch req.Method {
	case pmcp.MethodTasksGet:
		st, err := p.taskStatus(ctx, sl, l, ct, modern)
		if err != nil {
			return nil, err
		}
		st.TaskID = tp.TaskID
		if modern {
			return modernTask(st), nil
		}
		return &pmcp.TaskResult{Task: legacyTask(st)}, nil
	case pmcp.MethodTasksCancel:
		if err := ct.Cancel(ctx); err != nil {
			return nil, p.upstreamError(ctx, up, l, err)
		}
		if modern {
			return &pmcp.EmptyResult{}, nil
		}
		st, err := ct.Get(ctx)
		if err != nil {
			return nil, p.upstreamError(ctx, up, l, err)
		}
		st.TaskID = tp.TaskID
		return &pmcp.TaskResult{Task: legacyTask(st)}, nil
	case pmcp.MethodTasksUpdate:
		if !l.modern {
			// A 2025-11-25 upstream asks for a task's input on tasks/result.
			if err := p.updateLegacyTask(req, sl, id, tp.InputResponses); err != nil {
				return nil, err
			}
			return &pmcp.EmptyResult{}, nil
		}
		if err := ct.Update(ctx, tp.InputResponses); err != nil {
			return nil, p.upstreamError(ctx, up, l, err)
		}
		return &pmcp.EmptyResult{}, nil
	case pmcp.MethodTasksResult:
		return p.taskResult(ctx, req, sl, l, ct, tp.TaskID)
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found: " + req.Method}
}

// taskStatus reads the upstream task; for a 2026-07-28 client the status
// of a terminal task of a 2025-11-25 upstream is completed with the result
// (isError included) or failed with the error, read with tasks/result.
func (p *Proxy) taskStatus(ctx context.Context, sl *slot, l *live, ct *pmcp.ClientTask, modern bool) (*pmcp.DetailedTask, error) {
	st, err := ct.Get(ctx)
	if err != nil {
		return nil, p.upstreamError(ctx, sl.up, l, err)
	}
	if modern && !l.modern {
		if st.Terminal() {
			res, err := ct.Wait(ctx, nil)
			terminal(st, res, err)
		} else if st.Status == "input_required" {
			p.legacyTaskInput(ctx, sl, ct, st)
		}
	}
	return st, nil
}

// terminal sets the outcome of a 2025-11-25 upstream's task on st.
func terminal(st *pmcp.DetailedTask, res *pmcp.CallToolResult, err error) {
	var je *jsonrpc.Error
	switch {
	case err == nil:
		res.ResultType = ""
		if raw, merr := pmcp.Marshal(res); merr == nil {
			st.Status, st.Result = "completed", raw
		}
	case errors.Is(err, pmcp.ErrTaskCancelled):
		st.Status = "cancelled"
	case errors.As(err, &je):
		st.Status, st.Error = "failed", &pmcp.TaskError{Code: int64(je.Code), Message: je.Message, Data: je.Data}
	default:
		st.Status, st.Error = "failed", &pmcp.TaskError{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
}

// taskResult serves the blocking 2025-11-25 tasks/result: the upstream
// task is waited for in a job, so that its requests for input reach the
// downstream client.
func (p *Proxy) taskResult(ctx context.Context, req *pmcp.Request, sl *slot, l *live, ct *pmcp.ClientTask, downID string) (pmcp.Result, error) {
	up := sl.up
	r := &round{progress: req.Extra.ProgressReporter, log: req.Extra.LogSink, level: req.Extra.EffectiveLogLevel()}
	j, err := p.startJob(ctx, sl, r, func(ctx context.Context, _ *job) (pmcp.Result, error) {
		res, err := ct.Wait(ctx, nil)
		switch {
		case errors.Is(err, pmcp.ErrTaskCancelled):
			return nil, errTaskCancelled()
		case err != nil:
			return nil, p.upstreamError(ctx, up, l, err)
		}
		res.ResultType = ""
		meta := pmcp.Meta{}
		for k, v := range res.Meta {
			meta[k] = v
		}
		meta[pmcp.MetaRelatedTask] = pmcp.RelatedTask{TaskID: downID}
		res.Meta = meta
		return res, nil
	})
	if err != nil {
		return nil, err
	}
	return p.driveLegacy(ctx, req.Extra, j)
}

// maxListPages bounds the pages of one upstream's tasks/list read for one
// downstream tasks/list.
const maxListPages = 16

// listTasks serves the 2025-11-25 tasks/list: the tasks of every upstream
// that lists them (2025-11-25 upstreams), ids as the caller knows them. A
// single upstream pages as it does; several are read in full (at most
// maxListPages pages each) into one page. Only an upstream session of the
// downstream session's own holds nothing but the caller's tasks: a shared
// one (Options.Shared) lists none, as the proxy cannot tell whose they are.
func (p *Proxy) listTasks(ctx context.Context, req *pmcp.Request, cursor string) (pmcp.Result, error) {
	out := &pmcp.ListTasksResult{Tasks: []pmcp.Task{}}
	owner, err := taskOwner(req)
	if err != nil {
		return out, nil
	}
	ups := p.upstreams() // one set for the whole request (SetUpstreams)
	for _, up := range ups {
		sl, l, err := p.conn(ctx, req, up)
		if err != nil {
			if len(ups) == 1 {
				return nil, err
			}
			continue
		}
		if !l.tasks || !p.sessionsOwn(req, sl) {
			continue
		}
		if l.modern {
			// The 2026-07-28 upstream has no tasks/list: the session's
			// own upstream lists what this session created there.
			out.Tasks = append(out.Tasks, p.createdTasks(ctx, owner, up, l)...)
			continue
		}
		c := cursor
		for range maxListPages {
			page, err := l.conn.Session.ListTasks(ctx, c)
			if err != nil {
				if len(ups) == 1 {
					return nil, p.upstreamError(ctx, up, l, err)
				}
				break
			}
			for _, t := range page.Tasks {
				if len(t.TaskID) > maxUpstreamTaskID {
					continue
				}
				t.TaskID = p.taskIDs.mint(owner, up, t.TaskID)
				out.Tasks = append(out.Tasks, t)
			}
			if len(ups) == 1 {
				out.NextCursor = page.NextCursor
				return out, nil
			}
			if c = page.NextCursor; c == "" {
				break
			}
		}
	}
	return out, nil
}

// maxCreatedTasks bounds the tasks a legacy session's tasks/list shows
// of a 2026-07-28 upstream (the newest): one tasks/get each.
const maxCreatedTasks = 100

// taskLog is the bounded list of the ids of live.created.
type taskLog struct {
	mu  sync.Mutex
	ids []string
}

func (tl *taskLog) add(id string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if len(tl.ids) == maxCreatedTasks {
		tl.ids = append(tl.ids[:0], tl.ids[1:]...)
	}
	tl.ids = append(tl.ids, id)
}

func (tl *taskLog) snapshot() []string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return slices.Clone(tl.ids)
}

func (tl *taskLog) forget(id string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.ids = slices.DeleteFunc(tl.ids, func(s string) bool { return s == id })
}

// createdTasks reads the tasks of l.created from the upstream, as the
// 2025-11-25 era lists them; a task the upstream no longer knows (expired)
// is forgotten.
func (p *Proxy) createdTasks(ctx context.Context, owner string, up *upstream, l *live) []pmcp.Task {
	var out []pmcp.Task
	for _, id := range l.created.snapshot() {
		st, err := l.conn.Session.Task(id).Get(ctx)
		if err != nil {
			var je *jsonrpc.Error
			if errors.As(err, &je) && je.Code == jsonrpc.CodeInvalidParams {
				l.created.forget(id)
			}
			continue
		}
		if len(st.TaskID) > maxUpstreamTaskID {
			continue
		}
		st.TaskID = p.taskIDs.mint(owner, up, st.TaskID)
		out = append(out, legacyTask(st))
	}
	return out
}

// sessionsOwn reports whether sl is the upstream session of req's
// downstream session alone.
func (p *Proxy) sessionsOwn(req *pmcp.Request, sl *slot) bool {
	key := slotKey{up: sl.up, sess: req.Extra.SessionKey()}
	if p.opts.Shared || key.sess.IsZero() {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.slots[key] == sl
}

// modernTask renders st as the 2026-07-28 tasks extension shows a task:
// a copy of the client's snapshot without its result members.
func modernTask(st *pmcp.DetailedTask) *pmcp.DetailedTask {
	t := *st
	t.ResultFields = pmcp.ResultFields{}
	return &t
}

// legacyTask renders st as the 2025-11-25 era shows a task: a task
// completed with a tool error (a 2026-07-28 upstream's) shows as failed.
func legacyTask(st *pmcp.DetailedTask) pmcp.Task {
	t := pmcp.Task{TaskID: st.TaskID, Status: st.Status, StatusMessage: st.StatusMessage, CreatedAt: st.CreatedAt,
		LastUpdatedAt: st.LastUpdatedAt, TTL: st.TTLMs, PollInterval: st.PollIntervalMs}
	if st.Status == "completed" && len(st.Result) > 0 {
		var r struct {
			IsError bool `json:"isError"`
		}
		if pmcp.Unmarshal(st.Result, &r) == nil && r.IsError {
			t.Status = "failed"
		}
	}
	return t
}
