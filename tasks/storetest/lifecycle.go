package storetest

import (
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/gopmcp/pmcp/tasks"
)

func testCreateIsDurable(e *env) {
	// Get from another goroutine right after Create returns, with no
	// delay: the 2026-07-28 era forbids replying before tasks/get works.
	for range 50 {
		task := e.create(alice, tasks.Spec{})
		got := make(chan error, 1)
		go func() {
			_, err := e.s.Get(e.ctx, alice, task.ID)
			got <- err
		}()
		if err := <-got; err != nil {
			e.t.Fatalf("Get right after Create: %v", err)
		}
	}
}

func testCreateDefaultsAndSpec(e *env) {
	now := e.clock.Now()
	stamp := now.UTC().Truncate(time.Millisecond)
	task := e.create(alice, tasks.Spec{})
	switch {
	case task.Owner != alice:
		e.t.Fatalf("Owner = %q", task.Owner)
	case task.Status != tasks.StatusWorking:
		e.t.Fatalf("Status = %q, want working", task.Status)
	case task.Version != 1:
		e.t.Fatalf("Version = %d, want 1", task.Version)
	case !task.CreatedAt.Equal(stamp) || !task.UpdatedAt.Equal(stamp):
		e.t.Fatalf("CreatedAt %v UpdatedAt %v, want %v (ms precision)", task.CreatedAt, task.UpdatedAt, stamp)
	case task.TTL != tasks.DefaultTTL:
		e.t.Fatalf("TTL = %v, want DefaultTTL", task.TTL)
	case task.PollInterval != tasks.DefaultPollInterval:
		e.t.Fatalf("PollInterval = %v, want DefaultPollInterval", task.PollInterval)
	case task.ExpiresAt.Before(now.Add(task.TTL)):
		e.t.Fatalf("ExpiresAt %v is before creation+TTL %v", task.ExpiresAt, now.Add(task.TTL))
	case task.CancelRequested || task.Result != nil || task.Error != nil || len(task.InputRequests) != 0:
		e.t.Fatalf("new task is not blank: %+v", task)
	case task.LeaseHolder != "":
		e.t.Fatalf("LeaseHolder = %q without Spec.Holder", task.LeaseHolder)
	}
	if got := e.get(alice, task.ID); !reflect.DeepEqual(got, task) {
		e.t.Fatalf("Get = %+v\nCreate returned %+v", got, task)
	}

	task = e.create(alice, tasks.Spec{
		TTL: 1500 * time.Microsecond, PollInterval: 250 * time.Millisecond,
		Holder: "runner-1", LeaseTTL: 5 * time.Second, StatusMessage: "queued",
	})
	switch {
	case task.TTL != 2*time.Millisecond:
		e.t.Fatalf("TTL = %v, want 1.5ms rounded up to 2ms", task.TTL)
	case task.PollInterval != 250*time.Millisecond:
		e.t.Fatalf("PollInterval = %v", task.PollInterval)
	case task.StatusMessage != "queued":
		e.t.Fatalf("StatusMessage = %q", task.StatusMessage)
	case task.LeaseHolder != "runner-1" || task.LeaseExpiry.Before(now.Add(5*time.Second)):
		e.t.Fatalf("lease %q until %v, want runner-1 until at least %v", task.LeaseHolder, task.LeaseExpiry, now.Add(5*time.Second))
	}

	// A snapshot is a copy: changing it changes nothing stored.
	task = e.create(alice, tasks.Spec{})
	task = e.update(alice, task.ID, tasks.Change{To: tasks.StatusInputRequired,
		InputRequests: map[string]tasksValue{"k": raw(`{"a":1}`)}})
	task.InputRequests["k"][2] = 'X'
	task.InputRequests["other"] = raw(`1`)
	if got := e.get(alice, task.ID); string(got.InputRequests["k"]) != `{"a":1}` || len(got.InputRequests) != 1 {
		e.t.Fatalf("store changed through a snapshot: %s", got.InputRequests)
	}
}

