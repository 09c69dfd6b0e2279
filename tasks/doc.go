// Package tasks stores MCP tasks for both protocol eras: the experimental
// tasks of 2025-11-25 (tasks/get, tasks/result, tasks/list, tasks/cancel)
// and the io.modelcontextprotocol/tasks extension of 2026-07-28
// (tasks/get, tasks/update, tasks/cancel, notifications/tasks).
//
// # Model
//
// A [Task] is era-neutral: the era adapters in the server render it as a
// 2025-11-25 Task (ttl, pollInterval) or a 2026-07-28 DetailedTask (ttlMs,
// pollIntervalMs, inputRequests, result or error). Where the eras differ
// in meaning (a tool result with isError is "failed" in one and
// "completed" in the other; cancel is synchronous in one and cooperative in
// the other), the adapter decides and the store just records.
//
// Every task is bound to an owner, the principal that created it (the token
// subject, or the legacy session when there is no authentication). Every
// call made for a client names the owner, and a task of another owner is
// indistinguishable from an unknown id: both give [ErrNotFound], which the
// server turns into -32602. Ids carry 144 random bits, because in the
// 2026-07-28 era they act as bearer handles.
//
// Statuses follow one graph ([CanTransition]): working and input_required
// move freely between themselves and to completed, failed or cancelled,
// which are final. Every change is atomic and may be made conditional
// ([Change].IfVersion, [Change].From), so concurrent writers (the runner, a
// cancelling client, the sweeper) never lose an update silently: exactly one
// wins and the others get [ErrConflict] or [ErrTerminal].
//
// # Runners and leases
//
// The code that executes a task (its runner) holds a lease on it
// ([Spec].Holder at creation, or [Store.Acquire]) and renews it while it
// works. If the runner dies, its lease lapses and the next [Store.Sweep]
// fails the task with [LeaseLostCode], so no task stays "working" forever.
// Writes fenced with [Change].Holder are refused once the lease is lost.
// The runner learns about cancel requests and delivered input through
// [Store.Watch].
//
// # Stores
//
// [MemoryStore] is the default: one process, bounded, one janitor
// goroutine. Deployments with several replicas need a shared store; all
// stores share their semantics through [Rules] (a store loads a [Record],
// applies one rule and saves it atomically) and prove it by passing the
// contract suite in package storetest.
//
// # Quick start
//
//	store, err := tasks.NewMemoryStore(tasks.Options{})
//	if err != nil { ... }
//	defer store.Close()
//
//	// tools/call decided to run as a task: create it, durable on return.
//	task, err := store.Create(ctx, owner, tasks.Spec{Holder: replicaID})
//
//	// The runner asks for input, then finishes.
//	store.Update(ctx, owner, task.ID, tasks.Change{Holder: replicaID,
//		To: tasks.StatusInputRequired,
//		InputRequests: map[string]jsontext.Value{"confirm": req}})
//	store.DeliverInputs(ctx, owner, task.ID, answers) // tasks/update
//	store.Update(ctx, owner, task.ID, tasks.Change{Holder: replicaID,
//		To: tasks.StatusCompleted, Result: result})
//
//	// tasks/get
//	task, err = store.Get(ctx, owner, id) // errors.Is(err, tasks.ErrNotFound) → -32602
package tasks
