package storetest

import (
	"reflect"
	"slices"

	"github.com/gopmcp/pmcp/tasks"
)

func keys(m map[string]tasksValue) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func (e *env) deliver(owner, id string, resp map[string]tasksValue) tasks.Delivery {
	e.t.Helper()
	d, err := e.s.DeliverInputs(e.ctx, owner, id, resp)
	if err != nil {
		e.t.Fatalf("DeliverInputs(%v): %v", keys(resp), err)
	}
	return d
}

func testInputs(e *env) {
	task := e.create(alice, tasks.Spec{Holder: "runner"})
	task = e.update(alice, task.ID, tasks.Change{To: tasks.StatusInputRequired, StatusMessage: str("need two answers"),
		InputRequests: map[string]tasksValue{
			"name":    raw(`{"method":"elicitation/create","params":{"message":"name?"}}`),
			"confirm": raw(`{"method":"elicitation/create","params":{"message":"sure?"}}`),
		}})
	if task.Status != tasks.StatusInputRequired || !slices.Equal(keys(task.InputRequests), []string{"confirm", "name"}) {
		e.t.Fatalf("after recording: %s %v", task.Status, keys(task.InputRequests))
	}

	// A partial update: one known key, one unknown key.
	d := e.deliver(alice, task.ID, map[string]tasksValue{
		"name":    raw(`{"action":"accept","content":{"name":"Alice"}}`),
		"unknown": raw(`{"action":"accept"}`),
	})
	if !slices.Equal(d.Accepted, []string{"name"}) {
		e.t.Fatalf("Accepted = %q, want [name]", d.Accepted)
	}
	// Applied before the ack: an immediate Get shows exactly the
	// unanswered key and the delivered response.
	got := e.get(alice, task.ID)
	if got.Status != tasks.StatusInputRequired || !slices.Equal(keys(got.InputRequests), []string{"confirm"}) ||
		!slices.Equal(keys(got.InputResponses), []string{"name"}) ||
		string(got.InputResponses["name"]) != `{"action":"accept","content":{"name":"Alice"}}` {
		e.t.Fatalf("after partial delivery: %s requests %v responses %v", got.Status, keys(got.InputRequests), keys(got.InputResponses))
	}
	if !reflect.DeepEqual(got, d.Task) || got.Version != task.Version+1 {
		e.t.Fatalf("Delivery.Task differs from Get or version not bumped: %d -> %d", task.Version, got.Version)
	}

	// Answering an answered key again, or only unknown keys, is ignored
	// and changes nothing.
	d = e.deliver(alice, task.ID, map[string]tasksValue{"name": raw(`{"action":"decline"}`), "zzz": raw(`1`)})
	if len(d.Accepted) != 0 || d.Task.Version != got.Version || string(d.Task.InputResponses["name"]) != string(got.InputResponses["name"]) {
		e.t.Fatalf("a re-answer was applied: %q v%d", d.Accepted, d.Task.Version)
	}
	if d := e.deliver(alice, task.ID, nil); len(d.Accepted) != 0 || d.Task.Version != got.Version {
		e.t.Fatalf("an empty delivery changed something")
	}
	_, err := e.s.DeliverInputs(e.ctx, alice, task.ID, map[string]tasksValue{"confirm": raw(`{nope`)})
	e.wantErr("invalid JSON response", err, tasks.ErrInvalid)

	// The last answer moves the task back to working.
	d = e.deliver(alice, task.ID, map[string]tasksValue{"confirm": raw(`{"action":"accept","content":{"confirm":true}}`)})
	if d.Task.Status != tasks.StatusWorking || len(d.Task.InputRequests) != 0 ||
		!slices.Equal(keys(d.Task.InputResponses), []string{"confirm", "name"}) {
		e.t.Fatalf("after the last answer: %s requests %v responses %v", d.Task.Status, keys(d.Task.InputRequests), keys(d.Task.InputResponses))
	}

	// The runner consumes the answers.
	got = e.update(alice, task.ID, tasks.Change{Holder: "runner", ConsumeInputs: []string{"name", "confirm", "never"}})
	if len(got.InputResponses) != 0 || got.Version != d.Task.Version+1 {
		e.t.Fatalf("after consuming: responses %v, version %d", keys(got.InputResponses), got.Version)
	}

	// The runner may withdraw outstanding requests by going back to
	// working without the answers.
	got = e.update(alice, task.ID, tasks.Change{To: tasks.StatusInputRequired,
		InputRequests: map[string]tasksValue{"second": raw(`{}`)}})
	got = e.update(alice, task.ID, tasks.Change{To: tasks.StatusWorking})
	if len(got.InputRequests) != 0 {
		e.t.Fatalf("working task keeps input requests %v", keys(got.InputRequests))
	}
	if d := e.deliver(alice, task.ID, map[string]tasksValue{"second": raw(`{}`)}); len(d.Accepted) != 0 {
		e.t.Fatalf("an answer to a withdrawn request was accepted")
	}

	// Input required without store-side requests (the 2025-11-25 era,
	// where requests travel on the tasks/result stream) is allowed.
	got = e.update(alice, task.ID, tasks.Change{To: tasks.StatusInputRequired})
	if got.Status != tasks.StatusInputRequired || len(got.InputRequests) != 0 {
		e.t.Fatalf("legacy input_required: %+v", got)
	}

	// Delivering to a terminal task is accepted as a no-op.
	e.update(alice, task.ID, complete(`{}`))
	if d := e.deliver(alice, task.ID, map[string]tasksValue{"second": raw(`{}`)}); len(d.Accepted) != 0 || d.Task.Status != tasks.StatusCompleted {
		e.t.Fatalf("delivery to a terminal task: %+v", d)
	}
}

