package redis

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/tasks"
	goredis "github.com/redis/go-redis/v9"
)

// Defaults of TaskStoreOptions.
const (
	// DefaultTaskPrefix is the key prefix of a TaskStore. Every key of the
	// store is "{prefix}:..." (the braces are a Redis Cluster hash tag), so
	// one store lives in one cluster slot and all its scripts are
	// single-slot. Spread load over a cluster by giving tenants stores of
	// their own prefixes.
	DefaultTaskPrefix = "pmcp:tasks"
	// DefaultExpiryGrace is how long after a task's ExpiresAt Redis itself
	// deletes the record (a PEXPIRE set at creation). Expiry is decided by
	// the store's clock (Sweep and every read), never by Redis, so a task
	// is never gone early; the grace only bounds how long a record
	// outlives its TTL when no replica sweeps at all.
	DefaultExpiryGrace = time.Hour
	// DefaultMaxCASRetries bounds how often one change is retried after
	// losing a compare-and-swap race before it fails with tasks.ErrConflict.
	DefaultMaxCASRetries = 64
)

// TaskStoreOptions configure a TaskStore. The zero value works.
type TaskStoreOptions struct {
	// Tasks are the store-neutral options (bounds, TTLs, clock, sweep
	// interval); see tasks.Options.
	Tasks tasks.Options
	// Prefix is the key prefix; "" means DefaultTaskPrefix. Replicas that
	// share tasks must use the same prefix.
	Prefix string
	// ExpiryGrace: zero means DefaultExpiryGrace; negative means Redis
	// never expires records on its own (only Sweep deletes them).
	ExpiryGrace time.Duration
	// MaxCASRetries: zero means DefaultMaxCASRetries.
	MaxCASRetries int
}

// TaskStore is a tasks.Store on Redis: any replica can read, change, watch
// and sweep any task. Each task is one hash; every write is a Lua
// compare-and-swap on the record's Rev, so the semantics are exactly those
// of tasks.Rules, shared with tasks.MemoryStore. Watchers of all tasks share
// one Pub/Sub connection and one goroutine per store: every change is
// published, with the whole record, on the store's one channel, which every
// replica receives and hands to its own watchers of that task (so
// MaxWatchersPerTask counts per replica). A write returns once its change
// reached this replica's watchers, as in memory.
//
// Durability is Redis's: run it with replicas and AOF when a created task
// must survive a Redis failover (the Create path issues no WAIT).
//
// Redis being unavailable makes calls fail with the client's error; the
// store recovers by itself when Redis comes back (watchers re-read their
// tasks then, so none misses the final state).
type TaskStore struct {
	rdb     goredis.UniversalClient
	rules   *tasks.Rules
	opts    tasks.Options
	grace   time.Duration
	retries int

	// Keys (see keys()).
	tag, seqKey, expKey, leaseKey, channel string

	w *watchHub

	mu      sync.Mutex
	closed  bool
	stop    chan struct{}
	janitor sync.WaitGroup
}

var _ tasks.Store = (*TaskStore)(nil)

// NewTaskStore connects a TaskStore to rdb (which the caller keeps
// owning and closes after the store). It subscribes to the store's change
// channel before returning, so it fails when Redis is unreachable.
func NewTaskStore(ctx context.Context, rdb goredis.UniversalClient, opts TaskStoreOptions) (*TaskStore, error) {
	rules, err := tasks.NewRules(opts.Tasks)
	if err != nil {
		return nil, err
	}
	prefix := opts.Prefix
	if prefix == "" {
		prefix = DefaultTaskPrefix
	}
	s := &TaskStore{rdb: rdb, rules: rules, opts: rules.Options(), grace: opts.ExpiryGrace, retries: opts.MaxCASRetries, stop: make(chan struct{})}
	if s.grace == 0 {
		s.grace = DefaultExpiryGrace
	}
	if s.retries <= 0 {
		s.retries = DefaultMaxCASRetries
	}
	s.tag = "{" + prefix + "}"
	s.seqKey, s.expKey, s.leaseKey, s.channel = s.tag+":seq", s.tag+":exp", s.tag+":lease", s.tag+":changes"
	if s.w, err = newWatchHub(ctx, s); err != nil {
		return nil, err
	}
	if s.opts.SweepInterval > 0 {
		s.janitor.Go(s.sweepLoop)
	}
	return s, nil
}

