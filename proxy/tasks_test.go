package proxy

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
)

// taskUp records what the task tools of a task upstream saw.
type taskUp struct {
	cancelled chan struct{} // "slow" saw its cancellation
}

// newTaskUpstream returns a server with tasks serving era only (EraUnknown:
// both): "fail_job" (task only) ends with a tool error, "ask_job" asks for
// a name inside the task, "slow" (optional) works until cancelled.
func newTaskUpstream(t testing.TB, era pmcp.Era, label string) (*pmcp.Server, *taskUp) {
	t.Helper()
	var mw []pmcp.Middleware
	if era != pmcp.EraUnknown {
		mw = append(mw, onlyEra(era))
	}
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "tasks-" + label, Middleware: mw, Tasks: &pmcp.TaskOptions{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	up := &taskUp{cancelled: make(chan struct{}, 8)}
	required := &pmcp.ToolExecution{TaskSupport: pmcp.TaskSupportRequired}
	optional := &pmcp.ToolExecution{TaskSupport: pmcp.TaskSupportOptional}
	add := func(name string, ex *pmcp.ToolExecution, h pmcp.ToolHandler) {
		if err := srv.AddRawTool(&pmcp.Tool{Name: name, InputSchema: objectSchema, Execution: ex}, h); err != nil {
			t.Fatal(err)
		}
	}
	add("fail_job", required, func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ *pmcp.CallToolParams) (*pmcp.CallToolResult, error) {
		return &pmcp.CallToolResult{IsError: true, Content: []pmcp.Content{pmcp.Text(label + ": failed on purpose")}}, nil
	})
	add("ask_job", optional, func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ *pmcp.CallToolParams) (*pmcp.CallToolResult, error) {
		if extra.TaskID() == "" {
			return nil, errors.New("ask_job did not run as a task")
		}
		res, err := extra.Peer.Elicit(ctx, &pmcp.ElicitParams{Message: "your name?",
			RequestedSchema: jsontext.Value(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)})
		if err != nil {
			return nil, err
		}
		name, _ := res.Content["name"].(string)
		return text(label + ": hello " + name), nil
	})
	add("slow", optional, func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ *pmcp.CallToolParams) (*pmcp.CallToolResult, error) {
		<-ctx.Done()
		up.cancelled <- struct{}{}
		return nil, ctx.Err()
	})
	return srv, up
}

// TestBridgeTasks: a task made through the bridge is created, polled,
// answered (input inside the task), cancelled and its result fetched, in
// every pair of eras, over both downstream and both upstream transports.
func TestBridgeTasks(t *testing.T) {
	forEachBridge(t, func(t *testing.T, tc eraCase, down string, upDial func(*pmcp.Server, *sync.WaitGroup) DialFunc) {
		srv, up := newTaskUpstream(t, tc.upstreamEr, "u")
		var wg sync.WaitGroup
		dial := upDial(srv, &wg)
		p := newProxy(t, Options{Upstreams: []Upstream{{Dial: dial}}}, &wg)
		cs := downstream(t, p, down, pmcp.ClientOptions{Era: tc.clientEra, Elicitation: answerer})
		exerciseBridgeTasks(t, cs, tc.clientEra, tc.upstreamEr, "", up)
	})
}

