package tasks

import (
	"context"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// Store keeps tasks. Every implementation must pass the contract suite in
// package storetest, and must be safe for concurrent use.
//
// Methods called on behalf of a client take the owner and treat a task of
// another owner exactly like an unknown one (ErrNotFound), so a client can
// never learn that someone else's id exists. Lease and sweep methods are
// for the server's own runners and take no owner.
//
// Every method that changes a task is atomic: it applies entirely or not at
// all, and concurrent changes are serialised (a Redis store runs each one as
// a single Lua script). Every change visible to clients bumps Version and is
// published to watchers.
type Store interface {
	// Create stores a new working task owned by owner and returns it. The
	// task is durable and readable by Get (from any replica) before Create
	// returns.
	Create(ctx context.Context, owner string, spec Spec) (Task, error)

	// Get returns the task. Unknown, foreign and expired ids give
	// ErrNotFound.
	Get(ctx context.Context, owner, id string) (Task, error)

	// List returns one page of owner's tasks, oldest first. cursor is ""
	// for the first page, else a NextCursor from an earlier page; limit 0
	// uses Options.PageSize and larger values are clamped to it. Tasks
	// created while paging appear on a later page; none is listed twice.
	List(ctx context.Context, owner, cursor string, limit int) (Page, error)

	// Update applies ch atomically (compare-and-set when ch.IfVersion or
	// ch.From is set) and returns the task after it.
	Update(ctx context.Context, owner, id string, ch Change) (Task, error)

	// DeliverInputs answers outstanding input requests. Responses to
	// outstanding keys are moved to InputResponses before it returns, so
	// a Get right after sees them; every other key is ignored. When no
	// request is left outstanding, an input_required task moves back to
	// working. Delivering to a terminal task accepts nothing and is not an
	// error.
	DeliverInputs(ctx context.Context, owner, id string, responses map[string]jsontext.Value) (Delivery, error)

	// RequestCancel records that cancellation was asked for
	// (CancelRequested) and returns the task. It is idempotent; on a
	// terminal task it changes nothing and is not an error. The runner
	// sees the flag through Watch or Get and settles the task itself. (A
	// legacy-era cancel, which must be cancelled before the reply, is
	// Update with To: StatusCancelled instead.)
	RequestCancel(ctx context.Context, owner, id string) (Task, error)

	// Watch returns a channel that receives the task's current snapshot
	// and then a snapshot after each change, in Version order. It is
	// closed after the terminal snapshot, when the task expires or is
	// deleted, when ctx ends, or when the store closes. A watcher that
	// falls more than Options.WatchBuffer snapshots behind loses the
	// oldest ones, never the newest, so it always sees the final state.
	// Watching uses no goroutine per watcher.
	Watch(ctx context.Context, owner, id string) (<-chan Task, error)

	// Acquire gives holder the lease on a live task for ttl (0 =
	// Options.LeaseTTL). It fails with ErrLeaseHeld while another holder's
	// lease is unexpired; the same holder re-acquiring renews.
	Acquire(ctx context.Context, id, holder string, ttl time.Duration) (Lease, error)
	// Renew extends holder's unexpired lease by ttl from now (0 =
	// Options.LeaseTTL), or fails with ErrLeaseLost.
	Renew(ctx context.Context, id, holder string, ttl time.Duration) (Lease, error)
	// Release gives the lease up; ErrLeaseLost if holder did not hold it.
	Release(ctx context.Context, id, holder string) error

	// Sweep deletes tasks whose TTL ran out and fails live tasks whose
	// lease lapsed (with LeaseLostCode and LeaseLostMessage), so that no
	// task stays working after its runner died. Stores run it on their own
	// every Options.SweepInterval; it is exported for tests and for
	// deployments that schedule it themselves.
	Sweep(ctx context.Context) (SweepStats, error)

	// Close stops background work and closes every watch channel. Later
	// calls fail with ErrClosed.
	Close() error
}

// Default limits and settings; each applies when the Options field is zero.
const (
	// DefaultMaxTasks bounds the tasks a store keeps at once, terminal
	// ones included until they expire.
	DefaultMaxTasks = 10_000
	// DefaultMaxTasksPerOwner bounds the tasks of a single owner.
	DefaultMaxTasksPerOwner = 1_000
	// DefaultMaxResultBytes bounds a task's Result, or its Error's
	// message plus data.
	DefaultMaxResultBytes = 4 << 20
	// DefaultMaxInputBytes bounds the bytes of one task's outstanding
	// input requests plus undelivered responses.
	DefaultMaxInputBytes = 1 << 20
	// DefaultMaxPendingInputs bounds the outstanding input requests of one
	// task at a time.
	DefaultMaxPendingInputs = 32
	// DefaultMaxInputKeys bounds the input-request keys a task may use
	// over its whole life (keys are never reused, so the store remembers
	// them).
	DefaultMaxInputKeys = 1_024
	// DefaultMaxStatusMessageBytes bounds a status message.
	DefaultMaxStatusMessageBytes = 4_096
	// DefaultTTL is the lifetime of a task whose Spec asks for none.
	DefaultTTL = time.Hour
	// DefaultMaxTTL caps every lifetime, including "unlimited".
	DefaultMaxTTL = 24 * time.Hour
	// DefaultPollInterval is the suggested poll interval.
	DefaultPollInterval = time.Second
	// DefaultLeaseTTL is the lifetime of a lease acquired with ttl 0.
	DefaultLeaseTTL = 30 * time.Second
	// DefaultSweepInterval is how often a store sweeps on its own.
	DefaultSweepInterval = time.Second
	// DefaultPageSize is the largest page List returns.
	DefaultPageSize = 100
	// DefaultMaxWatchersPerTask bounds the open Watch channels of one
	// task.
	DefaultMaxWatchersPerTask = 64
	// DefaultWatchBuffer is how many snapshots a watcher may fall behind
	// before the oldest are dropped.
	DefaultWatchBuffer = 16
)

// Fixed bounds on identifiers.
const (
	// MaxOwnerBytes bounds an owner string.
	MaxOwnerBytes = 1_024
	// MaxHolderBytes bounds a lease holder id.
	MaxHolderBytes = 256
	// MaxInputKeyBytes bounds an input-request key.
	MaxInputKeyBytes = 256
	// MaxIDPrefixBytes bounds Options.IDPrefix.
	MaxIDPrefixBytes = 32
	// IDRandomBytes is the entropy of a task id: 144 bits, 24 base64url
	// characters.
	IDRandomBytes = 18
)

// Options configure a store. The zero value works: every zero field takes
// its Default*. The same Options apply to every Store implementation.
type Options struct {
	MaxTasks              int
	MaxTasksPerOwner      int
	MaxResultBytes        int
	MaxInputBytes         int
	MaxPendingInputs      int
	MaxInputKeys          int
	MaxStatusMessageBytes int

	// DefaultTTL is used when Spec.TTL is 0.
	DefaultTTL time.Duration
	// MaxTTL caps every lifetime; negative means no cap, so a Spec may ask
	// for an unlimited lifetime (and such tasks live until deleted).
	MaxTTL       time.Duration
	PollInterval time.Duration
	LeaseTTL     time.Duration
	// SweepInterval is how often the store sweeps on its own; negative
	// disables the background sweep (then call Sweep yourself).
	SweepInterval time.Duration
	PageSize      int
	WatchBuffer   int
	// MaxWatchersPerTask bounds the open Watch channels of one task.
	MaxWatchersPerTask int

	// IDPrefix is put before every task id, e.g. a replica or shard name
	// for routing. At most MaxIDPrefixBytes of [A-Za-z0-9_-].
	IDPrefix string

	// Now is the clock; nil means time.Now. Tests inject a fake one.
	Now func() time.Time
}

// resolved returns o with every zero field replaced by its default.
func (o Options) resolved() (Options, error) {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.MaxTasks, DefaultMaxTasks)
	def(&o.MaxTasksPerOwner, DefaultMaxTasksPerOwner)
	def(&o.MaxResultBytes, DefaultMaxResultBytes)
	def(&o.MaxInputBytes, DefaultMaxInputBytes)
	def(&o.MaxPendingInputs, DefaultMaxPendingInputs)
	def(&o.MaxInputKeys, DefaultMaxInputKeys)
	def(&o.MaxStatusMessageBytes, DefaultMaxStatusMessageBytes)
	def(&o.PageSize, DefaultPageSize)
	def(&o.WatchBuffer, DefaultWatchBuffer)
	def(&o.MaxWatchersPerTask, DefaultMaxWatchersPerTask)
	dur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	dur(&o.DefaultTTL, DefaultTTL)
	dur(&o.MaxTTL, DefaultMaxTTL)
	dur(&o.PollInterval, DefaultPollInterval)
	dur(&o.LeaseTTL, DefaultLeaseTTL)
	dur(&o.SweepInterval, DefaultSweepInterval)
	switch {
	case o.DefaultTTL < 0:
		return o, invalid("negative DefaultTTL")
	case o.PollInterval < 0:
		return o, invalid("negative PollInterval")
	case o.LeaseTTL < 0:
		return o, invalid("negative LeaseTTL")
	case o.MaxTTL > 0 && o.DefaultTTL > o.MaxTTL:
		o.DefaultTTL = o.MaxTTL
	}
	if err := checkIDPrefix(o.IDPrefix); err != nil {
		return o, err
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o, nil
}

// ChooseTTL returns the lifetime a store grants for a requested TTL (see
// Spec.TTL) under resolved options (Rules.Options): 0 in the result means
// unlimited.
func (o Options) ChooseTTL(requested time.Duration) time.Duration {
	ttl := requested
	if ttl == 0 {
		ttl = o.DefaultTTL
	}
	if ttl < 0 {
		ttl = 0 // unlimited
	}
	if o.MaxTTL > 0 && (ttl == 0 || ttl > o.MaxTTL) {
		ttl = o.MaxTTL
	}
	// The wire carries whole milliseconds; round up so that the reported
	// TTL is never shorter than the granted one.
	if r := ttl % time.Millisecond; r != 0 {
		ttl += time.Millisecond - r
	}
	return ttl
}