func testCreateRejectsBadSpec(e *env) {
	bad := []struct {
		owner string
		spec  tasks.Spec
	}{
		{"", tasks.Spec{}},
		{strings.Repeat("o", tasks.MaxOwnerBytes+1), tasks.Spec{}},
		{alice, tasks.Spec{PollInterval: -1}},
		{alice, tasks.Spec{LeaseTTL: -1}},
		{alice, tasks.Spec{Holder: strings.Repeat("h", tasks.MaxHolderBytes+1)}},
	}
	for _, b := range bad {
		_, err := e.s.Create(e.ctx, b.owner, b.spec)
		e.wantErr(fmt.Sprintf("Create(%.10q, %+v)", b.owner, b.spec), err, tasks.ErrInvalid)
	}
	page, err := e.s.List(e.ctx, alice, "", 0)
	if err != nil || len(page.Tasks) != 0 {
		e.t.Fatalf("rejected creates left tasks: %d, %v", len(page.Tasks), err)
	}
}

func testIDs(e *env) {
	seen := make(map[string]bool)
	for range 1000 {
		id := e.create(alice, tasks.Spec{}).ID
		if seen[id] {
			e.t.Fatalf("duplicate id %q", id)
		}
		seen[id] = true
		rest, ok := strings.CutPrefix(id, "r7-")
		if !ok {
			e.t.Fatalf("id %q lacks IDPrefix r7-", id)
		}
		b, err := base64.RawURLEncoding.Strict().DecodeString(rest)
		if err != nil || len(b)*8 < 128 {
			e.t.Fatalf("id %q: random part is not >=128 bits of base64url (%d bytes, %v)", id, len(b), err)
		}
	}
}

// reach returns a task of alice in status st.
func (e *env) reach(st tasks.Status) tasks.Task {
	e.t.Helper()
	task := e.create(alice, tasks.Spec{})
	switch st {
	case tasks.StatusWorking:
		return task
	case tasks.StatusInputRequired:
		return e.update(alice, task.ID, tasks.Change{To: st})
	case tasks.StatusCompleted:
		return e.update(alice, task.ID, complete(`{}`))
	case tasks.StatusFailed:
		return e.update(alice, task.ID, fail(-32603, "boom"))
	case tasks.StatusCancelled:
		return e.update(alice, task.ID, tasks.Change{To: st})
	}
	e.t.Fatalf("reach %q", st)
	return task
}

var allStatuses = []tasks.Status{tasks.StatusWorking, tasks.StatusInputRequired,
	tasks.StatusCompleted, tasks.StatusFailed, tasks.StatusCancelled}

func changeTo(st tasks.Status) tasks.Change {
	switch st {
	case tasks.StatusCompleted:
		return complete(`{"ok":true}`)
	case tasks.StatusFailed:
		return fail(-32000, "nope")
	}
	return tasks.Change{To: st}
}

func testTransitions(e *env) {
	for _, from := range allStatuses {
		for _, to := range allStatuses {
			task := e.reach(from)
			got, err := e.s.Update(e.ctx, alice, task.ID, changeTo(to))
			legal := tasks.CanTransition(from, to)
			what := fmt.Sprintf("%s -> %s", from, to)
			switch {
			case legal && err != nil:
				e.t.Fatalf("%s: %v", what, err)
			case legal && got.Status != to:
				e.t.Fatalf("%s: status %s", what, got.Status)
			case legal && from != to && (got.Version != task.Version+1 || got.UpdatedAt.Before(task.UpdatedAt)):
				e.t.Fatalf("%s: version %d -> %d, updated %v -> %v", what, task.Version, got.Version, task.UpdatedAt, got.UpdatedAt)
			case !legal && from.Terminal():
				e.wantErr(what, err, tasks.ErrTerminal)
			case !legal:
				e.wantErr(what, err, tasks.ErrInvalidTransition)
			}
			if !legal {
				if after := e.get(alice, task.ID); !reflect.DeepEqual(after, task) {
					e.t.Fatalf("%s: a rejected change altered the task:\n%+v\n%+v", what, task, after)
				}
			}
		}
	}
	// The graph itself.
	for _, from := range allStatuses {
		for _, to := range allStatuses {
			if want := !from.Terminal(); tasks.CanTransition(from, to) != want {
				e.t.Fatalf("CanTransition(%s, %s) = %v", from, to, !want)
			}
		}
	}
	if tasks.CanTransition(tasks.StatusWorking, "paused") {
		e.t.Fatal("CanTransition to an unknown status")
	}
}

