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

// hostedOwner owns every task a session hosts: the one server it talks to.
const hostedOwner = "server"

// hostedTasks is a session's client-hosted task state, built on first use.
type hostedTasks struct {
	mu      sync.Mutex
	store   *tasks.MemoryStore
	ctx     context.Context
	stop    context.CancelFunc
	cancels map[string]context.CancelFunc
	closed  bool
	wg      sync.WaitGroup
}

func hostedTasksCapability(sampling, elicitation bool) jsontext.Value {
	reqs := map[string]any{}
	if sampling {
		reqs["sampling"] = map[string]any{"createMessage": map[string]any{}}
	}
	if elicitation {
		reqs["elicitation"] = map[string]any{"create": map[string]any{}}
	}
	b, _ := Marshal(map[string]any{"list": map[string]any{}, "cancel": map[string]any{}, "requests": reqs})
	return b
}

func hasTaskParam(params jsontext.Value) bool {
	var p struct {
		Task jsontext.Value `json:"task"`
	}
	return Unmarshal(params, &p) == nil && len(p.Task) > 0 && p.Task.Kind() == '{'
}

func (h *hostedTasks) init(parent context.Context) (*tasks.MemoryStore, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, tasks.ErrClosed
	}
	if h.store == nil {
		st, err := tasks.NewMemoryStore(tasks.Options{MaxTasks: 256, MaxTasksPerOwner: 256})
		if err != nil {
			return nil, err
		}
		h.store = st
		h.ctx, h.stop = context.WithCancel(parent)
		h.cancels = make(map[string]context.CancelFunc)
	}
	return h.store, nil
}

func (h *hostedTasks) close() {
	h.mu.Lock()
	h.closed = true
	st, stop := h.store, h.stop
	h.mu.Unlock()
	if st == nil {
		return
	}
	stop()
	h.wg.Wait()
	_ = st.Close()
}

// hostTask answers a task-augmented sampling or elicitation request: the
// task is created, the handler runs in the background, and the server
// polls tasks/get and fetches the answer with tasks/result.
func (s *ClientSession) hostTask(req *jsonrpc.Request) (any, error) {
	h := &s.hosted
	st, err := h.init(s.ctx)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "client tasks unavailable"}
	}
	var p map[string]jsontext.Value
	if err := Unmarshal(req.Params, &p); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params"}
	}
	var md TaskMetadata
	if err := Unmarshal(p["task"], &md); err != nil || (md.TTL != nil && *md.TTL < 0) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params.task"}
	}
	delete(p, "task")
	params, _ := Marshal(p)
	spec := tasks.Spec{}
	if md.TTL != nil {
		spec.TTL = time.Duration(*md.TTL) * time.Millisecond
	}
	h.mu.Lock()
	running := len(h.cancels)
	h.mu.Unlock()
	if running >= defaultMaxHostedTasks {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "too many client-hosted tasks"}
	}
	t, err := st.Create(context.Background(), hostedOwner, spec)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "cannot create the task"}
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "session closing"}
	}
	ctx, cancel := context.WithCancel(h.ctx)
	h.cancels[t.ID] = cancel
	h.wg.Add(1)
	h.mu.Unlock()
	method, id := req.Method, t.ID
	go func() {
		defer h.wg.Done()
		defer func() {
			h.mu.Lock()
			delete(h.cancels, id)
			h.mu.Unlock()
			cancel()
		}()
		res, err := s.input(ctx, jsonrpc.ID{}, method, params)
		ch := tasks.Change{}
		if err == nil {
			raw, merr := Marshal(res)
			if merr == nil {
				ch.To, ch.Result = tasks.StatusCompleted, raw
			} else {
				err = merr
			}
		}
		if err != nil {
			ch.To = tasks.StatusFailed
			ch.Error = &tasks.Error{Code: jsonrpc.CodeInternalError, Message: capPeerString(err.Error())}
			if errors.Is(err, ErrNoInputHandler) {
				ch.Error.Code = jsonrpc.CodeMethodNotFound
			}
			if ctx.Err() != nil && h.ctx.Err() == nil {
				ch = tasks.Change{To: tasks.StatusCancelled}
			}
		}
		_, _ = st.Update(context.Background(), hostedOwner, id, ch)
	}()
	return &CreateTaskResult{Task: legacyTask(t)}, nil
}

