package storetest

import (
	"context"
	"fmt"

	"github.com/gopmcp/pmcp/tasks"
)

// drain reads w until it closes and returns what it read.
func drain(w <-chan tasks.Task) []tasks.Task {
	var got []tasks.Task
	for t := range w {
		got = append(got, t)
	}
	return got
}

func statuses(ts []tasks.Task) string {
	s := ""
	for _, t := range ts {
		s += fmt.Sprintf(" v%d:%s", t.Version, t.Status)
	}
	return s
}

func testWatchOrder(e *env) {
	task := e.create(alice, tasks.Spec{Holder: "runner"})
	w, err := e.s.Watch(e.ctx, alice, task.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	// Each step is one client-visible change.
	e.update(alice, task.ID, tasks.Change{StatusMessage: str("step 1")})
	e.update(alice, task.ID, tasks.Change{To: tasks.StatusInputRequired,
		InputRequests: map[string]tasksValue{"a": raw(`{}`), "b": raw(`{}`)}})
	e.deliver(alice, task.ID, map[string]tasksValue{"a": raw(`{}`)})
	e.deliver(alice, task.ID, map[string]tasksValue{"b": raw(`{}`)})
	e.update(alice, task.ID, tasks.Change{ConsumeInputs: []string{"a", "b"}})
	if _, err := e.s.RequestCancel(e.ctx, alice, task.ID); err != nil {
		e.t.Fatal(err)
	}
	// Lease operations and no-op changes are not client-visible changes.
	if _, err := e.s.Renew(e.ctx, task.ID, "runner", 0); err != nil {
		e.t.Fatal(err)
	}
	e.update(alice, task.ID, tasks.Change{})
	e.update(alice, task.ID, tasks.Change{To: tasks.StatusCancelled})

	got := drain(w)
	wantStatus := []tasks.Status{"working", "working", "input_required", "input_required", "working", "working", "working", "cancelled"}
	if len(got) != len(wantStatus) {
		e.t.Fatalf("watched%s, want %d snapshots", statuses(got), len(wantStatus))
	}
	for i, s := range got {
		if s.Version != uint64(i+1) || s.Status != wantStatus[i] {
			e.t.Fatalf("snapshot %d is v%d %s, want v%d %s (all:%s)", i, s.Version, s.Status, i+1, wantStatus[i], statuses(got))
		}
	}
	if got[3].InputRequests["b"] == nil || got[3].InputRequests["a"] != nil || !got[6].CancelRequested {
		e.t.Fatalf("snapshots do not carry the state of their version:%s", statuses(got))
	}
	// Two watchers see the same sequence.
	task = e.create(alice, tasks.Spec{})
	w1, _ := e.s.Watch(e.ctx, alice, task.ID)
	w2, _ := e.s.Watch(e.ctx, alice, task.ID)
	e.update(alice, task.ID, tasks.Change{StatusMessage: str("x")})
	e.update(alice, task.ID, complete(`{}`))
	if a, b := statuses(drain(w1)), statuses(drain(w2)); a != b || a != " v1:working v2:working v3:completed" {
		e.t.Fatalf("watchers saw %q and %q", a, b)
	}
}

func testWatchSlow(e *env) {
	task := e.create(alice, tasks.Spec{})
	w, err := e.s.Watch(e.ctx, alice, task.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	// 30 changes while nobody reads: the store must not block, and the
	// reader gets a suffix that ends with the final state.
	for i := range 29 {
		e.update(alice, task.ID, tasks.Change{StatusMessage: str(fmt.Sprint(i))})
	}
	e.update(alice, task.ID, complete(`{}`))
	got := drain(w)
	if len(got) == 0 || len(got) > 4+1 {
		e.t.Fatalf("slow reader got %d snapshots with WatchBuffer 4", len(got))
	}
	for i := 1; i < len(got); i++ {
		if got[i].Version <= got[i-1].Version {
			e.t.Fatalf("versions out of order:%s", statuses(got))
		}
	}
	if last := got[len(got)-1]; last.Status != tasks.StatusCompleted || last.Version != 31 {
		e.t.Fatalf("last snapshot v%d %s, want v31 completed", last.Version, last.Status)
	}
}

func testWatchEnds(e *env) {
	// A terminal task: one snapshot, then closed.
	done := e.create(alice, tasks.Spec{})
	e.update(alice, done.ID, complete(`{}`))
	w, err := e.s.Watch(e.ctx, alice, done.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	if got := drain(w); len(got) != 1 || got[0].Status != tasks.StatusCompleted {
		e.t.Fatalf("watch of a terminal task:%s", statuses(got))
	}
	// Cancelling the context closes the channel.
	task := e.create(alice, tasks.Spec{})
	ctx, cancel := context.WithCancel(e.ctx)
	w, err = e.s.Watch(ctx, alice, task.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	cancel()
	drain(w) // returns once closed
	e.update(alice, task.ID, tasks.Change{StatusMessage: str("after cancel")})
	// Expiry closes the channel.
	short := e.create(alice, tasks.Spec{TTL: ms(5)})
	w, err = e.s.Watch(e.ctx, alice, short.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	e.clock.Advance(ms(10))
	e.sweep()
	if got := drain(w); len(got) != 1 {
		e.t.Fatalf("watch of an expiring task:%s", statuses(got))
	}
	// A cancelled context is refused up front.
	_, err = e.s.Watch(ctx, alice, task.ID)
	e.wantErr("Watch with a done context", err, context.Canceled)
	// Close closes every channel.
	w, err = e.s.Watch(e.ctx, alice, task.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.s.Close(); err != nil {
		e.t.Fatal(err)
	}
	drain(w)
}
