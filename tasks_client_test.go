package pmcp_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// TestClientTasksMatrix runs the everything server's task tools through
// the one client API over memory, stdio and Streamable HTTP, in both eras.
func TestClientTasksMatrix(t *testing.T) {
	for _, tc := range transportCases {
		for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
			t.Run(tc.name+"/"+era.String(), func(t *testing.T) {
				s := tc.connect(t, pmcp.NewClient(everythingClientOptions(era, make(chan string, 64))))
				exerciseTasks(t, s, era)
			})
		}
	}
}

func exerciseTasks(t *testing.T, s *pmcp.ClientSession, era pmcp.Era) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// Input inside a task goes through the client's elicitation handler:
	// tasks/update (modern) or the blocking tasks/result (legacy).
	task, err := s.CallToolTask(ctx, "confirm_delete", map[string]any{"filename": "a.txt"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if task.ID() == "" {
		t.Fatal("confirm_delete answered synchronously")
	}
	var mu sync.Mutex
	var seen []string
	res, err := task.Wait(ctx, func(st *pmcp.DetailedTask) {
		mu.Lock()
		seen = append(seen, st.Status)
		mu.Unlock()
	})
	if err != nil {
		t.Fatalf("confirm_delete: %v", err)
	}
	if got := text(t, res); !strings.Contains(got, "a.txt") {
		t.Fatalf("confirm_delete result %q", got)
	}
	mu.Lock()
	if era == pmcp.EraModern && (len(seen) == 0 || seen[len(seen)-1] != "completed") {
		t.Errorf("statuses seen %v", seen)
	}
	mu.Unlock()

	// A tool error: completed with isError (modern), failed (legacy); the
	// result comes back either way.
	task, err = s.CallToolTask(ctx, "failing_job", nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if res, err = task.Wait(ctx, nil); err != nil || !res.IsError {
		t.Fatalf("failing_job: %+v %v", res, err)
	}
	st, err := task.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := "completed"
	if era == pmcp.EraLegacy {
		want = "failed"
	}
	if st.Status != want || st.TTLMs == nil || *st.TTLMs <= 0 {
		t.Errorf("failing_job status %+v, want %s", st, want)
	}

	// A protocol error fails the task.
	task, err = s.CallToolTask(ctx, "protocol_error_job", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var re *jsonrpc.Error
	if _, err = task.Wait(ctx, nil); !errors.As(err, &re) || re.Code != jsonrpc.CodeInternalError {
		t.Fatalf("protocol_error_job: %v", err)
	}

	// Cancel reaches the handler: the task ends cancelled.
	task, err = s.CallToolTask(ctx, "slow_compute", map[string]any{"seconds": 30, "label": "c"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := task.Get(ctx); err != nil || st.Status != "working" {
		t.Fatalf("slow_compute right after create: %+v %v", st, err)
	}
	if err := task.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := task.Wait(ctx, nil); !errors.Is(err, pmcp.ErrTaskCancelled) {
		t.Fatalf("after cancel: %v", err)
	}

	// The same tool through plain CallTool, which never asks for a task:
	// the server answers synchronously.
	res, err = s.CallTool(ctx, "slow_compute", map[string]any{"seconds": 0, "label": "sync"})
	if err != nil || !strings.Contains(text(t, res), "sync") {
		t.Fatalf("slow_compute via CallTool: %+v %v", res, err)
	}

	// Multi-round-trip input before the task (modern), elicitation inside
	// it (legacy).
	task, err = s.CallToolTask(ctx, "test_tool_with_task", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res, err = task.Wait(ctx, nil); err != nil || !strings.Contains(text(t, res), "alice") {
		t.Fatalf("test_tool_with_task: %+v %v", res, err)
	}
}

// TestClientTaskStatusPushed: the server pushes task status, on a Listen
// subscription naming the task (modern) or as notifications/tasks/status
// (legacy), until the task completes.
func TestClientTaskStatusPushed(t *testing.T) {
	for _, tc := range transportCases {
		for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
			t.Run(tc.name+"/"+era.String(), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				got := make(chan *pmcp.DetailedTask, 64)
				opts := everythingClientOptions(era, make(chan string, 64))
				opts.Notifications.TaskStatus = func(ctx context.Context, st *pmcp.DetailedTask) { got <- st }
				s := tc.connect(t, pmcp.NewClient(opts))
				task, err := s.CallToolTask(ctx, "slow_compute", map[string]any{"seconds": 0.3, "label": "push"}, 0)
				if err != nil {
					t.Fatal(err)
				}
				if era == pmcp.EraModern {
					lctx, lcancel := context.WithCancel(ctx)
					defer lcancel()
					done := make(chan error, 1)
					go func() { done <- s.Listen(lctx, pmcp.SubscriptionFilter{TaskIDs: []string{task.ID()}}) }()
					defer func() { lcancel(); <-done }()
				}
				for {
					select {
					case st := <-got:
						if st.TaskID != task.ID() {
							t.Fatalf("status of %q, want %q", st.TaskID, task.ID())
						}
						if st.Status == "completed" {
							return
						}
					case <-ctx.Done():
						t.Fatal("no completed status pushed")
					}
				}
			})
		}
	}
}

// TestTaskSurvivesStreamClose: over Streamable HTTP a task outlives the
// POST that created it and the whole client session: in the 2026-07-28
// era another session (same, anonymous owner) picks it up by id; in the
// 2025-11-25 era the session waits for it on later requests.
func TestTaskSurvivesStreamClose(t *testing.T) {
	url := serveHTTP(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
		c := pmcp.NewClient(pmcp.ClientOptions{Era: era})
		s, err := c.ConnectHTTP(ctx, url, pmcp.HTTPClientOptions{})
		if err != nil {
			t.Fatal(err)
		}
		task, err := s.CallToolTask(ctx, "slow_compute", map[string]any{"seconds": 0.3, "label": "survivor"}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if era == pmcp.EraModern {
			_ = s.Close()
			s = connectHTTP(t, c, url)
			task = s.Task(task.ID())
		}
		res, err := task.Wait(ctx, nil)
		if err != nil || !strings.Contains(text(t, res), "survivor") {
			t.Fatalf("%v: %+v %v", era, res, err)
		}
		if era == pmcp.EraLegacy {
			_ = s.Close()
		}
	}
}
