package pmcp

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/jsonrpc"
	"github.com/gopmcp/pmcp/tasks"
)

// unknownTask is the one answer for an unknown, expired or foreign task id,
// so that the answer tells nothing about other owners' tasks.
func unknownTask() *jsonrpc.Error {
	return invalidParams("unknown task id")
}

// taskCaller is what every tasks/* method checks first: in the modern
// era the client's tasks extension; then the caller's owner.
func taskCaller(extra *RequestHandlerExtra) (owner string, modern bool, err error) {
	modern = extra.Era() == EraModern
	if modern && !hasTasksExtension(extra.ClientCapabilities()) {
		return "", false, missingTasksExtension().rpcError()
	}
	owner, err = taskOwner(extra)
	return owner, modern, err
}

// taskTarget is taskCaller, then the taskId of tasks/get, tasks/cancel
// and tasks/result.
func taskTarget(req *jsonrpc.Request, extra *RequestHandlerExtra) (owner string, modern bool, id string, err error) {
	if owner, modern, err = taskCaller(extra); err != nil {
		return "", false, "", err
	}
	p, err := decodeParams[taskIDParams](req.Params)
	if err != nil {
		return "", false, "", err
	}
	if p.TaskID == "" {
		return "", false, "", invalidParams("missing taskId")
	}
	return owner, modern, p.TaskID, nil
}

// taskStoreError is the answer to a task store's error.
func taskStoreError(err error) error {
	switch {
	case errors.Is(err, tasks.ErrNotFound), errors.Is(err, tasks.ErrInvalid):
		return unknownTask()
	case errors.Is(err, tasks.ErrTerminal):
		return invalidParams("task is already in a terminal status")
	case errors.Is(err, tasks.ErrInvalidCursor):
		return invalidParams("invalid cursor")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "task store error"}
}

// The serve functions below answer the tasks/* methods of both eras, one
// per method (the rows of method_table.go name them).

func (s *Server) serveTasksList(ctx context.Context, req *jsonrpc.Request, _ *requestEnv, extra *RequestHandlerExtra, rs *reqState, _ *reqParams) (Result, error) {
	owner, _, err := taskCaller(extra)
	if err != nil {
		return nil, err
	}
	p, err := decodeParams[paginatedParams](req.Params)
	if err != nil {
		return nil, err
	}
	page, err := s.tasks.store.List(ctx, owner, p.Cursor, 0)
	if err != nil {
		return nil, taskStoreError(err)
	}
	out := &ListTasksResult{Tasks: make([]Task, len(page.Tasks)), NextCursor: page.NextCursor}
	for i, t := range page.Tasks {
		out.Tasks[i] = legacyTask(t)
	}
	return rs.out.adopt(out), nil
}

func (s *Server) serveTasksUpdate(ctx context.Context, req *jsonrpc.Request, _ *requestEnv, extra *RequestHandlerExtra, rs *reqState, _ *reqParams) (Result, error) {
	owner, _, err := taskCaller(extra)
	if err != nil {
		return nil, err
	}
	// tasks/update carries inputResponses too: the same bounds as a
	// request's (server_mrtr.go), checked before the store sees it.
	if len(req.Params) > DefaultMaxInputTotalBytes {
		return nil, invalidParams("tasks/update params exceed %d bytes", DefaultMaxInputTotalBytes)
	}
	p, err := decodeParams[updateTaskParams](req.Params)
	if err != nil {
		return nil, err
	}
	if p.TaskID == "" {
		return nil, invalidParams("missing taskId")
	}
	if len(p.InputResponses) > DefaultMaxInputResponses {
		return nil, invalidParams("inputResponses has more than %d entries", DefaultMaxInputResponses)
	}
	if _, err := s.tasks.store.DeliverInputs(ctx, owner, p.TaskID, p.InputResponses); err != nil {
		return nil, taskStoreError(err)
	}
	return rs.out.adopt(&EmptyResult{}), nil
}

