package pmcp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// ErrTaskCancelled is returned by ClientTask.Wait when the task ended
// cancelled.
var ErrTaskCancelled = errors.New("pmcp: task cancelled")

// pollEvery is the server's suggested delay between polls of t, 0 when
// it suggested none.
func (t *DetailedTask) pollEvery() time.Duration {
	if t.PollIntervalMs == nil || *t.PollIntervalMs <= 0 {
		return 0
	}
	return time.Duration(*t.PollIntervalMs) * time.Millisecond
}

// wireTask decodes both eras' task shapes.
type wireTask struct {
	ResultType     string                    `json:"resultType"`
	TaskID         string                    `json:"taskId"`
	Status         string                    `json:"status"`
	StatusMessage  string                    `json:"statusMessage"`
	CreatedAt      string                    `json:"createdAt"`
	LastUpdatedAt  string                    `json:"lastUpdatedAt"`
	TTL            *int64                    `json:"ttl"`
	PollInterval   *int64                    `json:"pollInterval"`
	TTLMs          *int64                    `json:"ttlMs"`
	PollIntervalMs *int64                    `json:"pollIntervalMs"`
	InputRequests  map[string]jsontext.Value `json:"inputRequests"`
	Result         jsontext.Value            `json:"result"`
	Error          *TaskError                `json:"error"`
	Task           *wireTask                 `json:"task"`
}

func (w *wireTask) status() *DetailedTask {
	ms := func(a, b *int64) *int64 {
		if a == nil {
			a = b
		}
		if a == nil || *a <= 0 {
			return nil
		}
		v := *a
		return &v
	}
	return &DetailedTask{TaskID: w.TaskID, Status: w.Status, StatusMessage: w.StatusMessage, CreatedAt: w.CreatedAt,
		LastUpdatedAt: w.LastUpdatedAt, TTLMs: ms(w.TTLMs, w.TTL), PollIntervalMs: ms(w.PollIntervalMs, w.PollInterval),
		InputRequests: w.InputRequests, Result: w.Result, Error: w.Error}
}

// ClientTask is a tool call the server runs as a task. Wait for its result,
// Get its status or Cancel it; the same methods work in both eras.
type ClientTask struct {
	s    *ClientSession
	name string
	// sync is the result when the server answered synchronously.
	sync *CallToolResult
	// Created is the task as the server created it (nil for a
	// synchronous answer).
	Created *DetailedTask
}

// ID returns the task id, empty when the server answered synchronously.
func (t *ClientTask) ID() string {
	if t.Created == nil {
		return ""
	}
	return t.Created.TaskID
}

// Task returns a handle on a task created earlier, by id: to wait for it
// after a reconnect, for example. The server only answers for tasks of the
// same owner (see ServerOptions.Tasks).
func (s *ClientSession) Task(id string) *ClientTask {
	return &ClientTask{s: s, Created: &DetailedTask{TaskID: id}}
}

// CallToolTask calls a tool asking for a task: in the 2025-11-25 era with
// params.task, in the 2026-07-28 era by declaring the tasks extension on
// this request (the server decides). A server may still answer at once;
// Wait then returns that result. ttl (0 = the server's default) is the
// lifetime asked for in the 2025-11-25 era.
//
// The task's status reaches Notifications.TaskStatus, when set, in both
// eras without further calls: a 2025-11-25 server pushes it, and a
// 2026-07-28 session keeps a subscriptions/listen open for the live tasks
// it created (at most 64) until they end.
func (s *ClientSession) CallToolTask(ctx context.Context, name string, args any, ttl time.Duration, opts ...CallOption) (*ClientTask, error) {
	a, err := encodeArguments(args)
	if err != nil {
		return nil, err
	}
	var task jsontext.Value
	if s.Era() != EraModern {
		md := TaskMetadata{}
		if ttl > 0 {
			v := ttl.Milliseconds()
			md.TTL = &v
		}
		task, _ = Marshal(&md)
	}
	opts = append(opts, withTasksExtension())
	raw, err := s.roundTrip(ctx, MethodToolsCall, opts, func(meta, responses jsontext.Value, state *string) any {
		return &CallToolParams{Name: name, Arguments: a, Task: task, InputResponses: responses, RequestState: state, Meta: meta}
	})
	if err != nil {
		return nil, err
	}
	t, err := s.taskFromCall(name, raw)
	if err == nil && t.Created != nil && !t.Created.Terminal() {
		s.watchTask(t.ID())
	}
	return t, err
}