func (s *TaskStore) taskKey(id string) string     { return s.tag + ":t:" + id }
func (s *TaskStore) ownerKey(owner string) string { return s.tag + ":o:" + owner }

func (s *TaskStore) sweepLoop() {
	t := time.NewTicker(s.opts.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), s.opts.SweepInterval*4)
			_, _ = s.Sweep(ctx) // errors are retried at the next tick
			cancel()
		}
	}
}

func (s *TaskStore) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return tasks.ErrClosed
	}
	return nil
}

// Close stops the background sweep and the watch connection and closes
// every watch channel. It does not close the Redis client.
func (s *TaskStore) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.stop)
	s.mu.Unlock()
	s.janitor.Wait()
	return s.w.close()
}

// load reads a task's record; ok is false when there is none.
func (s *TaskStore) load(ctx context.Context, id string) (rec tasks.Record, ok bool, err error) {
	h, err := s.rdb.HGetAll(ctx, s.taskKey(id)).Result()
	if err != nil || len(h) == 0 {
		return tasks.Record{}, false, err
	}
	rec, err = decodeRecord(h)
	return rec, err == nil, err
}

func scoreMs(t time.Time) string {
	if t.IsZero() {
		return "+inf"
	}
	return strconv.FormatInt(t.UnixMilli(), 10)
}

func leaseScore(rec *tasks.Record) string {
	if rec.LeaseHolder == "" || rec.Status.Terminal() {
		return ""
	}
	return scoreMs(rec.LeaseExpiry)
}

// payload is what watchers receive: the id, a newline and the encoded
// record; the id alone means the task is gone.
func payload(id string, kv []string) (string, error) {
	b, err := marshalField(pairsToMap(kv))
	return id + "\n" + b, err
}

// put saves rec if the stored rev is still oldRev, publishing it when
// publish is set.
func (s *TaskStore) put(ctx context.Context, rec *tasks.Record, oldRev uint64, publish bool) (bool, error) {
	kv, err := encodeRecord(*rec)
	if err != nil {
		return false, err
	}
	msg := ""
	if publish {
		if msg, err = payload(rec.ID, kv); err != nil {
			return false, err
		}
	}
	args := make([]any, 0, 5+len(kv))
	args = append(args, strconv.FormatUint(oldRev, 10), rec.ID, leaseScore(rec), s.channel, msg)
	for _, v := range kv {
		args = append(args, v)
	}
	n, err := putScript.Run(ctx, s.rdb, []string{s.taskKey(rec.ID), s.leaseKey}, args...).Int()
	return n == 1, err
}

// del deletes rec if the stored rev is still rec.Rev.
func (s *TaskStore) del(ctx context.Context, rec *tasks.Record) (bool, error) {
	n, err := deleteScript.Run(ctx, s.rdb,
		[]string{s.taskKey(rec.ID), s.ownerKey(rec.Owner), s.expKey, s.leaseKey},
		strconv.FormatUint(rec.Rev, 10), rec.ID, s.channel).Int()
	return n == 1, err
}