func testInputKeysUnique(e *env) {
	task := e.create(alice, tasks.Spec{})
	e.update(alice, task.ID, tasks.Change{To: tasks.StatusInputRequired, InputRequests: map[string]tasksValue{"a": raw(`{}`)}})
	// Still pending:
	_, err := e.s.Update(e.ctx, alice, task.ID, tasks.Change{InputRequests: map[string]tasksValue{"a": raw(`{}`)}})
	e.wantErr("re-adding a pending key", err, tasks.ErrInvalid)
	e.deliver(alice, task.ID, map[string]tasksValue{"a": raw(`{}`)})
	// Answered, not yet consumed:
	_, err = e.s.Update(e.ctx, alice, task.ID, tasks.Change{To: tasks.StatusInputRequired, InputRequests: map[string]tasksValue{"a": raw(`{}`)}})
	e.wantErr("re-adding an answered key", err, tasks.ErrInvalid)
	e.update(alice, task.ID, tasks.Change{ConsumeInputs: []string{"a"}})
	// Consumed long ago:
	_, err = e.s.Update(e.ctx, alice, task.ID, tasks.Change{To: tasks.StatusInputRequired,
		InputRequests: map[string]tasksValue{"b": raw(`{}`), "a": raw(`{}`)}})
	e.wantErr("re-adding a consumed key", err, tasks.ErrInvalid)
	if got := e.get(alice, task.ID); got.Status != tasks.StatusWorking || len(got.InputRequests) != 0 {
		e.t.Fatalf("a rejected change applied in part: %s %v", got.Status, keys(got.InputRequests))
	}
	// Keys are per task: another task may use "a".
	other := e.create(alice, tasks.Spec{})
	e.update(alice, other.ID, tasks.Change{To: tasks.StatusInputRequired, InputRequests: map[string]tasksValue{"a": raw(`{}`)}})
}

func testCancelRequest(e *env) {
	task := e.create(alice, tasks.Spec{Holder: "runner"})
	w, err := e.s.Watch(e.ctx, alice, task.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	if first := <-w; first.Version != task.Version {
		e.t.Fatalf("first watch snapshot v%d, want v%d", first.Version, task.Version)
	}
	got, err := e.s.RequestCancel(e.ctx, alice, task.ID)
	if err != nil || !got.CancelRequested || got.Status != tasks.StatusWorking || got.Version != task.Version+1 {
		e.t.Fatalf("RequestCancel: %+v, %v", got, err)
	}
	// The runner sees the request through its watch...
	if seen := <-w; !seen.CancelRequested || seen.Version != got.Version {
		e.t.Fatalf("runner saw %+v", seen)
	}
	// ... and through Get.
	if !e.get(alice, task.ID).CancelRequested {
		e.t.Fatal("Get does not show the cancel request")
	}
	// Idempotent: a second request changes nothing.
	again, err := e.s.RequestCancel(e.ctx, alice, task.ID)
	if err != nil || again.Version != got.Version {
		e.t.Fatalf("second RequestCancel: v%d, %v", again.Version, err)
	}
	// Cooperative: the runner may still finish the work.
	done := e.update(alice, task.ID, tasks.Change{Holder: "runner", To: tasks.StatusCompleted, Result: raw(`{"late":true}`)})
	if done.Status != tasks.StatusCompleted {
		e.t.Fatalf("status %s", done.Status)
	}
	// On a terminal task a cancel request is an empty success.
	after, err := e.s.RequestCancel(e.ctx, alice, task.ID)
	if err != nil || !reflect.DeepEqual(after, done) {
		e.t.Fatalf("RequestCancel on a terminal task: %+v, %v", after, err)
	}
}

func testLegacyCancel(e *env) {
	// 2025-11-25: the task must be cancelled before the reply, and a
	// terminal task is an error.
	task := e.create(alice, tasks.Spec{Holder: "runner"})
	got := e.update(alice, task.ID, tasks.Change{To: tasks.StatusCancelled})
	if got.Status != tasks.StatusCancelled || !got.CancelRequested {
		e.t.Fatalf("legacy cancel: %+v", got)
	}
	_, err := e.s.Update(e.ctx, alice, task.ID, tasks.Change{To: tasks.StatusCancelled})
	e.wantErr("cancel of a cancelled task", err, tasks.ErrTerminal)
	// The runner, unaware, finishes later: its result is refused.
	_, err = e.s.Update(e.ctx, alice, task.ID, tasks.Change{Holder: "runner", To: tasks.StatusCompleted, Result: raw(`{}`)})
	e.wantErr("runner completing a cancelled task", err, tasks.ErrTerminal)
	if e.get(alice, task.ID).Status != tasks.StatusCancelled {
		e.t.Fatal("cancelled did not stick")
	}
}