func (s *ClientSession) taskFromCall(name string, raw jsontext.Value) (*ClientTask, error) {
	var w wireTask
	if err := Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("pmcp: tools/call: malformed result: %s", capPeerString(err.Error()))
	}
	switch {
	case w.ResultType == ResultTypeTask && w.TaskID != "":
		return &ClientTask{s: s, name: name, Created: w.status()}, nil
	case w.Task != nil && w.Task.TaskID != "":
		return &ClientTask{s: s, name: name, Created: w.Task.status()}, nil
	}
	var res CallToolResult
	if err := decodeInto(MethodToolsCall, raw, &res); err != nil {
		return nil, err
	}
	return &ClientTask{s: s, name: name, sync: &res}, nil
}

// withTasksExtension declares the tasks extension on one modern request.
func withTasksExtension() CallOption { return func(c *callConfig) { c.tasks = true } }

// taskCall sends a tasks/* request and returns the raw result.
func (s *ClientSession) taskCall(ctx context.Context, method, id string, extra map[string]any) (jsontext.Value, error) {
	meta, err := s.requestMeta(&callConfig{tasks: true}, nil)
	if err != nil {
		return nil, err
	}
	p := map[string]any{"taskId": id}
	for k, v := range extra {
		p[k] = v
	}
	if meta != nil {
		p["_meta"] = meta
	}
	return s.call(ctx, method, p)
}

// Get returns the task's current status (tasks/get).
func (t *ClientTask) Get(ctx context.Context) (*DetailedTask, error) {
	if t.sync != nil {
		return &DetailedTask{Status: "completed"}, nil
	}
	raw, err := t.s.taskCall(ctx, MethodTasksGet, t.ID(), nil)
	if err != nil {
		return nil, err
	}
	var w wireTask
	if err := decodeInto(MethodTasksGet, raw, &w); err != nil {
		return nil, err
	}
	st := w.status()
	if st.Terminal() {
		t.s.taskEnded(t.ID())
	}
	return st, nil
}

// Cancel asks the server to cancel the task (tasks/cancel). In the
// 2025-11-25 era a task that already ended gives an error; in the
// 2026-07-28 era cancel is cooperative and idempotent.
func (t *ClientTask) Cancel(ctx context.Context) error {
	if t.sync != nil {
		return nil
	}
	_, err := t.s.taskCall(ctx, MethodTasksCancel, t.ID(), nil)
	return err
}

// Wait waits for the task's result, polling tasks/get at the server's
// suggested interval and reporting each new status to onStatus (which may
// be nil): once per change of status or status message, in both eras,
// from the status the task was created with to its terminal one. Input the task asks for is answered through the client's
// elicitation, sampling and roots handlers: in the 2026-07-28 era with
// tasks/update, in the 2025-11-25 era as server requests on a blocking
// tasks/result. A tool error is a result with IsError; a failed task is a
// *jsonrpc.Error (errors.As), a cancelled one ErrTaskCancelled.
func (t *ClientTask) Wait(ctx context.Context, onStatus func(*DetailedTask)) (*CallToolResult, error) {
	if t.sync != nil {
		return t.sync, nil
	}
	rep := &statusReporter{on: onStatus}
	rep.report(t.Created)
	if t.s.Era() != EraModern {
		return t.waitLegacy(ctx, rep)
	}
	answered := map[string]bool{}
	for {
		st, err := t.Get(ctx)
		if err != nil {
			return nil, err
		}
		rep.report(st)
		switch st.Status {
		case "completed":
			var res CallToolResult
			if err := decodeInto(MethodTasksGet, st.Result, &res); err != nil {
				return nil, err
			}
			return &res, nil
		case "failed":
			if st.Error == nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "task failed"}
			}
			return nil, &jsonrpc.Error{Code: st.Error.Code, Message: capPeerString(st.Error.Message), Data: st.Error.Data}
		case "cancelled":
			return nil, ErrTaskCancelled
		case "input_required":
			if err := t.answer(ctx, st, answered); err != nil {
				return nil, err
			}
			continue
		}
		if err := sleepCtx(ctx, clampPoll(st.pollEvery())); err != nil {
			return nil, err
		}
	}
}