// exerciseBridgeTasks drives the task tools of a task upstream serving
// upEra (named with prefix) through a downstream session of era.
func exerciseBridgeTasks(t *testing.T, cs *pmcp.ClientSession, era, upEra pmcp.Era, prefix string, up *taskUp) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	caps := cs.ServerCapabilities()
	_, ext := caps.Extensions[pmcp.ExtensionTasks]
	if era == pmcp.EraModern && (!ext || caps.Tasks != nil) || era == pmcp.EraLegacy && (ext || caps.Tasks == nil) {
		t.Errorf("%v capabilities: tasks %s, extensions %v", era, caps.Tasks, caps.Extensions)
	}

	// A task-only tool ending with a tool error.
	task, err := cs.CallToolTask(ctx, prefix+"fail_job", nil, time.Minute)
	if err != nil {
		t.Fatalf("fail_job: %v", err)
	}
	if task.ID() == "" || !strings.HasPrefix(task.ID(), prefix) {
		t.Fatalf("fail_job: task id %q, want a task prefixed %q", task.ID(), prefix)
	}
	res, err := task.Wait(ctx, nil)
	if err != nil || !res.IsError || textOf(res) != "u: failed on purpose" {
		t.Fatalf("fail_job result %+v, %v", res, err)
	}
	st, err := task.Get(ctx)
	want := "completed"
	if era == pmcp.EraLegacy {
		want = "failed"
	}
	if err != nil || st.Status != want || st.TaskID != task.ID() {
		t.Fatalf("fail_job status %+v, %v; want %s", st, err, want)
	}

	// Input inside the task reaches the downstream client's handler.
	task, err = cs.CallToolTask(ctx, prefix+"ask_job", nil, 0)
	if err != nil {
		t.Fatalf("ask_job: %v", err)
	}
	if task.ID() == "" {
		t.Fatal("ask_job ran synchronously")
	}
	if res, err = task.Wait(ctx, nil); err != nil || textOf(res) != "u: hello Ada" {
		t.Fatalf("ask_job result %q, %v", textOf(res), err)
	}

	// Cancel reaches the upstream handler.
	task, err = cs.CallToolTask(ctx, prefix+"slow", nil, 0)
	if err != nil {
		t.Fatalf("slow: %v", err)
	}
	if st, err := task.Get(ctx); err != nil || st.Status != "working" {
		t.Fatalf("slow right after create: %+v, %v", st, err)
	}
	if era == pmcp.EraLegacy { // 2026-07-28 clients have no tasks/list; a 2025-11-25 one has it whatever the upstream's era
		found := false
		for c := ""; ; {
			page, err := cs.ListTasks(ctx, c)
			if err != nil {
				t.Fatalf("tasks/list: %v", err)
			}
			for _, lt := range page.Tasks {
				found = found || lt.TaskID == task.ID()
			}
			if c = page.NextCursor; c == "" {
				break
			}
		}
		if !found {
			t.Errorf("tasks/list lacks %q", task.ID())
		}
	}
	if err := task.Cancel(ctx); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if _, err := task.Wait(ctx, nil); !errors.Is(err, pmcp.ErrTaskCancelled) {
		t.Fatalf("after cancel: %v", err)
	}
	select {
	case <-up.cancelled:
	case <-ctx.Done():
		t.Fatal("the upstream handler was never cancelled")
	}

	// A task id the bridge never gave out.
	if _, err := cs.Task(prefix + "no-such-task").Get(ctx); err == nil {
		t.Error("tasks/get of an unknown id succeeded")
	}
}

// TestBridgeTasksAggregate: with two upstreams (one per era) the task ids
// are prefixed with the upstream's name and routed back to it.
func TestBridgeTasksAggregate(t *testing.T) {
	for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
		t.Run(era.String(), func(t *testing.T) {
			a, upA := newTaskUpstream(t, pmcp.EraLegacy, "u")
			b, upB := newTaskUpstream(t, pmcp.EraModern, "u")
			var wg sync.WaitGroup
			p := newProxy(t, Options{Upstreams: []Upstream{{Name: "a", Dial: memDial(a, &wg)}, {Name: "b", Dial: httpDial(t, b)}}}, &wg)
			cs := downstream(t, p, "http", pmcp.ClientOptions{Era: era, Elicitation: answerer})
			exerciseBridgeTasks(t, cs, era, pmcp.EraLegacy, "a_", upA)
			exerciseBridgeTasks(t, cs, era, pmcp.EraModern, "b_", upB)
		})
	}
}