// The server's tasks/* requests about the tasks this session hosts are
// served by the four functions below, the client handler column of the
// rows tasks/get, tasks/cancel, tasks/list and tasks/result
// (method_table.go); ClientSession.handle calls them only in the legacy
// era with ClientOptions.HostTasks.

// hostedStore returns the store of the hosted tasks, creating it on first
// use.
func (s *ClientSession) hostedStore() (*tasks.MemoryStore, error) {
	st, err := s.hosted.init(s.ctx)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "client tasks unavailable"}
	}
	return st, nil
}

// hostedStoreErr is the JSON-RPC error of a hosted task store error.
func hostedStoreErr(err error) error {
	switch {
	case errors.Is(err, tasks.ErrTerminal):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "task is already in a terminal status"}
	case errors.Is(err, tasks.ErrInvalidCursor):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor"}
	case errors.Is(err, context.Canceled):
		return err
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown task id"}
}

// hostedTaskID returns the store and the taskId of a hosted task request.
func (s *ClientSession) hostedTaskID(req *jsonrpc.Request) (*tasks.MemoryStore, string, error) {
	st, err := s.hostedStore()
	if err != nil {
		return nil, "", err
	}
	var p taskIDParams
	if err := Unmarshal(req.Params, &p); err != nil || p.TaskID == "" {
		return nil, "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing taskId"}
	}
	return st, p.TaskID, nil
}

// serveHostedList answers tasks/list.
func (s *ClientSession) serveHostedList(ctx context.Context, req *jsonrpc.Request) (any, error) {
	st, err := s.hostedStore()
	if err != nil {
		return nil, err
	}
	var p paginatedParams
	_ = Unmarshal(req.Params, &p)
	page, err := st.List(ctx, hostedOwner, p.Cursor, 0)
	if err != nil {
		return nil, hostedStoreErr(err)
	}
	out := &ListTasksResult{Tasks: make([]Task, len(page.Tasks)), NextCursor: page.NextCursor}
	for i, t := range page.Tasks {
		out.Tasks[i] = legacyTask(t)
	}
	return out, nil
}

// serveHostedGet answers tasks/get.
func (s *ClientSession) serveHostedGet(ctx context.Context, req *jsonrpc.Request) (any, error) {
	st, id, err := s.hostedTaskID(req)
	if err != nil {
		return nil, err
	}
	t, err := st.Get(ctx, hostedOwner, id)
	if err != nil {
		return nil, hostedStoreErr(err)
	}
	return &TaskResult{Task: legacyTask(t)}, nil
}

// serveHostedCancel answers tasks/cancel: the task is marked cancelled
// and its handler's ctx ends.
func (s *ClientSession) serveHostedCancel(ctx context.Context, req *jsonrpc.Request) (any, error) {
	st, id, err := s.hostedTaskID(req)
	if err != nil {
		return nil, err
	}
	t, err := st.Update(ctx, hostedOwner, id, tasks.Change{To: tasks.StatusCancelled})
	if err != nil {
		return nil, hostedStoreErr(err)
	}
	h := &s.hosted
	h.mu.Lock()
	if c := h.cancels[id]; c != nil {
		c()
	}
	h.mu.Unlock()
	return &TaskResult{Task: legacyTask(t)}, nil
}

// serveHostedResult answers tasks/result: it waits for the terminal
// snapshot.
func (s *ClientSession) serveHostedResult(ctx context.Context, req *jsonrpc.Request) (any, error) {
	st, id, err := s.hostedTaskID(req)
	if err != nil {
		return nil, err
	}
	w, err := st.Watch(ctx, hostedOwner, id)
	if err != nil {
		return nil, hostedStoreErr(err)
	}
	var last tasks.Task
	for t := range w {
		last = t
	}
	switch last.Status {
	case tasks.StatusCompleted:
		var m map[string]jsontext.Value
		if err := Unmarshal(last.Result, &m); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "stored result is unreadable"}
		}
		rt, _ := Marshal(map[string]any{MetaRelatedTask: RelatedTask{TaskID: id}})
		m["_meta"] = rt
		return m, nil
	case tasks.StatusFailed:
		if e := last.Error; e != nil {
			return nil, &jsonrpc.Error{Code: e.Code, Message: e.Message, Data: e.Data}
		}
	case tasks.StatusCancelled:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "task was cancelled"}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown task id"}
}