// mutate loads id, lets f change the record and saves it with
// compare-and-swap, retrying on a lost race. owner "" skips the owner
// check (lease calls).
func (s *TaskStore) mutate(ctx context.Context, owner, id string, f func(*tasks.Record, time.Time) error) (tasks.Record, error) {
	if err := s.check(ctx); err != nil {
		return tasks.Record{}, err
	}
	if owner != "" {
		if err := s.rules.CheckOwner(owner); err != nil {
			return tasks.Record{}, err
		}
	}
	if !s.rules.WellFormedID(id) {
		return tasks.Record{}, tasks.ErrNotFound
	}
	for range s.retries {
		rec, ok, err := s.load(ctx, id)
		if err != nil {
			return tasks.Record{}, err
		}
		if !ok || (owner != "" && rec.Owner != owner) {
			return tasks.Record{}, tasks.ErrNotFound
		}
		now := s.rules.Now()
		if rec.Expired(now) {
			if _, err := s.del(ctx, &rec); err != nil {
				return tasks.Record{}, err
			}
			return tasks.Record{}, tasks.ErrNotFound
		}
		oldRev, oldVersion := rec.Rev, rec.Version
		if err := f(&rec, now); err != nil {
			return tasks.Record{}, err
		}
		if rec.Rev == oldRev {
			return rec, nil // nothing to write
		}
		publish := rec.Version != oldVersion
		done, err := s.put(ctx, &rec, oldRev, publish)
		if err != nil {
			return tasks.Record{}, err
		}
		if done {
			if publish {
				s.w.waitDelivered(ctx, id, rec.Version)
			}
			return rec, nil
		}
	}
	return tasks.Record{}, fmt.Errorf("%w: lost %d compare-and-swap races", tasks.ErrConflict, s.retries)
}

// physicalTTL is how long Redis keeps the record: until ExpiresAt by the
// store's clock, rounded up, plus the grace. 0 means no Redis expiry.
func (s *TaskStore) physicalTTL(rec *tasks.Record, now time.Time) int64 {
	if rec.ExpiresAt.IsZero() || s.grace < 0 {
		return 0
	}
	d := rec.ExpiresAt.Sub(now) + s.grace
	ms := int64((d + time.Millisecond - 1) / time.Millisecond)
	return max(ms, 1)
}

// Create implements tasks.Store.
func (s *TaskStore) Create(ctx context.Context, owner string, spec tasks.Spec) (tasks.Task, error) {
	if err := s.check(ctx); err != nil {
		return tasks.Task{}, err
	}
	now := s.rules.Now()
	rec, err := s.rules.New(owner, tasks.NewID(s.opts.IDPrefix), spec, now)
	if err != nil {
		return tasks.Task{}, err
	}
	kv, err := encodeRecord(rec)
	if err != nil {
		return tasks.Task{}, err
	}
	args := make([]any, 0, 6+len(kv))
	args = append(args, s.opts.MaxTasksPerOwner, s.opts.MaxTasks, rec.ID, scoreMs(rec.ExpiresAt), leaseScore(&rec), s.physicalTTL(&rec, now))
	for _, v := range kv {
		args = append(args, v)
	}
	keys := []string{s.taskKey(rec.ID), s.ownerKey(owner), s.expKey, s.leaseKey, s.seqKey}
	for attempt := 0; ; attempt++ {
		n, err := createScript.Run(ctx, s.rdb, keys, args...).Int()
		if err != nil {
			return tasks.Task{}, err
		}
		switch n {
		case 1:
			return rec.Task, nil
		case -3:
			return tasks.Task{}, fmt.Errorf("%w: task id collision", tasks.ErrConflict)
		}
		if attempt > 0 {
			if n == -1 {
				return tasks.Task{}, &tasks.LimitError{What: "tasks per owner", Limit: s.opts.MaxTasksPerOwner}
			}
			return tasks.Task{}, &tasks.LimitError{What: "tasks", Limit: s.opts.MaxTasks}
		}
		// Reclaim the owner's expired tasks once, then retry.
		if err := s.reclaimOwner(ctx, owner, now); err != nil {
			return tasks.Task{}, err
		}
	}
}