// TestBridgeTaskOfAnotherSession: a legacy downstream session's task lives
// in its own upstream session, where another downstream session's request
// for it is an unknown task.
func TestBridgeTaskOfAnotherSession(t *testing.T) {
	srv, up := newTaskUpstream(t, pmcp.EraLegacy, "u")
	var wg sync.WaitGroup
	p := newProxy(t, Options{Upstreams: []Upstream{{Dial: memDial(srv, &wg)}}}, &wg)
	alice := downstream(t, p, "http", pmcp.ClientOptions{Era: pmcp.EraLegacy})
	bob := downstream(t, p, "http", pmcp.ClientOptions{Era: pmcp.EraLegacy})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	task, err := alice.CallToolTask(ctx, "slow", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if task.ID() == "" {
		t.Fatal("slow ran synchronously")
	}
	if _, err := bob.Task(task.ID()).Get(ctx); err == nil {
		t.Fatal("another session read the task")
	}
	if err := bob.Task(task.ID()).Cancel(ctx); err == nil {
		t.Fatal("another session cancelled the task")
	}
	if st, err := task.Get(ctx); err != nil || st.Status != "working" {
		t.Fatalf("owner's view: %+v, %v", st, err)
	}
	if err := task.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	<-up.cancelled
}

// TestBridgeDeclaresTasksAndSkills: the bridge declares tasks (in each
// era's form) and the skills extension without contacting its upstreams,
// and forwards skills/list and skills/get to the upstreams that serve
// skills (an empty list when none does).
func TestBridgeDeclaresTasksAndSkills(t *testing.T) {
	for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
		for _, down := range []string{"stream", "http"} {
			t.Run(era.String()+"/down-"+down, func(t *testing.T) {
				plain, _ := newUpstream(t, pmcp.EraUnknown, "plain")
				rich, _ := newTaskUpstream(t, pmcp.EraUnknown, "rich")
				if err := rich.AddSkill(&pmcp.Skill{Path: "pdf-processing", Description: "Work with PDF files.", Body: "# PDF\n"}); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				var wg sync.WaitGroup
				p := newProxy(t, Options{Upstreams: []Upstream{{Dial: memDial(plain, &wg)}}}, &wg)
				cs := downstream(t, p, down, pmcp.ClientOptions{Era: era})
				caps := cs.ServerCapabilities()
				_, tasksExt := caps.Extensions[pmcp.ExtensionTasks]
				_, skillsExt := caps.Extensions[pmcp.ExtensionSkills]
				if !skillsExt || (era == pmcp.EraModern) != tasksExt || (era == pmcp.EraLegacy) != (caps.Tasks != nil) {
					t.Errorf("capabilities: tasks %s, extensions %v", caps.Tasks, caps.Extensions)
				}
				if list, err := cs.ListSkills(ctx, ""); err != nil || len(list.Skills) != 0 {
					t.Errorf("skills/list without a skills upstream: %+v, %v", list, err)
				}

				var wg2 sync.WaitGroup // the first proxy's upstreams end after this one's
				p = newProxy(t, Options{Upstreams: []Upstream{{Name: "plain", Dial: memDial(plain, &wg2)}, {Name: "rich", Dial: memDial(rich, &wg2)}}}, &wg2)
				cs = downstream(t, p, down, pmcp.ClientOptions{Era: era})
				list, err := cs.ListSkills(ctx, "")
				if err != nil || len(list.Skills) != 1 {
					t.Fatalf("skills/list: %+v, %v", list, err)
				}
				e, err := cs.GetSkill(ctx, list.Skills[0].URI)
				if err != nil || e.URI != list.Skills[0].URI {
					t.Fatalf("skills/get: %+v, %v", e, err)
				}
				if _, err := cs.LoadSkill(ctx, e); err != nil {
					t.Fatalf("load the skill's files: %v", err)
				}
			})
		}
	}
}

