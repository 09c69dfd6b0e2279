// Package storetest is the contract every tasks.Store must pass.
//
// A store's own test runs the whole suite with one line:
//
//	func TestContract(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, opts tasks.Options) tasks.Store {
//			s, err := mystore.New(..., opts)
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		})
//	}
//
// The factory must honour every field of opts, in particular opts.Now (the
// suite drives time with a fake Clock and never sleeps) and a negative
// opts.SweepInterval (the suite calls Sweep itself). Run closes each store
// when its subtest ends. The suite is loopback-only and needs nothing but
// the store.
package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/tasks"
)

// Factory returns a new, empty store configured with opts.
type Factory func(t *testing.T, opts tasks.Options) tasks.Store

// Clock is a fake clock that moves only when told to.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// Epoch is where every Clock of the suite starts: a time with a
// sub-millisecond part, so that rounding mistakes show.
var Epoch = time.Date(2026, 7, 28, 12, 0, 0, 123_456_789, time.UTC)

// NewClock returns a clock that reads start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now reads the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// env is what every contract test gets: a store, its clock and a context.
type env struct {
	t     *testing.T
	s     tasks.Store
	clock *Clock
	ctx   context.Context
}

// Run runs the contract suite against stores made by newStore.
func Run(t *testing.T, newStore Factory) {
	tests := []struct {
		name string
		run  func(*env)
		opts func(*tasks.Options)
	}{
		{"CreateIsDurable", testCreateIsDurable, nil},
		{"CreateDefaultsAndSpec", testCreateDefaultsAndSpec, nil},
		{"CreateRejectsBadSpec", testCreateRejectsBadSpec, nil},
		{"IDsAreRandomAndPrefixed", testIDs, func(o *tasks.Options) { o.IDPrefix = "r7-" }},
		{"TransitionsFollowTheGraph", testTransitions, nil},
		{"ChangeValidation", testChangeValidation, nil},
		{"CompareAndSet", testCompareAndSet, nil},
		{"ConcurrentCASOneWinner", testConcurrentCAS, nil},
		{"ConcurrentTerminalOneWinner", testConcurrentTerminal, nil},
		{"OwnerIsolation", testOwnerIsolation, nil},
		{"ResultAndErrorSetOnce", testResultOnce, nil},
		{"InputRequestsAndPartialDelivery", testInputs, nil},
		{"InputKeysNeverReused", testInputKeysUnique, nil},
		{"CancelRequest", testCancelRequest, nil},
		{"LegacyCancel", testLegacyCancel, nil},
		{"TTLNeverEarly", testTTLNeverEarly, nil},
		{"TTLRandomisedNeverEarly", testTTLRandomised, nil},
		{"TTLDefaultsAndCaps", testTTLCaps, func(o *tasks.Options) { o.DefaultTTL = time.Minute; o.MaxTTL = time.Hour }},
		{"TTLUnlimited", testTTLUnlimited, func(o *tasks.Options) { o.MaxTTL = -1 }},
		{"LeaseExpiryFailsTask", testLeaseExpiry, nil},
		{"LeaseAcquireRenewRelease", testLeaseOps, nil},
		{"LeaseFencesUpdates", testLeaseFence, nil},
		{"ListPagination", testList, func(o *tasks.Options) { o.PageSize = 7 }},
		{"ListStableWhileChanging", testListChanging, func(o *tasks.Options) { o.PageSize = 4 }},
		{"WatchDeliversEveryChangeInOrder", testWatchOrder, nil},
		{"WatchSlowReaderKeepsNewest", testWatchSlow, func(o *tasks.Options) { o.WatchBuffer = 4 }},
		{"WatchEnds", testWatchEnds, nil},
		{"BoundsTasks", testBoundsTasks, func(o *tasks.Options) { o.MaxTasks = 5; o.MaxTasksPerOwner = 3 }},
		{"BoundsSizes", testBoundsSizes, func(o *tasks.Options) {
			o.MaxResultBytes = 64
			o.MaxStatusMessageBytes = 16
			o.MaxPendingInputs = 2
			o.MaxInputBytes = 256
			o.MaxInputKeys = 3
			o.MaxWatchersPerTask = 2
		}},
		{"ContextAndClose", testContextAndClose, nil},
		{"ThousandConcurrentTasks", testThousand, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := NewClock(Epoch)
			opts := tasks.Options{Now: clock.Now, SweepInterval: -1}
			if tc.opts != nil {
				tc.opts(&opts)
			}
			s := newStore(t, opts)
			t.Cleanup(func() { _ = s.Close() })
			tc.run(&env{t: t, s: s, clock: clock, ctx: t.Context()})
		})
	}
}

// Owners used throughout the suite.
const (
	alice = "sub:alice"
	bob   = "sub:bob"
)

func (e *env) create(owner string, spec tasks.Spec) tasks.Task {
	e.t.Helper()
	task, err := e.s.Create(e.ctx, owner, spec)
	if err != nil {
		e.t.Fatalf("Create(%q): %v", owner, err)
	}
	return task
}

func (e *env) get(owner, id string) tasks.Task {
	e.t.Helper()
	task, err := e.s.Get(e.ctx, owner, id)
	if err != nil {
		e.t.Fatalf("Get(%q, %q): %v", owner, id, err)
	}
	return task
}

func (e *env) update(owner, id string, ch tasks.Change) tasks.Task {
	e.t.Helper()
	task, err := e.s.Update(e.ctx, owner, id, ch)
	if err != nil {
		e.t.Fatalf("Update(%q, %+v): %v", id, ch, err)
	}
	return task
}

func (e *env) sweep() tasks.SweepStats {
	e.t.Helper()
	st, err := e.s.Sweep(e.ctx)
	if err != nil {
		e.t.Fatalf("Sweep: %v", err)
	}
	return st
}

// wantErr fails unless errors.Is(err, target).
func (e *env) wantErr(what string, err, target error) {
	e.t.Helper()
	if !errors.Is(err, target) {
		e.t.Fatalf("%s: error %v, want %v", what, err, target)
	}
}

// wantLimit fails unless err is a *tasks.LimitError matching ErrLimit.
func (e *env) wantLimit(what string, err error) {
	e.t.Helper()
	var le *tasks.LimitError
	if !errors.Is(err, tasks.ErrLimit) || !errors.As(err, &le) {
		e.t.Fatalf("%s: error %v, want a *tasks.LimitError", what, err)
	}
}

func (e *env) wantNotFound(what string, err error) {
	e.t.Helper()
	e.wantErr(what, err, tasks.ErrNotFound)
}

func str(s string) *string { return &s }

func raw(s string) jsontext.Value { return jsontext.Value(s) }

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// complete is the Change of a runner finishing with result.
func complete(result string) tasks.Change {
	return tasks.Change{To: tasks.StatusCompleted, Result: raw(result)}
}

func fail(code int64, msg string) tasks.Change {
	return tasks.Change{To: tasks.StatusFailed, Error: &tasks.Error{Code: code, Message: msg}}
}

// tasksValue is the raw JSON type of input requests and responses.
type tasksValue = jsontext.Value