func (s *Server) serveTasksGet(ctx context.Context, req *jsonrpc.Request, _ *requestEnv, extra *RequestHandlerExtra, rs *reqState, _ *reqParams) (Result, error) {
	owner, modern, id, err := taskTarget(req, extra)
	if err != nil {
		return nil, err
	}
	t, err := s.tasks.store.Get(ctx, owner, id)
	if err != nil {
		return nil, taskStoreError(err)
	}
	if modern {
		return rs.out.adopt(modernTask(t, true)), nil
	}
	return rs.out.adopt(&TaskResult{Task: legacyTask(t)}), nil
}

func (s *Server) serveTasksCancel(ctx context.Context, req *jsonrpc.Request, _ *requestEnv, extra *RequestHandlerExtra, rs *reqState, _ *reqParams) (Result, error) {
	owner, modern, id, err := taskTarget(req, extra)
	if err != nil {
		return nil, err
	}
	ts := s.tasks
	if modern {
		t, err := ts.store.RequestCancel(ctx, owner, id)
		if err != nil {
			return nil, taskStoreError(err)
		}
		if !t.Status.Terminal() && !ts.cancelRunner(id, true) {
			// No runner of ours holds it (it died, or another replica
			// runs it without watching): settle it here.
			_, _ = ts.store.Update(ctx, owner, id, tasks.Change{To: tasks.StatusCancelled})
		}
		return rs.out.adopt(&EmptyResult{}), nil
	}
	t, err := ts.store.Update(ctx, owner, id, tasks.Change{To: tasks.StatusCancelled})
	if err != nil {
		return nil, taskStoreError(err)
	}
	ts.cancelRunner(id, false)
	if r := ts.runner(id); r != nil {
		r.notifyStatus(t)
	}
	return rs.out.adopt(&TaskResult{Task: legacyTask(t)}), nil
}

func (s *Server) serveTasksResult(ctx context.Context, req *jsonrpc.Request, env *requestEnv, extra *RequestHandlerExtra, rs *reqState, _ *reqParams) (Result, error) {
	owner, _, id, err := taskTarget(req, extra)
	if err != nil {
		return nil, err
	}
	return s.taskResult(ctx, env, owner, id, rs)
}

func (ts *taskServer) runner(id string) *taskRunner {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.running[id]
}

// cancelRunner cancels the handler of a task run by this process; it
// reports whether there was one.
func (ts *taskServer) cancelRunner(id string, cooperative bool) bool {
	r := ts.runner(id)
	if r == nil {
		return false
	}
	if cooperative {
		r.mu.Lock()
		r.cancelRequested = true
		r.mu.Unlock()
	}
	r.cancel()
	return true
}

// taskResult serves the blocking 2025-11-25 tasks/result: it waits until
// the task is terminal, carrying the runner's requests to the client on its
// own back-channel meanwhile, and answers with what the tool call would
// have answered.
func (s *Server) taskResult(ctx context.Context, env *requestEnv, owner, id string, rs *reqState) (Result, error) {
	ts := s.tasks
	w, err := ts.store.Watch(ctx, owner, id)
	if err != nil {
		return nil, taskStoreError(err)
	}
	if env.call != nil {
		if r := ts.runner(id); r != nil {
			defer r.addWaiter(env.call)()
		}
	}
	var last tasks.Task
	seen := false
	for t := range w {
		last, seen = t, true
		if t.Status.Terminal() {
			break
		}
	}
	if !seen || !last.Status.Terminal() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, unknownTask()
	}
	meta := Meta{MetaRelatedTask: RelatedTask{TaskID: id}}
	switch last.Status {
	case tasks.StatusCompleted:
		var res CallToolResult
		if err := Unmarshal(last.Result, &res); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "stored task result is unreadable"}
		}
		res.ResultType = ""
		res.Meta = mergeMeta(res.Meta, meta, nil)
		return rs.out.adopt(&res), nil
	case tasks.StatusFailed:
		e := last.Error
		if e == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "task failed"}
		}
		return nil, &jsonrpc.Error{Code: e.Code, Message: e.Message, Data: e.Data}
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "task was cancelled"}
}

