package storetest

import (
	"math/rand/v2"
	"time"

	"github.com/gopmcp/pmcp/tasks"
)

func testTTLNeverEarly(e *env) {
	created := e.clock.Now()
	task := e.create(alice, tasks.Spec{TTL: 10 * time.Second})
	if task.TTL != 10*time.Second {
		e.t.Fatalf("TTL = %v", task.TTL)
	}
	deadline := created.Add(10 * time.Second)
	if task.ExpiresAt.Before(deadline) || task.ExpiresAt.Before(task.CreatedAt.Add(task.TTL)) {
		e.t.Fatalf("ExpiresAt %v is before %v", task.ExpiresAt, deadline)
	}
	// Right up to and including the deadline the task is there, swept or
	// not, terminal or not.
	for _, at := range []time.Time{created.Add(5 * time.Second), deadline.Add(-time.Nanosecond), deadline, task.ExpiresAt} {
		e.clock.Set(at)
		if st := e.sweep(); st.Expired != 0 {
			e.t.Fatalf("at %v (deadline %v) the sweep expired %d tasks", at, deadline, st.Expired)
		}
		e.get(alice, task.ID)
	}
	e.update(alice, task.ID, complete(`{}`))
	e.get(alice, task.ID)
	// After it, the task may go, and after a sweep it has gone.
	e.clock.Set(task.ExpiresAt.Add(time.Millisecond))
	if st := e.sweep(); st.Expired != 1 {
		e.t.Fatalf("sweep after the deadline expired %d tasks, want 1", st.Expired)
	}
	_, err := e.s.Get(e.ctx, alice, task.ID)
	e.wantNotFound("Get after expiry", err)
	_, err = e.s.Update(e.ctx, alice, task.ID, tasks.Change{})
	e.wantNotFound("Update after expiry", err)
	_, err = e.s.Acquire(e.ctx, task.ID, "runner", 0)
	e.wantNotFound("Acquire after expiry", err)
	if page, _ := e.s.List(e.ctx, alice, "", 0); len(page.Tasks) != 0 {
		e.t.Fatalf("List shows %d expired tasks", len(page.Tasks))
	}

	// Without a sweep, an expired task may still be readable, but a live
	// one must be: the TTL counts from creation, not from the last
	// update.
	e.clock.Set(Epoch)
	task = e.create(alice, tasks.Spec{TTL: time.Minute})
	for range 10 {
		e.clock.Advance(5 * time.Second)
		e.update(alice, task.ID, tasks.Change{StatusMessage: str(e.clock.Now().String())})
	}
	e.clock.Set(task.ExpiresAt.Add(time.Millisecond))
	e.sweep()
	_, err = e.s.Get(e.ctx, alice, task.ID)
	e.wantNotFound("updates extended the TTL", err)
}

func testTTLRandomised(e *env) {
	// Many TTLs, including sub-millisecond ones, checked at many instants.
	rng := rand.New(rand.NewPCG(1, 2))
	type tracked struct {
		id       string
		deadline time.Time // creation instant + requested TTL
	}
	var live []tracked
	for round := range 400 {
		if round%2 == 0 {
			ttl := time.Duration(rng.Int64N(int64(3*time.Second))) + 1
			now := e.clock.Now()
			task := e.create(alice, tasks.Spec{TTL: ttl})
			if task.TTL < ttl {
				e.t.Fatalf("granted TTL %v < requested %v", task.TTL, ttl)
			}
			live = append(live, tracked{task.ID, now.Add(ttl)})
		}
		e.clock.Advance(time.Duration(rng.Int64N(int64(40 * time.Millisecond))))
		e.sweep()
		now := e.clock.Now()
		kept := live[:0]
		for _, tr := range live {
			_, err := e.s.Get(e.ctx, alice, tr.id)
			if !now.After(tr.deadline) {
				if err != nil {
					e.t.Fatalf("task expired %v early (now %v, deadline %v): %v", tr.deadline.Sub(now), now, tr.deadline, err)
				}
				kept = append(kept, tr)
			}
		}
		live = kept
		if len(live) > 900 {
			e.t.Fatal("too many tasks")
		}
	}
}

