package tasks

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"slices"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// MemoryStore is the default Store: everything in one process, bounded by
// Options. Expired tasks disappear on the first access after their TTL and
// are reclaimed by one janitor goroutine every Options.SweepInterval (none
// when it is negative); Close stops it.
//
// It cannot be shared by replicas: a deployment with more than one needs a
// shared store (see package doc).
type MemoryStore struct {
	rules *Rules
	opts  Options

	mu     sync.Mutex
	tasks  map[string]*entry
	owners map[string][]*entry // each owner's tasks in creation order
	seq    uint64
	closed bool

	stop chan struct{}
	done chan struct{}
	// swept, when set (by tests, before the janitor starts), receives the
	// stats of every background sweep.
	swept func(SweepStats)
}

type entry struct {
	rec      Record
	seq      uint64
	watchers []*watcher
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty store. Only invalid Options are an error.
func NewMemoryStore(opts Options) (*MemoryStore, error) {
	return newMemoryStore(opts, nil)
}

func newMemoryStore(opts Options, swept func(SweepStats)) (*MemoryStore, error) {
	rules, err := NewRules(opts)
	if err != nil {
		return nil, err
	}
	s := &MemoryStore{
		rules:  rules,
		opts:   rules.Options(),
		tasks:  make(map[string]*entry),
		owners: make(map[string][]*entry),
		swept:  swept,
	}
	if s.opts.SweepInterval > 0 {
		s.stop = make(chan struct{})
		s.done = make(chan struct{})
		go s.janitor()
	}
	return s, nil
}

func (s *MemoryStore) janitor() {
	defer close(s.done)
	tick := time.NewTicker(s.opts.SweepInterval)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
			st, err := s.Sweep(context.Background())
			if err == nil && s.swept != nil {
				s.swept(st)
			}
		}
	}
}

// Close stops the janitor and closes every watch channel.
func (s *MemoryStore) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for _, e := range s.tasks {
		e.closeWatchers()
	}
	s.mu.Unlock()
	if s.stop != nil {
		close(s.stop)
		<-s.done
	}
	return nil
}

// Len returns the number of tasks held, expired ones not yet swept
// included.
func (s *MemoryStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tasks)
}

// lookup returns the live entry of owner's task id; it must be called with
// s.mu held. Expired entries are removed on the way.
func (s *MemoryStore) lookup(owner, id string, now time.Time) (*entry, error) {
	if s.closed {
		return nil, ErrClosed
	}
	if err := s.rules.CheckOwner(owner); err != nil {
		return nil, err
	}
	if !s.rules.WellFormedID(id) {
		return nil, ErrNotFound
	}
	e := s.tasks[id]
	if e == nil || e.rec.Owner != owner {
		return nil, ErrNotFound
	}
	if e.rec.Expired(now) {
		s.remove(e)
		return nil, ErrNotFound
	}
	return e, nil
}

// lookupAny is lookup without the owner check, for runner methods.
func (s *MemoryStore) lookupAny(id string, now time.Time) (*entry, error) {
	if s.closed {
		return nil, ErrClosed
	}
	e := s.tasks[id]
	if e == nil || !s.rules.WellFormedID(id) {
		return nil, ErrNotFound
	}
	if e.rec.Expired(now) {
		s.remove(e)
		return nil, ErrNotFound
	}
	return e, nil
}