// reclaimOwner deletes owner's expired tasks and forgets index entries of
// records Redis already expired.
func (s *TaskStore) reclaimOwner(ctx context.Context, owner string, now time.Time) error {
	ids, err := s.rdb.ZRange(ctx, s.ownerKey(owner), 0, -1).Result()
	if err != nil {
		return err
	}
	recs, err := s.loadMany(ctx, ids)
	if err != nil {
		return err
	}
	for i, rec := range recs {
		switch {
		case rec == nil:
			err = s.rdb.ZRem(ctx, s.ownerKey(owner), ids[i]).Err()
		case rec.Expired(now):
			_, err = s.del(ctx, rec)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// loadMany reads many records in one pipeline; a nil entry is a missing
// (or undecodable) record.
func (s *TaskStore) loadMany(ctx context.Context, ids []string) ([]*tasks.Record, error) {
	out := make([]*tasks.Record, len(ids))
	const batch = 256
	for lo := 0; lo < len(ids); lo += batch {
		hi := min(lo+batch, len(ids))
		cmds := make([]*goredis.MapStringStringCmd, hi-lo)
		_, err := s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for i := lo; i < hi; i++ {
				cmds[i-lo] = p.HGetAll(ctx, s.taskKey(ids[i]))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		for i, c := range cmds {
			if h := c.Val(); len(h) > 0 {
				if rec, err := decodeRecord(h); err == nil {
					out[lo+i] = &rec
				}
			}
		}
	}
	return out, nil
}

// Get implements tasks.Store.
func (s *TaskStore) Get(ctx context.Context, owner, id string) (tasks.Task, error) {
	rec, err := s.mutate(ctx, owner, id, func(*tasks.Record, time.Time) error { return nil })
	return rec.Task, err
}

// List implements tasks.Store. The cursor is the owner index position of
// the last task listed.
func (s *TaskStore) List(ctx context.Context, owner, cursor string, limit int) (tasks.Page, error) {
	if err := s.check(ctx); err != nil {
		return tasks.Page{}, err
	}
	if err := s.rules.CheckOwner(owner); err != nil {
		return tasks.Page{}, err
	}
	var after uint64
	if cursor != "" {
		b, err := base64.RawURLEncoding.Strict().DecodeString(cursor)
		if err != nil || len(b) != 8 {
			return tasks.Page{}, tasks.ErrInvalidCursor
		}
		after = binary.BigEndian.Uint64(b)
	}
	if limit <= 0 || limit > s.opts.PageSize {
		limit = s.opts.PageSize
	}
	okey := s.ownerKey(owner)
	now := s.rules.Now()
	var page tasks.Page
	var last uint64
	for {
		zs, err := s.rdb.ZRangeByScoreWithScores(ctx, okey, &goredis.ZRangeBy{
			Min: "(" + strconv.FormatUint(after, 10), Max: "+inf", Count: int64(limit + 1),
		}).Result()
		if err != nil {
			return tasks.Page{}, err
		}
		ids := make([]string, len(zs))
		for i, z := range zs {
			ids[i], _ = z.Member.(string)
		}
		recs, err := s.loadMany(ctx, ids)
		if err != nil {
			return tasks.Page{}, err
		}
		for i, rec := range recs {
			seq := uint64(zs[i].Score)
			after = seq
			if rec == nil {
				// Redis expired the record: forget it here too.
				if err := s.rdb.ZRem(ctx, okey, ids[i]).Err(); err != nil {
					return tasks.Page{}, err
				}
				continue
			}
			if rec.Owner != owner || rec.Expired(now) {
				continue
			}
			if len(page.Tasks) == limit {
				var b [8]byte
				binary.BigEndian.PutUint64(b[:], last)
				page.NextCursor = base64.RawURLEncoding.EncodeToString(b[:])
				return page, nil
			}
			page.Tasks = append(page.Tasks, rec.Task)
			last = seq
		}
		if len(zs) <= limit {
			return page, nil
		}
	}
}

// Update implements tasks.Store.
func (s *TaskStore) Update(ctx context.Context, owner, id string, ch tasks.Change) (tasks.Task, error) {
	rec, err := s.mutate(ctx, owner, id, func(r *tasks.Record, now time.Time) error { return s.rules.Change(r, ch, now) })
	return rec.Task, err
}

// DeliverInputs implements tasks.Store.
func (s *TaskStore) DeliverInputs(ctx context.Context, owner, id string, responses map[string]jsontext.Value) (tasks.Delivery, error) {
	var accepted []string
	rec, err := s.mutate(ctx, owner, id, func(r *tasks.Record, now time.Time) error {
		var err error
		accepted, err = s.rules.Deliver(r, responses, now)
		return err
	})
	return tasks.Delivery{Accepted: accepted, Task: rec.Task}, err
}

// RequestCancel implements tasks.Store.
func (s *TaskStore) RequestCancel(ctx context.Context, owner, id string) (tasks.Task, error) {
	rec, err := s.mutate(ctx, owner, id, func(r *tasks.Record, now time.Time) error {
		s.rules.Cancel(r, now)
		return nil
	})
	return rec.Task, err
}

// Acquire implements tasks.Store.
func (s *TaskStore) Acquire(ctx context.Context, id, holder string, ttl time.Duration) (tasks.Lease, error) {
	var l tasks.Lease
	_, err := s.mutate(ctx, "", id, func(r *tasks.Record, now time.Time) error {
		var err error
		l, err = s.rules.Acquire(r, holder, ttl, now)
		return err
	})
	return l, err
}

// Renew implements tasks.Store.
func (s *TaskStore) Renew(ctx context.Context, id, holder string, ttl time.Duration) (tasks.Lease, error) {
	var l tasks.Lease
	_, err := s.mutate(ctx, "", id, func(r *tasks.Record, now time.Time) error {
		var err error
		l, err = s.rules.Renew(r, holder, ttl, now)
		return err
	})
	return l, err
}

// Release implements tasks.Store.
func (s *TaskStore) Release(ctx context.Context, id, holder string) error {
	_, err := s.mutate(ctx, "", id, func(r *tasks.Record, _ time.Time) error { return s.rules.Release(r, holder) })
	return err
}

// Sweep implements tasks.Store: it reads the candidates from the expiry
// and lease indexes (scored in ms by the store's clock) and applies
// tasks.Rules.Sweep to each, with compare-and-swap, so replicas sweeping at
// once neither double-count nor undo each other.
func (s *TaskStore) Sweep(ctx context.Context) (tasks.SweepStats, error) {
	if err := s.check(ctx); err != nil {
		return tasks.SweepStats{}, err
	}
	now := s.rules.Now()
	upTo := strconv.FormatInt(now.UnixMilli(), 10)
	var ids []string
	seen := map[string]bool{}
	for _, idx := range []string{s.expKey, s.leaseKey} {
		got, err := s.rdb.ZRangeByScore(ctx, idx, &goredis.ZRangeBy{Min: "-inf", Max: upTo}).Result()
		if err != nil {
			return tasks.SweepStats{}, err
		}
		for _, id := range got {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	recs, err := s.loadMany(ctx, ids)
	if err != nil {
		return tasks.SweepStats{}, err
	}
	var st tasks.SweepStats
	for i, rec := range recs {
		if rec == nil {
			// Gone already (Redis expiry, or another sweeper): drop the
			// index entries.
			n, err := s.rdb.ZRem(ctx, s.expKey, ids[i]).Result()
			if err == nil {
				err = s.rdb.ZRem(ctx, s.leaseKey, ids[i]).Err()
			}
			if err != nil {
				return st, err
			}
			st.Expired += int(n)
			continue
		}
		oldRev := rec.Rev
		switch s.rules.Sweep(rec, now) {
		case tasks.SweepDelete:
			done, err := s.del(ctx, rec)
			if err != nil {
				return st, err
			}
			if done {
				st.Expired++
			}
		case tasks.SweepFailed:
			done, err := s.put(ctx, rec, oldRev, true)
			if err != nil {
				return st, err
			}
			if done {
				st.LeaseLost++
				s.w.waitDelivered(ctx, rec.ID, rec.Version)
			}
		}
	}
	return st, nil
}