func testTTLCaps(e *env) {
	if got := e.create(alice, tasks.Spec{}).TTL; got != time.Minute {
		e.t.Fatalf("default TTL %v, want Options.DefaultTTL 1m", got)
	}
	if got := e.create(alice, tasks.Spec{TTL: 48 * time.Hour}).TTL; got != time.Hour {
		e.t.Fatalf("TTL %v, want clamped to MaxTTL 1h", got)
	}
	task := e.create(alice, tasks.Spec{TTL: -1})
	if task.TTL != time.Hour || task.ExpiresAt.IsZero() {
		e.t.Fatalf("unlimited TTL under a MaxTTL: %v until %v, want 1h", task.TTL, task.ExpiresAt)
	}
}

func testTTLUnlimited(e *env) {
	task := e.create(alice, tasks.Spec{TTL: -1})
	if task.TTL != 0 || !task.ExpiresAt.IsZero() {
		e.t.Fatalf("TTL %v until %v, want unlimited (0, zero time)", task.TTL, task.ExpiresAt)
	}
	e.clock.Advance(10_000 * time.Hour)
	e.sweep()
	e.get(alice, task.ID)
}

func testLeaseExpiry(e *env) {
	task := e.create(alice, tasks.Spec{Holder: "runner-a", LeaseTTL: 10 * time.Second})
	idle := e.create(alice, tasks.Spec{}) // never leased: the sweeper leaves it
	input := e.create(alice, tasks.Spec{Holder: "runner-b", LeaseTTL: 10 * time.Second})
	input = e.update(alice, input.ID, tasks.Change{To: tasks.StatusInputRequired,
		InputRequests: map[string]tasksValue{"k": raw(`{}`)}})
	w, err := e.s.Watch(e.ctx, alice, task.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	<-w
	e.clock.Set(task.LeaseExpiry)
	if st := e.sweep(); st.LeaseLost != 0 {
		e.t.Fatalf("sweep at the lease expiry failed %d tasks", st.LeaseLost)
	}
	e.clock.Advance(time.Millisecond)
	if st := e.sweep(); st.LeaseLost != 2 || st.Expired != 0 {
		e.t.Fatalf("sweep after the lease expiry: %+v, want 2 lease failures", st)
	}
	for _, id := range []string{task.ID, input.ID} {
		got := e.get(alice, id)
		if got.Status != tasks.StatusFailed || got.Error == nil || got.Error.Code != tasks.LeaseLostCode ||
			got.Error.Message != tasks.LeaseLostMessage || got.LeaseHolder != "" || len(got.InputRequests) != 0 {
			e.t.Fatalf("after lease loss: %+v / %+v", got, got.Error)
		}
	}
	if seen := <-w; seen.Status != tasks.StatusFailed {
		e.t.Fatalf("watcher saw %s, want failed", seen.Status)
	}
	if _, open := <-w; open {
		e.t.Fatal("watch channel still open after the terminal snapshot")
	}
	if e.get(alice, idle.ID).Status != tasks.StatusWorking {
		e.t.Fatal("the sweeper failed a task nobody had leased")
	}
	// The dead runner's late writes are refused.
	_, err = e.s.Update(e.ctx, alice, task.ID, tasks.Change{Holder: "runner-a", To: tasks.StatusCompleted, Result: raw(`{}`)})
	e.wantErr("late completion", err, tasks.ErrTerminal)
	if st := e.sweep(); st.LeaseLost != 0 {
		e.t.Fatalf("second sweep: %+v", st)
	}
}

func testLeaseOps(e *env) {
	task := e.create(alice, tasks.Spec{})
	l, err := e.s.Acquire(e.ctx, task.ID, "a", 10*time.Second)
	if err != nil || l.Holder != "a" || l.ID != task.ID || l.Expires.Before(e.clock.Now().Add(10*time.Second)) {
		e.t.Fatalf("Acquire: %+v, %v", l, err)
	}
	got := e.get(alice, task.ID)
	if got.LeaseHolder != "a" || !got.LeaseExpiry.Equal(l.Expires) || got.Version != task.Version {
		e.t.Fatalf("after Acquire: holder %q until %v, version %d (leases must not bump it)", got.LeaseHolder, got.LeaseExpiry, got.Version)
	}
	_, err = e.s.Acquire(e.ctx, task.ID, "b", 0)
	e.wantErr("Acquire of a held lease", err, tasks.ErrLeaseHeld)
	_, err = e.s.Renew(e.ctx, task.ID, "b", 0)
	e.wantErr("Renew by a non-holder", err, tasks.ErrLeaseLost)
	e.wantErr("Release by a non-holder", e.s.Release(e.ctx, task.ID, "b"), tasks.ErrLeaseLost)

	// Renewal keeps the task alive past the first expiry.
	e.clock.Advance(8 * time.Second)
	l2, err := e.s.Renew(e.ctx, task.ID, "a", 10*time.Second)
	if err != nil || !l2.Expires.After(l.Expires) {
		e.t.Fatalf("Renew: %+v, %v", l2, err)
	}
	e.clock.Advance(8 * time.Second) // past the first expiry, before the second
	if st := e.sweep(); st.LeaseLost != 0 {
		e.t.Fatal("a renewed lease was treated as expired")
	}
	// Re-acquiring by the holder renews; 0 uses Options.LeaseTTL.
	l3, err := e.s.Acquire(e.ctx, task.ID, "a", 0)
	if err != nil || l3.Expires.Before(e.clock.Now().Add(tasks.DefaultLeaseTTL)) {
		e.t.Fatalf("re-Acquire: %+v, %v", l3, err)
	}
	// An expired lease is lost for its holder and free for others.
	e.clock.Set(l3.Expires.Add(time.Millisecond))
	_, err = e.s.Renew(e.ctx, task.ID, "a", 0)
	e.wantErr("Renew after expiry", err, tasks.ErrLeaseLost)
	if _, err := e.s.Acquire(e.ctx, task.ID, "b", time.Minute); err != nil {
		e.t.Fatalf("takeover of an expired lease: %v", err)
	}
	// Release frees the lease; the sweeper then leaves the task alone.
	if err := e.s.Release(e.ctx, task.ID, "b"); err != nil {
		e.t.Fatal(err)
	}
	if got := e.get(alice, task.ID); got.LeaseHolder != "" {
		e.t.Fatalf("holder %q after Release", got.LeaseHolder)
	}
	e.clock.Advance(2 * time.Minute)
	if st := e.sweep(); st.LeaseLost != 0 {
		e.t.Fatal("a released task was failed by the sweeper")
	}
	e.wantErr("Release twice", e.s.Release(e.ctx, task.ID, "b"), tasks.ErrLeaseLost)

	// Bad holders and ids.
	_, err = e.s.Acquire(e.ctx, task.ID, "", 0)
	e.wantErr("Acquire with no holder", err, tasks.ErrInvalid)
	_, err = e.s.Acquire(e.ctx, tasks.NewID(""), "a", 0)
	e.wantNotFound("Acquire of an unknown id", err)
	_, err = e.s.Acquire(e.ctx, "junk", "a", 0)
	e.wantNotFound("Acquire of a junk id", err)

	// Terminal tasks have no lease to take; releasing is a no-op.
	e.update(alice, task.ID, tasks.Change{To: tasks.StatusCancelled})
	_, err = e.s.Acquire(e.ctx, task.ID, "a", 0)
	e.wantErr("Acquire of a terminal task", err, tasks.ErrTerminal)
	_, err = e.s.Renew(e.ctx, task.ID, "a", 0)
	e.wantErr("Renew of a terminal task", err, tasks.ErrTerminal)
	if err := e.s.Release(e.ctx, task.ID, "a"); err != nil {
		e.t.Fatalf("Release of a terminal task: %v", err)
	}
}

func testLeaseFence(e *env) {
	task := e.create(alice, tasks.Spec{Holder: "a", LeaseTTL: time.Second})
	e.update(alice, task.ID, tasks.Change{Holder: "a", StatusMessage: str("mine")})
	_, err := e.s.Update(e.ctx, alice, task.ID, tasks.Change{Holder: "b", StatusMessage: str("theirs")})
	e.wantErr("fenced update by a non-holder", err, tasks.ErrLeaseLost)
	e.clock.Advance(time.Second + time.Millisecond)
	_, err = e.s.Update(e.ctx, alice, task.ID, tasks.Change{Holder: "a", StatusMessage: str("too late")})
	e.wantErr("fenced update after expiry", err, tasks.ErrLeaseLost)
	if got := e.get(alice, task.ID); got.StatusMessage != "mine" {
		e.t.Fatalf("message %q", got.StatusMessage)
	}
}