func (s *MemoryStore) remove(e *entry) {
	delete(s.tasks, e.rec.ID)
	list := s.owners[e.rec.Owner]
	if i, ok := slices.BinarySearchFunc(list, e.seq, func(x *entry, seq uint64) int { return cmpUint(x.seq, seq) }); ok {
		list = slices.Delete(list, i, i+1)
	}
	if len(list) == 0 {
		delete(s.owners, e.rec.Owner)
	} else {
		s.owners[e.rec.Owner] = list
	}
	e.closeWatchers()
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func ctxErr(ctx context.Context) error { return ctx.Err() }

// Create implements Store.
func (s *MemoryStore) Create(ctx context.Context, owner string, spec Spec) (Task, error) {
	if err := ctxErr(ctx); err != nil {
		return Task{}, err
	}
	id := NewID(s.opts.IDPrefix)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Task{}, ErrClosed
	}
	now := s.opts.Now()
	rec, err := s.rules.New(owner, id, spec, now)
	if err != nil {
		return Task{}, err
	}
	if len(s.owners[owner]) >= s.opts.MaxTasksPerOwner {
		// Expired tasks must not count; reclaiming them costs at most
		// MaxTasksPerOwner checks, and only for this owner.
		s.expireOwnerLocked(owner, now)
		if len(s.owners[owner]) >= s.opts.MaxTasksPerOwner {
			return Task{}, &LimitError{What: "tasks per owner", Limit: s.opts.MaxTasksPerOwner}
		}
	}
	// The global bound counts expired tasks until the janitor (or the
	// owner's own next access) reclaims them: a full scan per create would
	// let a flood of creates buy O(MaxTasks) work each.
	if len(s.tasks) >= s.opts.MaxTasks {
		return Task{}, &LimitError{What: "tasks", Limit: s.opts.MaxTasks}
	}
	if s.tasks[id] != nil { // 2^-144; never, but never overwrite either
		return Task{}, ErrConflict
	}
	s.seq++
	e := &entry{rec: rec, seq: s.seq}
	s.tasks[id] = e
	s.owners[owner] = append(s.owners[owner], e)
	return rec.Task.Clone(), nil
}

