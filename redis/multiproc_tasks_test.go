package redis

import (
	"context"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/tasks"
)

// testTaskLease is the runner lease of the task replicas: short, so that a
// killed replica's task fails quickly.
const testTaskLease = 2 * time.Second

// TestTaskReplicasMultiProcess runs tasks on three `pmcp serve --redis`
// replicas sharing the Redis TaskStore. Each client talks to one replica
// directly (no proxy), so which replica serves what is fixed: a task runs
// on the replica that created it (r0) and is read, answered and cancelled
// through the others.
func TestTaskReplicasMultiProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/pmcp and runs three processes")
	}
	if _, err := exec.LookPath("redis-server"); err != nil && redisAddr == "" {
		t.Skip("no redis-server")
	}
	rsrv, err := startRedis(0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { rsrv.stop() }()
	bin := buildPmcp(t)
	lease := "--task-lease=" + testTaskLease.String()
	a := startReplica(t, bin, "r0", rsrv.addr, lease)
	b := startReplica(t, bin, "r1", rsrv.addr, lease)
	c := startReplica(t, bin, "r2", rsrv.addr, lease)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	direct := func(p *replicaProc, opts pmcp.ClientOptions) *pmcp.ClientSession {
		return connectVia(t, ctx, "http://"+p.addr+"/mcp", pmcp.EraModern, opts)
	}
	confirmYes := func(context.Context, *pmcp.ElicitParams) (*pmcp.ElicitResult, error) {
		return &pmcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
	}
	proxy := newProxy(t, []*replicaProc{a, b, c})
	csA := direct(a, pmcp.ClientOptions{})
	csB := direct(b, pmcp.ClientOptions{Elicitation: confirmYes})
	csC := direct(c, pmcp.ClientOptions{})

	// waitStatus polls tk until want (or a terminal status) and returns
	// the snapshot.
	waitStatus := func(t *testing.T, tk *pmcp.ClientTask, want string) *pmcp.DetailedTask {
		t.Helper()
		for {
			st, err := tk.Get(ctx)
			if err != nil {
				t.Fatalf("tasks/get %s: %v", tk.ID(), err)
			}
			if st.Status == want || st.Terminal() {
				return st
			}
			select {
			case <-ctx.Done():
				t.Fatalf("task %s: still %q, want %q", tk.ID(), st.Status, want)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}

	// 1. Input answered through another replica: confirm_delete runs on
	// r0, r2 sees it waiting for input, r1 answers it (tasks/update) and
	// reads the result.
	var doneID string
	t.Run("InputAnsweredThroughOtherReplica", func(t *testing.T) {
		tk, err := csA.CallToolTask(ctx, "confirm_delete", map[string]any{"filename": "report.txt"}, 0)
		if err != nil || tk.ID() == "" {
			t.Fatalf("confirm_delete on r0: task %q, %v", tk.ID(), err)
		}
		doneID = tk.ID()
		st := waitStatus(t, csC.Task(doneID), "input_required")
		if st.Status != "input_required" || len(st.InputRequests) != 1 {
			t.Fatalf("r2 sees %q with %d input requests, want input_required with 1", st.Status, len(st.InputRequests))
		}
		res, err := csB.Task(doneID).Wait(ctx, nil)
		if err != nil || text(res) != "deleted report.txt" {
			t.Fatalf("result through r1: %v %v (want the answer given through r1 to reach r0's handler)", res, err)
		}
		st = waitStatus(t, csC.Task(doneID), "completed")
		if st.Status != "completed" || !strings.Contains(string(st.Result), "deleted report.txt") {
			t.Fatalf("r2 sees %q %s", st.Status, st.Result)
		}
	})

	// 2. Cancel through another replica reaches the runner on r0.
	t.Run("CancelThroughOtherReplica", func(t *testing.T) {
		tk, err := csA.CallToolTask(ctx, "slow_compute", map[string]any{"seconds": 60, "label": "long"}, 0)
		if err != nil || tk.ID() == "" {
			t.Fatalf("slow_compute on r0: %v", err)
		}
		if st := waitStatus(t, csB.Task(tk.ID()), "working"); st.Status != "working" {
			t.Fatalf("r1 sees %q, want working", st.Status)
		}
		start := time.Now()
		if err := csC.Task(tk.ID()).Cancel(ctx); err != nil {
			t.Fatalf("tasks/cancel through r2: %v", err)
		}
		st := waitStatus(t, csB.Task(tk.ID()), "cancelled")
		if st.Status != "cancelled" {
			t.Fatalf("after cancel through r2, r1 sees %q", st.Status)
		}
		t.Logf("cancel through r2 settled after %v", time.Since(start))
	})

	// 3. kill -9 the replica running a task: the task fails once the lease
	// lapses, and the result of a task it finished survives it.
	t.Run("KillRunnerMidTask", func(t *testing.T) {
		tk, err := csA.CallToolTask(ctx, "slow_compute", map[string]any{"seconds": 60, "label": "orphan"}, 0)
		if err != nil || tk.ID() == "" {
			t.Fatalf("slow_compute on r0: %v", err)
		}
		id := tk.ID()
		if st := waitStatus(t, csB.Task(id), "working"); st.Status != "working" || !strings.Contains(st.StatusMessage, "orphan") {
			t.Fatalf("r1 sees %q %q, want working with the runner's status message", st.Status, st.StatusMessage)
		}
		a.kill(t)
		killed := time.Now()
		st := waitStatus(t, csB.Task(id), "failed")
		took := time.Since(killed)
		if st.Status != "failed" || st.Error == nil || st.Error.Code != tasks.LeaseLostCode || !strings.Contains(st.Error.Message, "lease expired") {
			t.Fatalf("after kill -9 of its runner, r1 sees %q error %+v, want failed with the lease-lost error", st.Status, st.Error)
		}
		if took > testTaskLease+3*time.Second {
			t.Fatalf("task failed %v after the kill, want within the lease (%v) plus the sweep", took, testTaskLease)
		}
		t.Logf("killed runner's task failed after %v (lease %v): %s", took, testTaskLease, st.Error.Message)
		if st := waitStatus(t, csC.Task(id), "failed"); st.Status != "failed" {
			t.Fatalf("r2 sees %q", st.Status)
		}
		// The task r0 finished before it died keeps its result.
		done := waitStatus(t, csC.Task(doneID), "completed")
		if done.Status != "completed" || !strings.Contains(string(done.Result), "deleted report.txt") {
			t.Fatalf("finished task after its runner died: %q %s", done.Status, done.Result)
		}
		res, err := csB.Task(doneID).Wait(ctx, nil)
		if err != nil || text(res) != "deleted report.txt" {
			t.Fatalf("finished task's result through r1 after r0 died: %v %v", res, err)
		}
	})

	// 4. A 2025-11-25 task belongs to its session. Its replica (r1, the
	// session's owner and the task's runner) dies; the session is adopted
	// by r2, which must still find the session's tasks.
	t.Run("LegacyTaskAfterSessionAdoption", func(t *testing.T) {
		var target atomic.Pointer[replicaProc]
		target.Store(b)
		proxy.setPick(func(*http.Request) *replicaProc { return target.Load() })
		defer proxy.setPick(nil)
		cs := connectVia(t, ctx, proxy.url(), pmcp.EraLegacy, pmcp.ClientOptions{})
		if ownerOf([]*replicaProc{b}, cs.SessionID()) == nil {
			t.Fatalf("session %q not owned by r1", cs.SessionID())
		}
		tk, err := cs.CallToolTask(ctx, "slow_compute", map[string]any{"seconds": 0.05, "label": "legacy"}, time.Minute)
		if err != nil || tk.ID() == "" {
			t.Fatalf("legacy task on r1: %v", err)
		}
		if st := waitStatus(t, tk, "completed"); st.Status != "completed" {
			t.Fatalf("legacy task: %q", st.Status)
		}
		b.kill(t)
		target.Store(c)
		res, err := tk.Wait(ctx, nil)
		if err != nil || !strings.Contains(text(res), "computed") {
			t.Fatalf("tasks/result through r2 after r1 died: %v %v", res, err)
		}
		// tasks/list of the session, sent straight to each live replica
		// (r2 only by now: the session's new owner).
		for _, p := range []*replicaProc{c, a} {
			if !p.alive() {
				continue
			}
			body := legacyRaw(t, ctx, p, cs, `{"jsonrpc":"2.0","id":7,"method":"tasks/list"}`)
			if !strings.Contains(body, tk.ID()) || !strings.Contains(body, `"completed"`) {
				t.Fatalf("tasks/list through %s: %s", p.name, body)
			}
		}
	})
}

// legacyRaw posts one JSON-RPC message of cs's 2025-11-25 session straight
// to replica p and returns the response body.
func legacyRaw(t *testing.T, ctx context.Context, p *replicaProc, cs *pmcp.ClientSession, msg string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+p.addr+"/mcp", strings.NewReader(msg))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", cs.SessionID())
	req.Header.Set("Mcp-Protocol-Version", cs.ProtocolVersion())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s through %s: %v", msg, p.name, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s through %s: HTTP %d %s %v", msg, p.name, resp.StatusCode, b, err)
	}
	return string(b)
}