func stampString(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func millisPtr(d time.Duration) *int64 {
	v := d.Milliseconds()
	if d > 0 && v == 0 {
		v = 1
	}
	return &v
}

// legacyTask renders a task for the 2025-11-25 era: a completed task whose
// tool result has isError shows as failed.
func legacyTask(t tasks.Task) Task {
	out := Task{TaskID: t.ID, Status: string(t.Status), StatusMessage: t.StatusMessage,
		CreatedAt: stampString(t.CreatedAt), LastUpdatedAt: stampString(t.UpdatedAt)}
	if t.Status == tasks.StatusCompleted && t.ResultIsError {
		out.Status = string(tasks.StatusFailed)
	}
	if t.TTL > 0 {
		out.TTL = millisPtr(t.TTL)
	}
	if t.PollInterval > 0 {
		out.PollInterval = millisPtr(t.PollInterval)
	}
	return out
}

// modernTask renders a task for the 2026-07-28 era; detailed adds the
// inputRequests, result or error (tasks/get and notifications/tasks).
func modernTask(t tasks.Task, detailed bool) *DetailedTask {
	out := &DetailedTask{TaskID: t.ID, Status: string(t.Status), StatusMessage: t.StatusMessage,
		CreatedAt: stampString(t.CreatedAt), LastUpdatedAt: stampString(t.UpdatedAt)}
	if t.TTL > 0 {
		out.TTLMs = millisPtr(t.TTL)
	}
	if t.PollInterval > 0 {
		out.PollIntervalMs = millisPtr(t.PollInterval)
	}
	if !detailed {
		return out
	}
	switch t.Status {
	case tasks.StatusInputRequired:
		if len(t.InputRequests) > 0 {
			out.InputRequests = make(map[string]jsontext.Value, len(t.InputRequests))
			for k, v := range t.InputRequests {
				out.InputRequests[k] = v
			}
		}
	case tasks.StatusCompleted:
		out.Result = t.Result
	case tasks.StatusFailed:
		if t.Error != nil {
			out.Error = &TaskError{Code: t.Error.Code, Message: t.Error.Message, Data: t.Error.Data}
		}
	}
	return out
}

// defaultMaxListenTaskIDs bounds the taskIds of one subscriptions/listen.
const defaultMaxListenTaskIDs = 64

// watchTasks starts watching the tasks a modern listen asked for and
// returns the channel their snapshots arrive on (nil when none) and a
// function that stops the watches and waits for them. Unknown and foreign
// ids are left out of the acknowledgement. Ids the server's own tasks do
// not have are offered to ServerOptions.WatchTask.
func (s *Server) watchTasks(ctx context.Context, extra *RequestHandlerExtra, ids []string, ack *SubscriptionFilter) (<-chan *DetailedTask, func(), error) {
	if len(ids) == 0 {
		return nil, func() {}, nil
	}
	hook := s.opts.WatchTask
	if s.tasks == nil && hook == nil || !hasTasksExtension(extra.ClientCapabilities()) {
		return nil, nil, missingTasksExtension().rpcError()
	}
	if len(ids) > defaultMaxListenTaskIDs {
		return nil, nil, invalidParams("more than %d taskIds", defaultMaxListenTaskIDs)
	}
	var owner string
	if s.tasks != nil {
		var err error
		if owner, err = taskOwner(extra); err != nil {
			return nil, nil, err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	out := make(chan *DetailedTask)
	var wg sync.WaitGroup
	forward := func(w <-chan *DetailedTask) {
		for t := range w {
			select {
			case out <- t:
			case <-ctx.Done():
				return
			}
		}
	}
	for _, id := range ids {
		if s.tasks != nil {
			if w, err := s.tasks.store.Watch(ctx, owner, id); err == nil {
				ack.TaskIDs = append(ack.TaskIDs, id)
				wg.Go(func() {
					for t := range w {
						select {
						case out <- modernTask(t, true):
						case <-ctx.Done():
							return
						}
					}
				})
				continue
			}
		}
		if hook == nil {
			continue
		}
		if w, ok := hook(ctx, extra, id); ok && w != nil {
			ack.TaskIDs = append(ack.TaskIDs, id)
			wg.Go(func() { forward(w) })
		}
	}
	return out, func() { cancel(); wg.Wait() }, nil
}