// Get implements Store.
func (s *MemoryStore) Get(ctx context.Context, owner, id string) (Task, error) {
	if err := ctxErr(ctx); err != nil {
		return Task{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.lookup(owner, id, s.opts.Now())
	if err != nil {
		return Task{}, err
	}
	return e.rec.Task.Clone(), nil
}

// List implements Store. The cursor encodes the creation sequence number
// of the last task returned.
func (s *MemoryStore) List(ctx context.Context, owner, cursor string, limit int) (Page, error) {
	if err := ctxErr(ctx); err != nil {
		return Page{}, err
	}
	if err := s.rules.CheckOwner(owner); err != nil {
		return Page{}, err
	}
	after, err := decodeCursor(cursor)
	if err != nil {
		return Page{}, err
	}
	if limit <= 0 || limit > s.opts.PageSize {
		limit = s.opts.PageSize
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Page{}, ErrClosed
	}
	now := s.opts.Now()
	list := s.owners[owner]
	i, _ := slices.BinarySearchFunc(list, after+1, func(x *entry, seq uint64) int { return cmpUint(x.seq, seq) })
	var p Page
	var last uint64
	var expired []*entry
	for ; i < len(list) && len(p.Tasks) < limit; i++ {
		e := list[i]
		if e.rec.Expired(now) {
			expired = append(expired, e)
			continue
		}
		p.Tasks = append(p.Tasks, e.rec.Task.Clone())
		last = e.seq
	}
	// More may follow only if we stopped on the limit with entries left.
	for ; i < len(list); i++ {
		if !list[i].rec.Expired(now) {
			p.NextCursor = encodeCursor(last)
			break
		}
	}
	for _, e := range expired {
		s.remove(e)
	}
	return p, nil
}

const cursorVersion = 1

func encodeCursor(seq uint64) string {
	var b [9]byte
	b[0] = cursorVersion
	binary.BigEndian.PutUint64(b[1:], seq)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func decodeCursor(c string) (uint64, error) {
	if c == "" {
		return 0, nil
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(c)
	if err != nil || len(b) != 9 || b[0] != cursorVersion {
		return 0, ErrInvalidCursor
	}
	return binary.BigEndian.Uint64(b[1:]), nil
}

// Update implements Store.
func (s *MemoryStore) Update(ctx context.Context, owner, id string, ch Change) (Task, error) {
	if err := ctxErr(ctx); err != nil {
		return Task{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	e, err := s.lookup(owner, id, now)
	if err != nil {
		return Task{}, err
	}
	before := e.rec.Version
	if err := s.rules.Change(&e.rec, ch, now); err != nil {
		return Task{}, err
	}
	if e.rec.Version != before {
		e.publish()
	}
	return e.rec.Task.Clone(), nil
}

// DeliverInputs implements Store.
func (s *MemoryStore) DeliverInputs(ctx context.Context, owner, id string, responses map[string]jsontext.Value) (Delivery, error) {
	if err := ctxErr(ctx); err != nil {
		return Delivery{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	e, err := s.lookup(owner, id, now)
	if err != nil {
		return Delivery{}, err
	}
	accepted, err := s.rules.Deliver(&e.rec, responses, now)
	if err != nil {
		return Delivery{}, err
	}
	if len(accepted) > 0 {
		e.publish()
	}
	return Delivery{Accepted: accepted, Task: e.rec.Task.Clone()}, nil
}

// RequestCancel implements Store.
func (s *MemoryStore) RequestCancel(ctx context.Context, owner, id string) (Task, error) {
	if err := ctxErr(ctx); err != nil {
		return Task{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	e, err := s.lookup(owner, id, now)
	if err != nil {
		return Task{}, err
	}
	if s.rules.Cancel(&e.rec, now) {
		e.publish()
	}
	return e.rec.Task.Clone(), nil
}

// Acquire implements Store.
func (s *MemoryStore) Acquire(ctx context.Context, id, holder string, ttl time.Duration) (Lease, error) {
	return s.lease(ctx, id, func(rec *Record, now time.Time) (Lease, error) {
		return s.rules.Acquire(rec, holder, ttl, now)
	})
}

// Renew implements Store.
func (s *MemoryStore) Renew(ctx context.Context, id, holder string, ttl time.Duration) (Lease, error) {
	return s.lease(ctx, id, func(rec *Record, now time.Time) (Lease, error) {
		return s.rules.Renew(rec, holder, ttl, now)
	})
}

// Release implements Store.
func (s *MemoryStore) Release(ctx context.Context, id, holder string) error {
	_, err := s.lease(ctx, id, func(rec *Record, _ time.Time) (Lease, error) {
		return Lease{}, s.rules.Release(rec, holder)
	})
	return err
}

func (s *MemoryStore) lease(ctx context.Context, id string, f func(*Record, time.Time) (Lease, error)) (Lease, error) {
	if err := ctxErr(ctx); err != nil {
		return Lease{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	e, err := s.lookupAny(id, now)
	if err != nil {
		return Lease{}, err
	}
	return f(&e.rec, now)
}

// Sweep implements Store.
func (s *MemoryStore) Sweep(ctx context.Context) (SweepStats, error) {
	if err := ctxErr(ctx); err != nil {
		return SweepStats{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return SweepStats{}, ErrClosed
	}
	return s.sweepLocked(s.opts.Now()), nil
}

func (s *MemoryStore) expireOwnerLocked(owner string, now time.Time) {
	var dead []*entry
	for _, e := range s.owners[owner] {
		if e.rec.Expired(now) {
			dead = append(dead, e)
		}
	}
	for _, e := range dead {
		s.remove(e)
	}
}

func (s *MemoryStore) sweepLocked(now time.Time) SweepStats {
	var st SweepStats
	var dead []*entry
	for _, e := range s.tasks {
		switch s.rules.Sweep(&e.rec, now) {
		case SweepDelete:
			dead = append(dead, e)
		case SweepFailed:
			st.LeaseLost++
			e.publish()
		}
	}
	for _, e := range dead {
		s.remove(e)
	}
	st.Expired = len(dead)
	return st
}