func testChangeValidation(e *env) {
	task := e.create(alice, tasks.Spec{})
	bad := []tasks.Change{
		{To: "paused"},
		{From: "paused"},
		{To: tasks.StatusCompleted},                                                 // no result
		{To: tasks.StatusFailed},                                                    // no error
		{To: tasks.StatusWorking, Result: raw(`{}`)},                                // result not completing
		{To: tasks.StatusCancelled, Error: &tasks.Error{Code: 1}},                   // error not failing
		{To: tasks.StatusCompleted, Result: raw(`{"a":`)},                           // bad JSON
		{To: tasks.StatusFailed, Error: &tasks.Error{Data: raw(`{,}`)}},             // bad JSON
		{To: tasks.StatusFailed, Error: &tasks.Error{Code: 1}, ResultIsError: true}, // no result
		{To: tasks.StatusInputRequired, InputRequests: map[string]tasksValue{"": raw(`{}`)}},
		{To: tasks.StatusInputRequired, InputRequests: map[string]tasksValue{strings.Repeat("k", tasks.MaxInputKeyBytes+1): raw(`{}`)}},
		{To: tasks.StatusInputRequired, InputRequests: map[string]tasksValue{"k": raw(`nope`)}},
	}
	for _, ch := range bad {
		_, err := e.s.Update(e.ctx, alice, task.ID, ch)
		e.wantErr(fmt.Sprintf("Update(%+v)", ch), err, tasks.ErrInvalid)
	}
	// Input requests need input_required.
	_, err := e.s.Update(e.ctx, alice, task.ID, tasks.Change{InputRequests: map[string]tasksValue{"k": raw(`{}`)}})
	e.wantErr("input requests while working", err, tasks.ErrInvalidTransition)
	if got := e.get(alice, task.ID); !reflect.DeepEqual(got, task) {
		e.t.Fatalf("rejected changes altered the task:\n%+v\n%+v", task, got)
	}
	// A change that changes nothing keeps the version.
	if got := e.update(alice, task.ID, tasks.Change{}); got.Version != task.Version {
		e.t.Fatalf("empty change bumped version %d -> %d", task.Version, got.Version)
	}
	if got := e.update(alice, task.ID, tasks.Change{StatusMessage: str("")}); got.Version != task.Version {
		e.t.Fatalf("same message bumped version %d -> %d", task.Version, got.Version)
	}
	e.clock.Advance(ms(5))
	got := e.update(alice, task.ID, tasks.Change{StatusMessage: str("half way")})
	if got.Version != task.Version+1 || got.StatusMessage != "half way" || !got.UpdatedAt.Equal(e.clock.Now().UTC().Truncate(time.Millisecond)) {
		e.t.Fatalf("message change: %+v", got)
	}
}

func testCompareAndSet(e *env) {
	task := e.create(alice, tasks.Spec{})
	next := e.update(alice, task.ID, tasks.Change{IfVersion: task.Version, StatusMessage: str("one")})
	if next.Version != task.Version+1 {
		e.t.Fatalf("version %d -> %d", task.Version, next.Version)
	}
	_, err := e.s.Update(e.ctx, alice, task.ID, tasks.Change{IfVersion: task.Version, StatusMessage: str("stale")})
	e.wantErr("stale IfVersion", err, tasks.ErrConflict)
	_, err = e.s.Update(e.ctx, alice, task.ID, tasks.Change{From: tasks.StatusInputRequired, To: tasks.StatusWorking})
	e.wantErr("wrong From", err, tasks.ErrConflict)
	if got := e.get(alice, task.ID); got.StatusMessage != "one" || got.Version != next.Version {
		e.t.Fatalf("a lost CAS changed the task: %+v", got)
	}
	got := e.update(alice, task.ID, tasks.Change{IfVersion: next.Version, From: tasks.StatusWorking, To: tasks.StatusInputRequired})
	if got.Status != tasks.StatusInputRequired {
		e.t.Fatalf("status %s", got.Status)
	}
}