// TestBridgeTasksRaw: task requests shaped as third-party clients send
// them (extra members, tasks/list without params) cross the bridge over
// both downstream transports, in both eras.
func TestBridgeTasksRaw(t *testing.T) {
	for _, down := range []string{"stream", "http"} {
		for _, era := range []pmcp.Era{pmcp.EraLegacy, pmcp.EraModern} {
			t.Run(era.String()+"/down-"+down, func(t *testing.T) {
				srv, _ := newTaskUpstream(t, pmcp.EraLegacy, "u") // one with tasks/list
				var wg sync.WaitGroup
				p := newProxy(t, Options{Upstreams: []Upstream{{Dial: memDial(srv, &wg)}}}, &wg)
				send := rawStream(t, p)
				if down == "http" {
					send = rawHTTP(t, p)
				}
				result := func(line string, out any) {
					t.Helper()
					m := send(t, line)
					if m["error"] != nil || m["result"] == nil {
						t.Fatalf("%s: %s", line, m["error"])
					}
					if err := pmcp.Unmarshal(jsontext.Value(m["result"]), out); err != nil {
						t.Fatalf("%s: %v", line, err)
					}
				}
				type task struct {
					TaskID string `json:"taskId"`
					Status string `json:"status"`
				}
				if era == pmcp.EraLegacy {
					send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"ts","version":"1"}}}`)
					send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
					var created struct {
						Task task `json:"task"`
					}
					result(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fail_job","arguments":{},"task":{"ttl":60000},"x-vendor":1}}`, &created)
					id := created.Task.TaskID
					if id == "" {
						t.Fatal("no task created")
					}
					var list struct {
						Tasks []task `json:"tasks"`
					}
					result(`{"jsonrpc":"2.0","id":2,"method":"tasks/list"}`, &list)
					if len(list.Tasks) != 1 || list.Tasks[0].TaskID != id {
						t.Errorf("tasks/list %+v, want %s", list, id)
					}
					var res struct {
						IsError bool           `json:"isError"`
						Meta    map[string]any `json:"_meta"`
					}
					result(`{"jsonrpc":"2.0","id":3,"method":"tasks/result","params":{"taskId":"`+id+`","x-vendor":1}}`, &res)
					rt, _ := res.Meta[pmcp.MetaRelatedTask].(map[string]any)
					if !res.IsError || rt["taskId"] != id {
						t.Errorf("tasks/result %+v", res)
					}
					var got task
					result(`{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"taskId":"`+id+`"}}`, &got)
					if got.Status != "failed" {
						t.Errorf("tasks/get %+v, want failed", got)
					}
					return
				}
				meta := `"_meta":{"` + pmcp.MetaProtocolVersion + `":"` + pmcp.Version20260728 + `","` + pmcp.MetaClientCapabilities + `":{"extensions":{"` + pmcp.ExtensionTasks + `":{}}}}`
				var created struct {
					ResultType string `json:"resultType"`
					task
				}
				result(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fail_job","arguments":{},"x-vendor":1,`+meta+`}}`, &created)
				if created.ResultType != "task" || created.TaskID == "" {
					t.Fatalf("tools/call %+v, want a task", created)
				}
				var got struct {
					task
					Result struct {
						IsError bool `json:"isError"`
					} `json:"result"`
				}
				// Polled as a client does, until the task ends.
				deadline := time.Now().Add(10 * time.Second)
				for got.Status == "" || got.Status == "working" && time.Now().Before(deadline) {
					if got.Status != "" {
						time.Sleep(10 * time.Millisecond)
					}
					result(`{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"`+created.TaskID+`","x-vendor":1,`+meta+`}}`, &got)
				}
				if got.Status != "completed" || !got.Result.IsError {
					t.Errorf("tasks/get %+v, want completed with isError", got)
				}
				// Without the tasks extension: -32021, as from a pmcp server.
				bare := `"_meta":{"` + pmcp.MetaProtocolVersion + `":"` + pmcp.Version20260728 + `","` + pmcp.MetaClientCapabilities + `":{}}`
				m := send(t, `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"`+created.TaskID+`",`+bare+`}}`)
				var e struct {
					Code int `json:"code"`
				}
				if pmcp.Unmarshal(jsontext.Value(m["error"]), &e) != nil || e.Code != -32021 {
					t.Errorf("tasks/get without the extension: %s", m["error"])
				}
			})
		}
	}
}
