package redis

import (
	"errors"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/tasks"
	"github.com/gopmcp/pmcp/tasks/storetest"
	goredis "github.com/redis/go-redis/v9"
)

type jsontextValue = jsontext.Value

func newTaskStore(t *testing.T, rdb goredis.UniversalClient, prefix string, opts tasks.Options) *TaskStore {
	t.Helper()
	s, err := NewTaskStore(t.Context(), rdb, TaskStoreOptions{Tasks: opts, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Two replicas, each with its own client and store: a task created on A is
// watched, answered and cancelled through B; when A dies holding the
// lease, B's sweep fails the task instead of leaving it working.
func TestTaskStoreAcrossReplicas(t *testing.T) {
	clock := storetest.NewClock(storetest.Epoch)
	opts := tasks.Options{Now: clock.Now, SweepInterval: -1, LeaseTTL: 30 * time.Second}
	prefix := uniquePrefix("tasks")
	a := newTaskStore(t, needRedis(t), prefix, opts)
	b := newTaskStore(t, needRedis(t), prefix, opts)
	ctx := t.Context()
	const owner = "sub:alice"

	task, err := a.Create(ctx, owner, tasks.Spec{Holder: "replica-a"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := b.Watch(ctx, owner, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	runner, err := a.Watch(ctx, owner, task.ID) // the runner's own watch on A
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Update(ctx, owner, task.ID, tasks.Change{Holder: "replica-a", To: tasks.StatusInputRequired,
		InputRequests: map[string]jsontextValue{"q": jsontextValue(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	if d, err := b.DeliverInputs(ctx, owner, task.ID, map[string]jsontextValue{"q": jsontextValue(`1`)}); err != nil || len(d.Accepted) != 1 {
		t.Fatalf("deliver through B: %+v %v", d, err)
	}
	if got, err := a.Get(ctx, owner, task.ID); err != nil || got.Status != tasks.StatusWorking || string(got.InputResponses["q"]) != "1" {
		t.Fatalf("A reads %+v, %v", got, err)
	}
	if _, err := b.RequestCancel(ctx, owner, task.ID); err != nil {
		t.Fatal(err)
	}
	// The runner on A saw the answer and the cancel request made on B.
	var last tasks.Task
	for s := range runner {
		last = s
		if s.CancelRequested {
			break
		}
	}
	if !last.CancelRequested || string(last.InputResponses["q"]) != "1" || last.Version != 4 {
		t.Fatalf("the runner on A ended at %+v", last)
	}
	// A dies with the lease: B's sweep after the lease lapsed fails it.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	clock.Advance(30*time.Second + time.Millisecond)
	if st, err := b.Sweep(ctx); err != nil || st.LeaseLost != 1 {
		t.Fatalf("sweep: %+v %v", st, err)
	}
	var seen []string
	for s := range w {
		seen = append(seen, string(s.Status))
	}
	if want := "working input_required working working failed"; joinStr(seen) != want {
		t.Fatalf("B's watcher saw %q, want %q", joinStr(seen), want)
	}
	got, err := b.Get(ctx, owner, task.ID)
	if err != nil || got.Status != tasks.StatusFailed || got.Error.Code != tasks.LeaseLostCode {
		t.Fatalf("after the lease lapsed: %+v, %v", got, err)
	}
}

func joinStr(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}

// Redis restarts under a running TaskStore, EventStore and Bus (a child
// redis-server of this test, killed with SIGKILL and started again on the
// same port). During the outage every call returns an error, none panics
// or hangs; afterwards the same values work again and the watch and bus
// subscriptions are restored by themselves.
func TestRestartRedis(t *testing.T) {
	if redisAddr == "" {
		t.Skip("no redis-server: " + noRedisWhy)
	}
	srv, err := startRedis(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.stop() })
	rdb := goredis.NewUniversalClient(&goredis.UniversalOptions{Addrs: []string{srv.addr}, MaxRetries: 1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := t.Context()
	store := newTaskStore(t, rdb, "restart", tasks.Options{})
	events := NewEventStore(rdb, EventStoreOptions{})
	bus, err := NewBus(ctx, rdb, BusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bus.Close() })
	heard := make(chan pmcp.ServerEvent, 16)
	if _, err := bus.Subscribe(func(ev pmcp.ServerEvent) { heard <- ev }); err != nil {
		t.Fatal(err)
	}
	const owner = "sub:alice"
	before, err := store.Create(ctx, owner, tasks.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	oldWatch, err := store.Watch(ctx, owner, before.ID)
	if err != nil {
		t.Fatal(err)
	}
	<-oldWatch // the initial snapshot

	srv.stop()
	start := time.Now()
	calls := map[string]error{}
	calls["Create"] = func() error { _, err := store.Create(ctx, owner, tasks.Spec{}); return err }()
	calls["Get"] = func() error { _, err := store.Get(ctx, owner, before.ID); return err }()
	calls["List"] = func() error { _, err := store.List(ctx, owner, "", 0); return err }()
	calls["Update"] = func() error {
		_, err := store.Update(ctx, owner, before.ID, tasks.Change{To: tasks.StatusCompleted, Result: jsontextValue(`{}`)})
		return err
	}()
	calls["Watch"] = func() error { _, err := store.Watch(ctx, owner, before.ID); return err }()
	calls["Sweep"] = func() error { _, err := store.Sweep(ctx); return err }()
	calls["Append"] = events.Append(ctx, "s", "1", 1, []byte("x"))
	calls["After"] = func() error { _, err := events.After(ctx, "s", "1", 0); return err }()
	calls["Publish"] = bus.Publish(ctx, pmcp.ServerEvent{Kind: pmcp.ServerEventToolsListChanged})
	for name, err := range calls {
		if err == nil || errors.Is(err, tasks.ErrNotFound) {
			t.Errorf("%s during the outage: %v, want a connection error", name, err)
		} else {
			t.Logf("%s during the outage: %v", name, err)
		}
	}
	t.Logf("%d calls failed in %v while Redis was down", len(calls), time.Since(start))

	// Same port, empty memory (no persistence): the old task is gone.
	srv2, err := startRedis(srv.port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv2.stop() })
	// The watch connection comes back by itself, re-reads its tasks and
	// closes the watcher of the vanished one.
	select {
	case _, open := <-oldWatch:
		if open {
			t.Fatal("the vanished task's watcher got a snapshot")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the watcher of a vanished task was not closed after Redis came back")
	}
	// The bus resubscribed too and told its subscribers to re-list.
	if ev := recv(t, heard); ev.Kind != pmcp.ServerEventToolsListChanged {
		t.Fatalf("after the reconnect the bus delivered %+v", ev)
	}

	// Everything works again without a new store.
	var task tasks.Task
	for {
		// The pool may hand out one connection that died with the old
		// server; it fails once and is replaced.
		if task, err = store.Create(ctx, owner, tasks.Spec{}); err == nil {
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatal(err)
		}
	}
	w, err := store.Watch(ctx, owner, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Update(ctx, owner, task.ID, tasks.Change{To: tasks.StatusCompleted, Result: jsontextValue(`{"ok":true}`)}); err != nil {
		t.Fatal(err)
	}
	n := 0
	for s := range w {
		n++
		if s.Status == tasks.StatusCompleted && n != 2 {
			t.Fatalf("watch after the restart: completed as snapshot %d", n)
		}
	}
	if n != 2 {
		t.Fatalf("watch after the restart saw %d snapshots", n)
	}
	if err := events.Append(ctx, "s", "1", 1, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if evs, err := events.After(ctx, "s", "1", 0); err != nil || len(evs) != 1 {
		t.Fatalf("After: %+v %v", evs, err)
	}
	for len(heard) > 0 {
		<-heard
	}
	if err := bus.Publish(ctx, pmcp.ServerEvent{Kind: pmcp.ServerEventPromptsListChanged}); err != nil {
		t.Fatal(err)
	}
	for ev := recv(t, heard); ev.Kind != pmcp.ServerEventPromptsListChanged; ev = recv(t, heard) {
	}
}