// answer answers the outstanding input requests of st not answered yet.
func (t *ClientTask) answer(ctx context.Context, st *DetailedTask, answered map[string]bool) error {
	responses := map[string]any{}
	for k, raw := range st.InputRequests {
		if answered[k] {
			continue
		}
		var r wireInputRequest
		if err := Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("%w: task input %q", ErrMalformedInputRequest, capPeerString(k))
		}
		res, err := t.s.input(ctx, jsonrpc.ID{}, r.Method, r.Params)
		if err != nil {
			return fmt.Errorf("pmcp: task input %q: %w", capPeerString(k), err)
		}
		responses[k] = res
		answered[k] = true
	}
	if len(responses) == 0 {
		return sleepCtx(ctx, clampPoll(st.pollEvery()))
	}
	b, err := json.Marshal(responses, jsonOpts, json.Deterministic(true))
	if err != nil {
		return err
	}
	_, err = t.s.taskCall(ctx, MethodTasksUpdate, t.ID(), map[string]any{"inputResponses": jsontext.Value(b)})
	return err
}

// waitLegacy blocks in tasks/result (the server sends its input requests
// on it) while polling tasks/get for the status reports; once tasks/result
// answered, the terminal status is reported too.
func (t *ClientTask) waitLegacy(ctx context.Context, rep *statusReporter) (*CallToolResult, error) {
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	if rep.on != nil {
		go func() {
			defer close(done)
			for {
				st, err := t.Get(pctx)
				if err != nil {
					return
				}
				rep.report(st)
				if st.Terminal() || sleepCtx(pctx, clampPoll(st.pollEvery())) != nil {
					return
				}
			}
		}()
	} else {
		close(done)
	}
	// tasks/result waits as long as the task runs: no call timeout.
	raw, err := t.s.send(ctx, MethodTasksResult, &taskIDParams{TaskID: t.ID()})
	cancel()
	<-done
	if rep.on != nil && !rep.terminal && ctx.Err() == nil {
		// The poller may not have seen the end: one last look.
		if st, gerr := t.Get(ctx); gerr == nil {
			rep.report(st)
		}
	}
	if err != nil {
		var re *jsonrpc.Error
		if errors.As(err, &re) && re.Message == "task was cancelled" {
			return nil, ErrTaskCancelled
		}
		return nil, peerError(MethodTasksResult, err)
	}
	var res CallToolResult
	if err := decodeInto(MethodTasksResult, raw, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// statusReporter passes each change of a task's status (or status
// message) to on once, the status the task was created with first.
type statusReporter struct {
	on       func(*DetailedTask)
	last     string
	terminal bool
}

func (r *statusReporter) report(st *DetailedTask) {
	if r.on == nil || st == nil || st.Status == "" || r.terminal {
		return
	}
	if k := st.Status + "\x00" + st.StatusMessage; k != r.last {
		r.last = k
		r.terminal = st.Terminal()
		r.on(st)
	}
}

func clampPoll(d time.Duration) time.Duration {
	switch {
	case d <= 0:
		return defaultTaskPollInterval
	case d < minTaskPollInterval:
		return minTaskPollInterval
	case d > maxTaskPollInterval:
		return maxTaskPollInterval
	}
	return d
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// tasksMeta returns the session's static modern _meta with the tasks
// extension added to the client capabilities.
func (s *ClientSession) tasksMeta(static map[string]jsontext.Value) map[string]jsontext.Value {
	caps := s.c.capabilities(EraModern)
	if _, ok := caps.Extensions[ExtensionTasks]; ok {
		return static
	}
	ext := make(map[string]map[string]any, len(caps.Extensions)+1)
	for k, v := range caps.Extensions {
		ext[k] = v
	}
	ext[ExtensionTasks] = map[string]any{}
	caps.Extensions = ext
	b, err := Marshal(caps)
	if err != nil {
		return static
	}
	m := make(map[string]jsontext.Value, len(static))
	for k, v := range static {
		m[k] = v
	}
	m[MetaClientCapabilities] = b
	return m
}

// Update answers some or all of the task's outstanding input requests
// (tasks/update, 2026-07-28 only), keyed as the server keyed them in
// DetailedTask.InputRequests. Wait does this itself; Update is for a client
// that answers on its own (a proxy passing a downstream's answers on).
func (t *ClientTask) Update(ctx context.Context, responses map[string]jsontext.Value) error {
	if t.s.Era() != EraModern {
		return errors.New("pmcp: tasks/update exists in the 2026-07-28 era only")
	}
	_, err := t.s.taskCall(ctx, MethodTasksUpdate, t.ID(), map[string]any{"inputResponses": responses})
	return err
}

// ListTasks returns one page of the caller's tasks (tasks/list, 2025-11-25
// only; cursor "" for the first page).
func (s *ClientSession) ListTasks(ctx context.Context, cursor string) (*ListTasksResult, error) {
	return listPage[ListTasksResult](ctx, s, MethodTasksList, cursor)
}