func testConcurrentCAS(e *env) {
	const n = 32
	for round := range 5 {
		task := e.create(alice, tasks.Spec{})
		if round > 0 {
			task = e.update(alice, task.ID, tasks.Change{StatusMessage: str("warm")})
		}
		var wg sync.WaitGroup
		wins := make(chan string, n)
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				msg := fmt.Sprintf("writer %d", i)
				_, err := e.s.Update(e.ctx, alice, task.ID, tasks.Change{IfVersion: task.Version, StatusMessage: &msg})
				switch {
				case err == nil:
					wins <- msg
				case !errors.Is(err, tasks.ErrConflict):
					e.t.Errorf("loser got %v, want ErrConflict", err)
				}
			})
		}
		close(start)
		wg.Wait()
		close(wins)
		var winners []string
		for w := range wins {
			winners = append(winners, w)
		}
		if len(winners) != 1 {
			e.t.Fatalf("%d writers won the same version, want exactly 1: %q", len(winners), winners)
		}
		if got := e.get(alice, task.ID); got.StatusMessage != winners[0] || got.Version != task.Version+1 {
			e.t.Fatalf("stored %q v%d, winner %q", got.StatusMessage, got.Version, winners[0])
		}
	}
}

func testConcurrentTerminal(e *env) {
	// Runner completion, client cancel and sweeper failure race; exactly
	// one terminal state wins and stays.
	const n = 24
	task := e.create(alice, tasks.Spec{})
	var wg sync.WaitGroup
	wins := make(chan tasks.Change, n)
	start := make(chan struct{})
	for i := range n {
		var ch tasks.Change
		switch i % 3 {
		case 0:
			ch = complete(fmt.Sprintf(`{"writer":%d}`, i))
		case 1:
			ch = fail(int64(-32000-i), fmt.Sprintf("writer %d", i))
		default:
			ch = tasks.Change{To: tasks.StatusCancelled}
		}
		wg.Go(func() {
			<-start
			_, err := e.s.Update(e.ctx, alice, task.ID, ch)
			switch {
			case err == nil:
				wins <- ch
			case !errors.Is(err, tasks.ErrTerminal):
				e.t.Errorf("loser got %v, want ErrTerminal", err)
			}
		})
	}
	close(start)
	wg.Wait()
	close(wins)
	var won []tasks.Change
	for w := range wins {
		won = append(won, w)
	}
	if len(won) != 1 {
		e.t.Fatalf("%d terminal writers won, want 1", len(won))
	}
	got := e.get(alice, task.ID)
	if got.Status != won[0].To || string(got.Result) != string(won[0].Result) || (won[0].Error != nil) != (got.Error != nil) ||
		(got.Error != nil && !reflect.DeepEqual(got.Error, won[0].Error)) || got.Version != task.Version+1 {
		e.t.Fatalf("stored %+v, winner %+v", got, won[0])
	}
}

