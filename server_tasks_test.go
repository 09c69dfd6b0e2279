package pmcp

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/jsonrpc"
	"github.com/gopmcp/pmcp/tasks"
)

// taskFixture is a server with tasks and tools whose handlers report to
// the test.
type taskFixture struct {
	srv *Server
	// started receives the task id (or "") when "block" starts; stopped
	// receives the handler's ctx error when it ends.
	started chan string
	stopped chan error
	release chan struct{}
}

var tasksExtCaps = map[string]any{"extensions": map[string]any{ExtensionTasks: map[string]any{}}, "elicitation": map[string]any{}}

// userMeta is the _meta key the fixture's middleware reads the caller's
// identity from (standing in for a verified token).
const userMeta = "test/user"

func newTaskFixture(t *testing.T, opts *TaskOptions) *taskFixture {
	t.Helper()
	if opts == nil {
		opts = &TaskOptions{}
	}
	f := &taskFixture{started: make(chan string, 2048), stopped: make(chan error, 2048), release: make(chan struct{})}
	identify := func(next MethodHandler) MethodHandler {
		return func(ctx context.Context, r *Request) (Result, error) {
			var p struct {
				Meta map[string]jsontext.Value `json:"_meta"`
			}
			_ = Unmarshal(r.Params, &p)
			if raw, ok := p.Meta[userMeta]; ok {
				var u string
				_ = Unmarshal(raw, &u)
				r.Extra.AuthContext = &AuthContext{Subject: u}
			}
			return next(ctx, r)
		}
	}
	srv, err := NewServer(ServerOptions{Tasks: opts, Middleware: []Middleware{identify}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	optional := &ToolExecution{TaskSupport: TaskSupportOptional}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(AddTool(srv, &Tool{Name: "block", Description: "blocks until released or cancelled", Execution: optional},
		func(ctx context.Context, extra *RequestHandlerExtra, _ struct{}) (string, error) {
			f.started <- extra.TaskID()
			select {
			case <-ctx.Done():
				f.stopped <- ctx.Err()
				return "", ctx.Err()
			case <-f.release:
				f.stopped <- nil
				return "released", nil
			}
		}))
	must(AddTool(srv, &Tool{Name: "pair", Description: "asks two questions at once", Execution: optional},
		func(ctx context.Context, extra *RequestHandlerExtra, _ struct{}) (string, error) {
			var wg sync.WaitGroup
			out := make([]string, 2)
			for i := range 2 {
				wg.Go(func() {
					r, err := extra.Peer.Elicit(ctx, &ElicitParams{Message: fmt.Sprintf("q%d", i)})
					if err == nil {
						out[i] = r.Action
					} else {
						out[i] = err.Error()
					}
				})
			}
			wg.Wait()
			return strings.Join(out, ","), nil
		}))
	must(AddTool(srv, &Tool{Name: "fail", Description: "tool error", Execution: optional},
		func(ctx context.Context, extra *RequestHandlerExtra, _ struct{}) (string, error) {
			return "", fmt.Errorf("boom")
		}))
	f.srv = srv
	return f
}

func (f *taskFixture) waitStarted(t *testing.T) string {
	t.Helper()
	select {
	case id := <-f.started:
		return id
	case <-time.After(5 * time.Second):
		t.Fatal("handler did not start")
		return ""
	}
}

// createModern calls tool as a task in the 2026-07-28 era and returns the
// task id.
func createModern(t *testing.T, c *testClient, tool string, meta map[string]any) string {
	t.Helper()
	res := c.mustCall(MethodToolsCall, modern(map[string]any{"name": tool, "arguments": map[string]any{}}, tasksExtCaps, meta))
	if res["resultType"] != "task" {
		t.Fatalf("want a CreateTaskResult, got %v", res)
	}
	return res["taskId"].(string)
}

func createLegacy(t *testing.T, c *testClient, tool string, task map[string]any) string {
	t.Helper()
	res := c.mustCall(MethodToolsCall, map[string]any{"name": tool, "arguments": map[string]any{}, "task": task})
	id, _ := getPath(res, "task", "taskId").(string)
	if id == "" {
		t.Fatalf("want a CreateTaskResult, got %v", res)
	}
	return id
}

func modernTaskParams(id string, meta map[string]any) map[string]any {
	return modern(map[string]any{"taskId": id}, tasksExtCaps, meta)
}

// TestTaskGetRightAfterCreate: a task is readable as soon as its
// CreateTaskResult arrives, in both eras, and cancel reaches the handler's
// ctx (cooperative in 2026-07-28, synchronous in 2025-11-25).
func TestTaskGetRightAfterCreateAndCancelReachesCtx(t *testing.T) {
	f := newTaskFixture(t, &TaskOptions{InputWindow: -1})
	c := startServer(t, f.srv, nil)
	id := createModern(t, c, "block", nil)
	if got := f.waitStarted(t); got != id {
		t.Fatalf("handler saw task id %q, want %q", got, id)
	}
	if st := c.mustCall(MethodTasksGet, modernTaskParams(id, nil)); st["taskId"] != id || st["status"] != "working" || st["resultType"] != "complete" {
		t.Fatalf("tasks/get right after create: %v", st)
	}
	ack := c.mustCall(MethodTasksCancel, modernTaskParams(id, nil))
	if !emptyAck(ack) {
		t.Fatalf("cancel ack %v", ack)
	}
	if err := <-f.stopped; err == nil {
		t.Fatal("handler was released, not cancelled")
	}
	waitStatus(t, c, id, "cancelled", true)

	l := startServer(t, f.srv, nil)
	l.initialize(nil)
	lid := createLegacy(t, l, "block", map[string]any{})
	f.waitStarted(t)
	res := l.mustCall(MethodTasksCancel, map[string]any{"taskId": lid})
	if res["status"] != "cancelled" {
		t.Fatalf("legacy cancel result %v", res)
	}
	if err := <-f.stopped; err == nil {
		t.Fatal("legacy cancel did not reach the handler's ctx")
	}
	if e := l.callErr(MethodTasksCancel, map[string]any{"taskId": lid}); e.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("legacy cancel of a terminal task: %v", e)
	}
}

func waitStatus(t *testing.T, c *testClient, id, want string, modernEra bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var st map[string]any
		if modernEra {
			st = c.mustCall(MethodTasksGet, modernTaskParams(id, nil))
		} else {
			st = c.mustCall(MethodTasksGet, map[string]any{"taskId": id})
		}
		if st["status"] == want {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s stayed %v, want %s", id, st["status"], want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestTaskPartialUpdate: answering one of two input requests leaves
// exactly the other one outstanding.
func TestTaskPartialUpdate(t *testing.T) {
	f := newTaskFixture(t, nil)
	c := startServer(t, f.srv, nil)
	id := createModern(t, c, "pair", nil)
	var st map[string]any
	deadline := time.Now().Add(5 * time.Second)
	for {
		st = c.mustCall(MethodTasksGet, modernTaskParams(id, nil))
		if reqs, _ := st["inputRequests"].(map[string]any); len(reqs) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no two input requests: %v", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
	reqs := st["inputRequests"].(map[string]any)
	keys := make([]string, 0, 2)
	for k := range reqs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	up := modernTaskParams(id, nil)
	up["inputResponses"] = map[string]any{keys[0]: map[string]any{"action": "accept", "content": map[string]any{}}, "no-such-key": map[string]any{"x": 1}}
	if ack := c.mustCall(MethodTasksUpdate, up); !emptyAck(ack) {
		t.Fatalf("update ack %v", ack)
	}
	st = c.mustCall(MethodTasksGet, modernTaskParams(id, nil))
	left := st["inputRequests"].(map[string]any)
	if st["status"] != "input_required" || len(left) != 1 || left[keys[1]] == nil {
		t.Fatalf("after a partial update: status %v, inputRequests %v; want only %q", st["status"], left, keys[1])
	}
	up = modernTaskParams(id, nil)
	up["inputResponses"] = map[string]any{keys[1]: map[string]any{"action": "decline"}}
	c.mustCall(MethodTasksUpdate, up)
	done := waitStatus(t, c, id, "completed", true)
	if txt := getPath(done, "result", "content", 0, "text"); txt != "accept,decline" && txt != "decline,accept" {
		t.Fatalf("result %v", done["result"])
	}
}

// TestTaskOtherPrincipal: another principal cannot get, update, cancel or
// list a task; the answer is the one for an unknown id.
func TestTaskOtherPrincipal(t *testing.T) {
	f := newTaskFixture(t, nil)
	c := startServer(t, f.srv, nil)
	alice := map[string]any{userMeta: "alice"}
	bob := map[string]any{userMeta: "bob"}
	id := createModern(t, c, "block", alice)
	f.waitStarted(t)
	unknown := c.callErr(MethodTasksGet, modernTaskParams("no-such-task-id-000000000000", bob))
	for _, m := range []string{MethodTasksGet, MethodTasksCancel, MethodTasksUpdate} {
		p := modernTaskParams(id, bob)
		if m == MethodTasksUpdate {
			p["inputResponses"] = map[string]any{}
		}
		e := c.callErr(m, p)
		if e.Code != jsonrpc.CodeInvalidParams || e.Message != unknown.Message {
			t.Errorf("%s by another principal: %v, want %v", m, e, unknown)
		}
	}
	if st := c.mustCall(MethodTasksGet, modernTaskParams(id, alice)); st["status"] != "working" {
		t.Fatalf("owner's view after bob's cancel: %v", st)
	}
	close(f.release)
	waitStatus2 := func() {
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if st := c.mustCall(MethodTasksGet, modernTaskParams(id, alice)); st["status"] == "completed" {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatal("task did not complete")
	}
	waitStatus2()

	// Legacy without authentication: the session is the owner.
	a := startServer(t, f.srv, nil)
	a.initialize(nil)
	b := startServer(t, f.srv, nil)
	b.initialize(nil)
	lid := createLegacy(t, a, "fail", map[string]any{})
	for _, m := range []string{MethodTasksGet, MethodTasksCancel, MethodTasksResult} {
		if e := b.callErr(m, map[string]any{"taskId": lid}); e.Code != jsonrpc.CodeInvalidParams || e.Message != unknown.Message {
			t.Errorf("legacy %s from another session: %v", m, e)
		}
	}
	if l := b.mustCall(MethodTasksList, map[string]any{}); len(l["tasks"].([]any)) != 0 {
		t.Errorf("another session lists %v", l["tasks"])
	}
	if l := a.mustCall(MethodTasksList, map[string]any{}); len(l["tasks"].([]any)) != 1 {
		t.Errorf("owner lists %v", l["tasks"])
	}
	// Legacy shows a tool error as failed, and tasks/result returns the
	// tool result with the related-task _meta.
	st := waitStatus(t, a, lid, "failed", false)
	if st["ttl"] == nil {
		t.Errorf("legacy task without ttl: %v", st)
	}
	res := a.mustCall(MethodTasksResult, map[string]any{"taskId": lid})
	if res["isError"] != true || getPath(res, "_meta", MetaRelatedTask, "taskId") != lid {
		t.Errorf("tasks/result %v", res)
	}
}

// TestTaskExpiryNeverEarly: a task is served up to and including its
// expiry instant and gone after it.
func TestTaskExpiryNeverEarly(t *testing.T) {
	var now atomic.Int64
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	now.Store(start.UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()).UTC() }
	f := newTaskFixture(t, &TaskOptions{StoreOptions: tasks.Options{Now: clock, SweepInterval: -1}})
	c := startServer(t, f.srv, nil)
	c.initialize(nil)
	id := createLegacy(t, c, "fail", map[string]any{"ttl": 1500})
	st := waitStatus(t, c, id, "failed", false)
	if st["ttl"] != float64(1500) {
		t.Fatalf("granted ttl %v, want 1500", st["ttl"])
	}
	now.Store(start.Add(1500 * time.Millisecond).UnixNano())
	if _, err := f.srv.tasks.store.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := c.mustCall(MethodTasksGet, map[string]any{"taskId": id}); got["taskId"] != id {
		t.Fatalf("task gone at its expiry instant: %v", got)
	}
	now.Store(start.Add(1501 * time.Millisecond).UnixNano())
	if e := c.callErr(MethodTasksGet, map[string]any{"taskId": id}); e.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("expired task: %v", e)
	}
}

// TestTasksThousandConcurrent: 1,000 running tasks cost one goroutine
// each and a bounded heap, and all go away when cancelled.
func TestTasksThousandConcurrent(t *testing.T) {
	const n = 1000
	f := newTaskFixture(t, &TaskOptions{InputWindow: -1, MaxRunningTasks: n})
	c := startServer(t, f.srv, nil)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { ids[i] = createModern(t, c, "block", nil) })
	}
	wg.Wait()
	for range n {
		f.waitStarted(t)
	}
	runtime.GC()
	var during runtime.MemStats
	runtime.ReadMemStats(&during)
	g1 := runtime.NumGoroutine()
	perTask := (int64(during.HeapAlloc) - int64(before.HeapAlloc)) / n
	t.Logf("%d running tasks: %d goroutines more, heap %d B per task", n, g1-g0, perTask)
	// One goroutine per running task, plus at most the connection's
	// idle request workers (kept for the next burst, bounded by the
	// concurrency limit) and a few of the test's own.
	if g1-g0 > n+DefaultMaxConcurrentRequests+16 {
		t.Errorf("%d goroutines for %d tasks: more than one per task", g1-g0, n)
	}
	if perTask > 64<<10 {
		t.Errorf("%d B of heap per running task", perTask)
	}
	for _, id := range ids {
		c.mustCall(MethodTasksCancel, modernTaskParams(id, nil))
	}
	for range n {
		<-f.stopped
	}
}

// emptyAck reports whether res is a 2026-07-28 acknowledgement: resultType
// complete and nothing of a task.
func emptyAck(res map[string]any) bool {
	for k := range res {
		if k != "resultType" && k != "_meta" {
			return false
		}
	}
	return res["resultType"] == "complete"
}

// TestTaskRunnerBound: beyond MaxRunningTasks an optional tool runs
// synchronously and a required one is refused; a finished task frees its
// slot.
func TestTaskRunnerBound(t *testing.T) {
	f := newTaskFixture(t, &TaskOptions{InputWindow: -1, MaxRunningTasks: 1})
	if err := AddTool(f.srv, &Tool{Name: "must", Description: "required task", Execution: &ToolExecution{TaskSupport: TaskSupportRequired}},
		func(ctx context.Context, extra *RequestHandlerExtra, _ struct{}) (string, error) { return "done", nil }); err != nil {
		t.Fatal(err)
	}
	c := startServer(t, f.srv, nil)
	id := createModern(t, c, "block", nil)
	f.waitStarted(t)
	if e := c.callErr(MethodToolsCall, modern(map[string]any{"name": "must", "arguments": map[string]any{}}, tasksExtCaps, nil)); e.Code != jsonrpc.CodeInternalError {
		t.Fatalf("required tool over the bound: %v", e)
	}
	res := c.mustCall(MethodToolsCall, modern(map[string]any{"name": "fail", "arguments": map[string]any{}}, tasksExtCaps, nil))
	if res["resultType"] != "complete" || res["isError"] != true {
		t.Fatalf("optional tool over the bound: %v", res)
	}
	close(f.release)
	waitStatus(t, c, id, "completed", true)
	deadline := time.Now().Add(5 * time.Second)
	for {
		raw, err := c.call(MethodToolsCall, modern(map[string]any{"name": "must", "arguments": map[string]any{}}, tasksExtCaps, nil))
		if err == nil && strings.Contains(string(raw), `"resultType":"task"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("slot not freed: %s %v", raw, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLegacyTaskProgressAndStatus: a 2025-11-25 task reports progress for
// the creating request's token and its status changes on the session's own
// channel, after the request has been answered.
func TestLegacyTaskProgressAndStatus(t *testing.T) {
	f := newTaskFixture(t, nil)
	if err := AddTool(f.srv, &Tool{Name: "steps", Description: "reports progress", Execution: &ToolExecution{TaskSupport: TaskSupportOptional}},
		func(ctx context.Context, extra *RequestHandlerExtra, _ struct{}) (string, error) {
			<-f.release
			_ = extra.ReportProgress(1, 2, "half")
			_ = extra.ReportProgress(2, 2, "all")
			return "stepped", nil
		}); err != nil {
		t.Fatal(err)
	}
	c := startServer(t, f.srv, nil)
	c.initialize(nil)
	res := c.mustCall(MethodToolsCall, map[string]any{"name": "steps", "arguments": map[string]any{}, "task": map[string]any{}, "_meta": map[string]any{"progressToken": "tok"}})
	id, _ := getPath(res, "task", "taskId").(string)
	if id == "" {
		t.Fatalf("no task: %v", res)
	}
	close(f.release)
	n := c.nextNote(NotificationProgress)
	var p struct {
		ProgressToken string  `json:"progressToken"`
		Progress      float64 `json:"progress"`
	}
	if err := Unmarshal(n.Params, &p); err != nil || p.ProgressToken != "tok" || p.Progress != 1 {
		t.Fatalf("progress %s %v", n.Params, err)
	}
	for {
		n := c.nextNote(NotificationTasksStatus)
		var st Task
		if err := Unmarshal(n.Params, &st); err != nil || st.TaskID != id {
			t.Fatalf("status %s %v", n.Params, err)
		}
		if st.Status == "completed" {
			break
		}
	}
}

// TestTaskCancelFromAnotherReplica: two servers share a store; a cancel
// made on the one that does not run the task reaches the handler's ctx
// within a lease renewal.
func TestTaskCancelFromAnotherReplica(t *testing.T) {
	store, err := tasks.NewMemoryStore(tasks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	opts := &TaskOptions{Store: store, LeaseTTL: 60 * time.Millisecond, InputWindow: -1}
	a := newTaskFixture(t, opts)
	b := newTaskFixture(t, opts)
	ca := startServer(t, a.srv, nil)
	cb := startServer(t, b.srv, nil)
	id := createModern(t, ca, "block", nil)
	a.waitStarted(t)
	if ack := cb.mustCall(MethodTasksCancel, modernTaskParams(id, nil)); !emptyAck(ack) {
		t.Fatalf("cancel ack %v", ack)
	}
	select {
	case err := <-a.stopped:
		if err == nil {
			t.Fatal("handler released, not cancelled")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the cancel made on the other replica never reached the handler")
	}
	waitStatus(t, ca, id, "cancelled", true)
}

// TestTaskRequireInputInsideTask: a handler that asks with RequireInput
// after its task exists gets the answers from tasks/update under its own
// keys when it is run again, and its continuation back.
func TestTaskRequireInputInsideTask(t *testing.T) {
	f := newTaskFixture(t, &TaskOptions{InputWindow: -1})
	var runs atomic.Int32
	if err := AddTool(f.srv, &Tool{Name: "ask", Description: "asks with RequireInput", Execution: &ToolExecution{TaskSupport: TaskSupportOptional}},
		func(ctx context.Context, extra *RequestHandlerExtra, _ struct{}) (string, error) {
			runs.Add(1)
			if r, ok := extra.InputResponses().Elicit("color"); ok {
				return fmt.Sprintf("%s %v cont=%s", r.Action, r.Content["color"], extra.MRTRContinuation()), nil
			}
			return "", extra.RequireInput(map[string]*InputRequest{"color": {Method: MethodElicitationCreate, Params: &ElicitParams{Message: "color?"}}}, map[string]int{"step": 1})
		}); err != nil {
		t.Fatal(err)
	}
	c := startServer(t, f.srv, nil)
	id := createModern(t, c, "ask", nil)
	st := waitStatus(t, c, id, "input_required", true)
	if _, ok := getPath(st, "inputRequests", "color").(map[string]any); !ok {
		t.Fatalf("inputRequests %v", st["inputRequests"])
	}
	up := modernTaskParams(id, nil)
	up["inputResponses"] = map[string]any{"color": map[string]any{"action": "accept", "content": map[string]any{"color": "green"}}}
	c.mustCall(MethodTasksUpdate, up)
	done := waitStatus(t, c, id, "completed", true)
	if txt := getPath(done, "result", "content", 0, "text"); txt != `accept green cont={"step":1}` {
		t.Fatalf("result text %v", txt)
	}
	if n := runs.Load(); n != 2 {
		t.Fatalf("handler ran %d times, want 2", n)
	}
}

// TestTaskToolScopes: a tool's scopes are checked before its task is
// created, as for a synchronous call.
func TestTaskToolScopes(t *testing.T) {
	f := newTaskFixture(t, nil)
	if err := AddTool(f.srv, &Tool{Name: "admin", Description: "scoped", Scopes: []string{"admin"}, Execution: &ToolExecution{TaskSupport: TaskSupportRequired}},
		func(ctx context.Context, extra *RequestHandlerExtra, _ struct{}) (string, error) { return "ok", nil }); err != nil {
		t.Fatal(err)
	}
	c := startServer(t, f.srv, nil)
	e := c.callErr(MethodToolsCall, modern(map[string]any{"name": "admin", "arguments": map[string]any{}}, tasksExtCaps, map[string]any{userMeta: "alice"}))
	if e.Code != scopeErrorCode {
		t.Fatalf("scoped task tool without the scope: %v", e)
	}
	if n, _ := f.srv.tasks.store.List(context.Background(), "sub:alice", "", 0); len(n.Tasks) != 0 {
		t.Fatalf("a task was created: %v", n.Tasks)
	}
}

// TestTaskModernQuickHandlerAnswersAtOnce: a 2026-07-28 task whose handler
// returns inside the input window is answered as soon as the handler is
// done, with the completed task, not when the window closes. The window
// here is longer than the client's call timeout, so a server that waits
// for it fails the call.
func TestTaskModernQuickHandlerAnswersAtOnce(t *testing.T) {
	f := newTaskFixture(t, &TaskOptions{InputWindow: time.Minute})
	c := startServer(t, f.srv, nil)
	res := callQuickTask(t, f, c, nil)
	id, _ := res["taskId"].(string)
	got := c.mustCall(MethodTasksGet, modernTaskParams(id, nil))
	if got["status"] != "completed" || getPath(got, "result", "content") == nil {
		t.Fatalf("tasks/get: %v", got)
	}
}

// TestTaskModernRunnerCreatedFirst: a 2026-07-28 task whose handler is
// done, and whose runner created the task, before the creating request
// looked: the request answers with the completed task, never with the
// task still working while the runner settles it. The hooks hold the
// runner between creating and settling the task until the request waits
// for it (or, on a server that does not wait, until the reply is in).
// CI saw the race once: "want the completed task, got … status:working"
// from TestTaskModernQuickHandlerAnswersAtOnce.
func TestTaskModernRunnerCreatedFirst(t *testing.T) {
	f := newTaskFixture(t, &TaskOptions{InputWindow: time.Minute})
	committed, proceed := make(chan struct{}), make(chan struct{})
	var release sync.Once
	f.srv.tasks.hooks = &taskHooks{
		afterStart:   func() { <-committed },
		beforeSettle: func() { close(committed); <-proceed },
		waitRunner:   func() { release.Do(func() { close(proceed) }) },
	}
	defer release.Do(func() { close(proceed) })
	c := startServer(t, f.srv, nil)
	callQuickTask(t, f, c, func() { release.Do(func() { close(proceed) }) })
}

// callQuickTask registers a task-optional tool whose handler returns at
// once, calls it as a 2026-07-28 task, runs answered (if not nil) as soon
// as the reply is in, and checks that the reply is the completed task.
func callQuickTask(t *testing.T, f *taskFixture, c *testClient, answered func()) map[string]any {
	t.Helper()
	if err := AddTool(f.srv, &Tool{Name: "quick", Execution: &ToolExecution{TaskSupport: TaskSupportOptional}},
		func(context.Context, *RequestHandlerExtra, struct{}) (string, error) { return "done", nil }); err != nil {
		t.Fatal(err)
	}
	raw, err := c.call(MethodToolsCall, modern(map[string]any{"name": "quick", "arguments": map[string]any{}}, tasksExtCaps, nil))
	if answered != nil {
		answered()
	}
	if err != nil {
		t.Fatalf("tools/call as a task: %v", err)
	}
	var res map[string]any
	if err := Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if res["resultType"] != "task" || res["status"] != "completed" {
		t.Fatalf("want the completed task, got %v", res)
	}
	return res
}

// TestTaskModernCreatedEarlyAnswersWorking: a 2026-07-28 task whose
// handler creates it early (a status message inside the input window) and
// works on is answered at once with the working task, not when the
// handler ends. The hook lets the request look only after the handler
// created the task. CI saw the contrary as TestClientTaskStatusPushedInEveryEra
// waiting for a status push that came before its client listened.
func TestTaskModernCreatedEarlyAnswersWorking(t *testing.T) {
	f := newTaskFixture(t, &TaskOptions{InputWindow: time.Minute})
	created, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	f.srv.tasks.hooks = &taskHooks{afterStart: func() { <-created }, beforeSettle: func() {}, waitRunner: func() {}}
	if err := AddTool(f.srv, &Tool{Name: "long", Execution: &ToolExecution{TaskSupport: TaskSupportOptional}},
		func(ctx context.Context, extra *RequestHandlerExtra, _ struct{}) (string, error) {
			if err := extra.SetTaskStatusMessage("started"); err != nil {
				return "", err
			}
			close(created)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return "done", nil
		}); err != nil {
		t.Fatal(err)
	}
	c := startServer(t, f.srv, nil)
	answered := make(chan map[string]any, 1)
	go func() {
		var res map[string]any
		raw, err := c.call(MethodToolsCall, modern(map[string]any{"name": "long", "arguments": map[string]any{}}, tasksExtCaps, nil))
		if err == nil {
			_ = Unmarshal(raw, &res)
		}
		answered <- res
	}()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	select {
	case res := <-answered:
		if res["resultType"] != "task" || res["status"] != "working" || res["statusMessage"] != "started" {
			t.Fatalf("want the working task with its message, got %v", res)
		}
	case <-timeout.C:
		t.Fatal("the call waited for the handler to end instead of answering with the working task")
	}
}
