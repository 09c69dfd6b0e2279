package storetest

import (
	"context"
	"strings"
	"time"

	"github.com/gopmcp/pmcp/tasks"
)

func testBoundsTasks(e *env) {
	// MaxTasksPerOwner 3, MaxTasks 5.
	var mine []string
	for range 3 {
		mine = append(mine, e.create(alice, tasks.Spec{TTL: time.Second}).ID)
	}
	_, err := e.s.Create(e.ctx, alice, tasks.Spec{})
	e.wantLimit("4th task of one owner", err)
	e.create(bob, tasks.Spec{})
	e.create("sub:carol", tasks.Spec{})
	_, err = e.s.Create(e.ctx, "sub:dave", tasks.Spec{})
	e.wantLimit("6th task in the store", err)
	// Terminal tasks still count until they expire...
	e.update(alice, mine[0], complete(`{}`))
	_, err = e.s.Create(e.ctx, alice, tasks.Spec{})
	e.wantLimit("terminal tasks count", err)
	// ... and expired ones do not.
	e.clock.Advance(time.Second + time.Millisecond)
	e.sweep()
	for range 3 {
		e.create(alice, tasks.Spec{})
	}
	if p, err := e.s.List(e.ctx, alice, "", 0); err != nil || len(p.Tasks) != 3 {
		e.t.Fatalf("alice has %d tasks, %v", len(p.Tasks), err)
	}
}

func testBoundsSizes(e *env) {
	// MaxResultBytes 64, MaxStatusMessageBytes 16, MaxPendingInputs 2,
	// MaxInputBytes 256, MaxInputKeys 3, MaxWatchersPerTask 2.
	task := e.create(alice, tasks.Spec{})
	big := `"` + strings.Repeat("x", 63) + `"` // 65 bytes
	_, err := e.s.Update(e.ctx, alice, task.ID, complete(big))
	e.wantLimit("oversized result", err)
	_, err = e.s.Update(e.ctx, alice, task.ID, tasks.Change{To: tasks.StatusFailed,
		Error: &tasks.Error{Code: 1, Message: strings.Repeat("m", 40), Data: raw(`"` + strings.Repeat("d", 30) + `"`)}})
	e.wantLimit("oversized error", err)
	_, err = e.s.Update(e.ctx, alice, task.ID, tasks.Change{StatusMessage: str(strings.Repeat("s", 17))})
	e.wantLimit("oversized status message", err)
	_, err = e.s.Create(e.ctx, alice, tasks.Spec{StatusMessage: strings.Repeat("s", 17)})
	e.wantLimit("oversized initial status message", err)
	_, err = e.s.Update(e.ctx, alice, task.ID, tasks.Change{To: tasks.StatusInputRequired,
		InputRequests: map[string]tasksValue{"a": raw(`1`), "b": raw(`2`), "c": raw(`3`)}})
	e.wantLimit("too many pending inputs", err)
	_, err = e.s.Update(e.ctx, alice, task.ID, tasks.Change{To: tasks.StatusInputRequired,
		InputRequests: map[string]tasksValue{"a": raw(`"` + strings.Repeat("r", 300) + `"`)}})
	e.wantLimit("oversized input request", err)
	if got := e.get(alice, task.ID); got.Status != tasks.StatusWorking || got.Version != task.Version {
		e.t.Fatalf("rejected oversized changes altered the task: %+v", got)
	}

	// Responses count against MaxInputBytes too.
	e.update(alice, task.ID, tasks.Change{To: tasks.StatusInputRequired,
		InputRequests: map[string]tasksValue{"a": raw(`{}`), "b": raw(`{}`)}})
	_, err = e.s.DeliverInputs(e.ctx, alice, task.ID, map[string]tasksValue{"a": raw(`"` + strings.Repeat("r", 300) + `"`)})
	e.wantLimit("oversized input response", err)
	if got := e.get(alice, task.ID); len(got.InputRequests) != 2 || len(got.InputResponses) != 0 {
		e.t.Fatalf("a rejected delivery applied in part: %v %v", keys(got.InputRequests), keys(got.InputResponses))
	}
	e.deliver(alice, task.ID, map[string]tasksValue{"a": raw(`1`), "b": raw(`2`)})
	e.update(alice, task.ID, tasks.Change{ConsumeInputs: []string{"a", "b"}})
	// Lifetime keys: a and b used, one more allowed.
	e.update(alice, task.ID, tasks.Change{To: tasks.StatusInputRequired, InputRequests: map[string]tasksValue{"c": raw(`{}`)}})
	e.deliver(alice, task.ID, map[string]tasksValue{"c": raw(`1`)})
	_, err = e.s.Update(e.ctx, alice, task.ID, tasks.Change{To: tasks.StatusInputRequired, InputRequests: map[string]tasksValue{"d": raw(`{}`)}})
	e.wantLimit("too many input keys over the task's life", err)

	// Watchers per task.
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	for range 2 {
		if _, err := e.s.Watch(ctx, alice, task.ID); err != nil {
			e.t.Fatal(err)
		}
	}
	_, err = e.s.Watch(ctx, alice, task.ID)
	e.wantLimit("third watcher", err)
}

func testContextAndClose(e *env) {
	task := e.create(alice, tasks.Spec{})
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	_, err := e.s.Create(ctx, alice, tasks.Spec{})
	e.wantErr("Create with a done context", err, context.Canceled)
	_, err = e.s.Get(ctx, alice, task.ID)
	e.wantErr("Get with a done context", err, context.Canceled)
	_, err = e.s.Update(ctx, alice, task.ID, tasks.Change{StatusMessage: str("x")})
	e.wantErr("Update with a done context", err, context.Canceled)
	if e.get(alice, task.ID).StatusMessage != "" {
		e.t.Fatal("an Update with a done context applied")
	}

	if err := e.s.Close(); err != nil {
		e.t.Fatal(err)
	}
	if err := e.s.Close(); err != nil {
		e.t.Fatalf("second Close: %v", err)
	}
	_, err = e.s.Create(e.ctx, alice, tasks.Spec{})
	e.wantErr("Create after Close", err, tasks.ErrClosed)
	_, err = e.s.Get(e.ctx, alice, task.ID)
	e.wantErr("Get after Close", err, tasks.ErrClosed)
	_, err = e.s.Watch(e.ctx, alice, task.ID)
	e.wantErr("Watch after Close", err, tasks.ErrClosed)
	_, err = e.s.Sweep(e.ctx)
	e.wantErr("Sweep after Close", err, tasks.ErrClosed)
}