func testOwnerIsolation(e *env) {
	gone := e.create(alice, tasks.Spec{TTL: ms(1)}).ID
	e.clock.Advance(ms(2))
	e.sweep()
	mine := e.create(alice, tasks.Spec{Holder: "runner"})
	mine = e.update(alice, mine.ID, tasks.Change{To: tasks.StatusInputRequired,
		InputRequests: map[string]tasksValue{"q": raw(`{"method":"elicitation/create"}`)}})

	probes := map[string]func(owner, id string) error{
		"Get": func(o, id string) error { _, err := e.s.Get(e.ctx, o, id); return err },
		"Update": func(o, id string) error {
			_, err := e.s.Update(e.ctx, o, id, tasks.Change{To: tasks.StatusCancelled})
			return err
		},
		"Complete": func(o, id string) error { _, err := e.s.Update(e.ctx, o, id, complete(`{}`)); return err },
		"DeliverInputs": func(o, id string) error {
			_, err := e.s.DeliverInputs(e.ctx, o, id, map[string]tasksValue{"q": raw(`{"action":"accept"}`)})
			return err
		},
		"RequestCancel": func(o, id string) error { _, err := e.s.RequestCancel(e.ctx, o, id); return err },
		"Watch":         func(o, id string) error { _, err := e.s.Watch(e.ctx, o, id); return err },
	}
	ids := map[string]string{
		"foreign":   mine.ID,
		"unknown":   tasks.NewID(""),
		"expired":   gone,
		"malformed": "not-a-task-id",
		"empty":     "",
		"long":      strings.Repeat("A", 10_000),
	}
	for name, probe := range probes {
		msgs := map[string]string{}
		for kind, id := range ids {
			err := probe(bob, id)
			e.wantNotFound(name+" "+kind, err)
			msgs[kind] = err.Error()
		}
		for kind, m := range msgs {
			if m != msgs["unknown"] {
				e.t.Fatalf("%s: a %s id gives %q but an unknown one %q: the caller can tell them apart", name, kind, m, msgs["unknown"])
			}
		}
	}
	page, err := e.s.List(e.ctx, bob, "", 0)
	if err != nil || len(page.Tasks) != 0 || page.NextCursor != "" {
		e.t.Fatalf("bob lists %d of alice's tasks (%v)", len(page.Tasks), err)
	}
	if got := e.get(alice, mine.ID); !reflect.DeepEqual(got, mine) {
		e.t.Fatalf("bob changed alice's task:\n%+v\n%+v", mine, got)
	}
	// Owner strings compare exactly: no prefix or case folding.
	for _, o := range []string{"sub:Alice", "sub:alice ", "sub:alic", "sub:alice\x00"} {
		_, err := e.s.Get(e.ctx, o, mine.ID)
		e.wantNotFound("Get as "+fmt.Sprintf("%q", o), err)
	}
}

func testResultOnce(e *env) {
	task := e.create(alice, tasks.Spec{Holder: "runner"})
	task = e.update(alice, task.ID, tasks.Change{To: tasks.StatusInputRequired,
		InputRequests: map[string]tasksValue{"k": raw(`{}`)}})
	done := e.update(alice, task.ID, tasks.Change{To: tasks.StatusCompleted, ResultIsError: true,
		Result: raw(`{"content":[{"type":"text","text":"hi"}],"isError":true}`)})
	if string(done.Result) != `{"content":[{"type":"text","text":"hi"}],"isError":true}` || done.Error != nil || !done.ResultIsError {
		e.t.Fatalf("completed: %+v", done)
	}
	if done.InputRequests != nil || done.InputResponses != nil || done.LeaseHolder != "" {
		e.t.Fatalf("a terminal task keeps inputs or a lease: %+v", done)
	}
	for _, ch := range []tasks.Change{complete(`{"again":1}`), fail(-1, "late"), {To: tasks.StatusCancelled},
		{StatusMessage: str("late")}, {}} {
		_, err := e.s.Update(e.ctx, alice, task.ID, ch)
		e.wantErr(fmt.Sprintf("after completion, %+v", ch), err, tasks.ErrTerminal)
	}
	if got := e.get(alice, task.ID); !reflect.DeepEqual(got, done) {
		e.t.Fatalf("terminal task changed:\n%+v\n%+v", done, got)
	}

	task = e.create(alice, tasks.Spec{})
	failed := e.update(alice, task.ID, tasks.Change{To: tasks.StatusFailed,
		Error: &tasks.Error{Code: -32602, Message: "bad input", Data: raw(`{"field":"x"}`)}})
	if failed.Result != nil || failed.Error == nil || failed.Error.Code != -32602 ||
		failed.Error.Message != "bad input" || string(failed.Error.Data) != `{"field":"x"}` {
		e.t.Fatalf("failed: %+v / %+v", failed, failed.Error)
	}
	_, err := e.s.Update(e.ctx, alice, task.ID, complete(`{}`))
	e.wantErr("complete after failure", err, tasks.ErrTerminal)
}
