package tasks_test

// kvStore is a Store built the way a Redis store (issue 12) is meant to be:
// outside this package, from the exported Rules and Record only, over a
// backend that holds flat string hashes and offers nothing but atomic
// compare-and-swap scripts and in-script publishing. It exists to prove
// that the Store contract and Rules are enough for such a store: it runs
// the same contract suite as MemoryStore.

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/tasks"
	"github.com/gopmcp/pmcp/tasks/storetest"
)

func TestHashCASStoreContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, opts tasks.Options) tasks.Store {
		s, err := newKVStore(opts)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// ---- the backend: what Redis offers (HGETALL, one Lua script per write,
// ZSET per owner, PUBLISH from the script). Each method is one round trip.

type hash = map[string]string

type member struct {
	seq uint64
	id  string
}

type kvBackend struct {
	mu     sync.Mutex
	hashes map[string]hash     // task:{id}
	owners map[string][]member // owner:{o}, by seq
	seq    uint64              // INCR tasks:seq
	subs   map[string][]*kvSub // SUBSCRIBE task:{id}
}

type kvSub struct {
	ch     chan tasks.Task
	closed bool
	stop   func() bool
}

func (b *kvBackend) hgetall(id string) hash {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.hashes[id]
}

// create is one script: bounds, HSET, ZADD.
func (b *kvBackend) create(id, owner string, h hash, maxTasks, maxOwner int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.owners[owner]) >= maxOwner {
		return &tasks.LimitError{What: "tasks per owner", Limit: maxOwner}
	}
	if len(b.hashes) >= maxTasks {
		return &tasks.LimitError{What: "tasks", Limit: maxTasks}
	}
	if b.hashes[id] != nil {
		return tasks.ErrConflict
	}
	b.seq++
	b.hashes[id] = h
	b.owners[owner] = append(b.owners[owner], member{b.seq, id})
	return nil
}

// put is the compare-and-swap script: write h if the stored rev is still
// rev, then PUBLISH the snapshot when publish is set.
func (b *kvBackend) put(id, rev string, h hash, publish bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := b.hashes[id]
	if cur == nil || cur["rev"] != rev {
		return false
	}
	b.hashes[id] = h
	if publish {
		t := decode(h).Task
		for _, s := range b.subs[id] {
			push(s, t.Clone())
		}
		if t.Status.Terminal() {
			b.unsubscribeAll(id)
		}
	}
	return true
}

// del is compare-and-delete.
func (b *kvBackend) del(id, rev string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := b.hashes[id]
	if cur == nil || cur["rev"] != rev {
		return false
	}
	delete(b.hashes, id)
	owner := cur["owner"]
	b.owners[owner] = slices.DeleteFunc(b.owners[owner], func(m member) bool { return m.id == id })
	if len(b.owners[owner]) == 0 {
		delete(b.owners, owner)
	}
	b.unsubscribeAll(id)
	return true
}

func (b *kvBackend) unsubscribeAll(id string) {
	for _, s := range b.subs[id] {
		closeSub(s)
	}
	delete(b.subs, id)
}

func push(s *kvSub, t tasks.Task) {
	for {
		select {
		case s.ch <- t:
			return
		default:
		}
		select {
		case <-s.ch:
		default:
		}
	}
}

func closeSub(s *kvSub) {
	if !s.closed {
		s.closed = true
		close(s.ch)
		if s.stop != nil {
			s.stop()
		}
	}
}

// ---- hash encoding: every field a string, as in a Redis hash.

func ms(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return strconv.FormatInt(t.UnixMilli(), 10)
}

func unms(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	n, _ := strconv.ParseInt(s, 10, 64)
	return time.UnixMilli(n).UTC()
}

func jsonField(v any, empty bool) string {
	if empty {
		return ""
	}
	b, err := json.Marshal(v, json.Deterministic(true))
	if err != nil {
		panic(err)
	}
	return string(b)
}

func encode(r tasks.Record) hash {
	h := hash{
		"id": r.ID, "owner": r.Owner, "status": string(r.Status), "msg": r.StatusMessage,
		"created": ms(r.CreatedAt), "updated": ms(r.UpdatedAt), "expires": ms(r.ExpiresAt),
		"ttl": strconv.FormatInt(int64(r.TTL), 10), "poll": strconv.FormatInt(int64(r.PollInterval), 10),
		"inreq":  jsonField(r.InputRequests, r.InputRequests == nil),
		"inresp": jsonField(r.InputResponses, r.InputResponses == nil),
		"result": string(r.Result), "error": jsonField(r.Error, r.Error == nil),
		"cancel": strconv.FormatBool(r.CancelRequested), "iserror": strconv.FormatBool(r.ResultIsError), "holder": r.LeaseHolder, "lease": ms(r.LeaseExpiry),
		"version": strconv.FormatUint(r.Version, 10), "rev": strconv.FormatUint(r.Rev, 10),
		"used": jsonField(slices.Sorted(mapsKeys(r.InputKeysUsed)), r.InputKeysUsed == nil),
	}
	return h
}

func mapsKeys(m map[string]struct{}) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func decode(h hash) tasks.Record {
	var r tasks.Record
	r.ID, r.Owner, r.Status, r.StatusMessage = h["id"], h["owner"], tasks.Status(h["status"]), h["msg"]
	r.CreatedAt, r.UpdatedAt, r.ExpiresAt, r.LeaseExpiry = unms(h["created"]), unms(h["updated"]), unms(h["expires"]), unms(h["lease"])
	ttl, _ := strconv.ParseInt(h["ttl"], 10, 64)
	poll, _ := strconv.ParseInt(h["poll"], 10, 64)
	r.TTL, r.PollInterval = time.Duration(ttl), time.Duration(poll)
	if h["inreq"] != "" {
		_ = json.Unmarshal([]byte(h["inreq"]), &r.InputRequests)
	}
	if h["inresp"] != "" {
		_ = json.Unmarshal([]byte(h["inresp"]), &r.InputResponses)
	}
	if h["result"] != "" {
		r.Result = jsontext.Value(h["result"])
	}
	if h["error"] != "" {
		r.Error = new(tasks.Error)
		_ = json.Unmarshal([]byte(h["error"]), r.Error)
	}
	r.CancelRequested = h["cancel"] == "true"
	r.ResultIsError = h["iserror"] == "true"
	r.LeaseHolder = h["holder"]
	r.Version, _ = strconv.ParseUint(h["version"], 10, 64)
	r.Rev, _ = strconv.ParseUint(h["rev"], 10, 64)
	if h["used"] != "" {
		var used []string
		_ = json.Unmarshal([]byte(h["used"]), &used)
		r.InputKeysUsed = make(map[string]struct{}, len(used))
		for _, k := range used {
			r.InputKeysUsed[k] = struct{}{}
		}
	}
	return r
}

// ---- the store: load, apply one rule, compare-and-swap, retry.

type kvStore struct {
	rules  *tasks.Rules
	opts   tasks.Options
	b      *kvBackend
	mu     sync.Mutex
	closed bool
}

func newKVStore(opts tasks.Options) (*kvStore, error) {
	rules, err := tasks.NewRules(opts)
	if err != nil {
		return nil, err
	}
	// This store never sweeps on its own: the suite calls Sweep.
	return &kvStore{rules: rules, opts: rules.Options(), b: &kvBackend{
		hashes: map[string]hash{}, owners: map[string][]member{}, subs: map[string][]*kvSub{},
	}}, nil
}

func (s *kvStore) check(ctx context.Context) error {
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

const maxCASRetries = 64

// mutate loads id, lets f change the record (owner "" skips the owner
// check) and writes it back with compare-and-swap, retrying on a lost race.
func (s *kvStore) mutate(ctx context.Context, owner, id string, f func(*tasks.Record, time.Time) error) (tasks.Record, error) {
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
	for range maxCASRetries {
		h := s.b.hgetall(id)
		if h == nil {
			return tasks.Record{}, tasks.ErrNotFound
		}
		rec := decode(h)
		if owner != "" && rec.Owner != owner {
			return tasks.Record{}, tasks.ErrNotFound
		}
		now := s.rules.Now()
		if rec.Expired(now) {
			s.b.del(id, h["rev"])
			return tasks.Record{}, tasks.ErrNotFound
		}
		before := rec.Rev
		version := rec.Version
		if err := f(&rec, now); err != nil {
			return tasks.Record{}, err
		}
		if rec.Rev == before {
			return rec, nil // nothing to write
		}
		if s.b.put(id, h["rev"], encode(rec), rec.Version != version) {
			return rec, nil
		}
	}
	return tasks.Record{}, tasks.ErrConflict
}

func (s *kvStore) Create(ctx context.Context, owner string, spec tasks.Spec) (tasks.Task, error) {
	if err := s.check(ctx); err != nil {
		return tasks.Task{}, err
	}
	id := tasks.NewID(s.opts.IDPrefix)
	now := s.rules.Now()
	rec, err := s.rules.New(owner, id, spec, now)
	if err != nil {
		return tasks.Task{}, err
	}
	if err := s.b.create(id, owner, encode(rec), s.opts.MaxTasks, s.opts.MaxTasksPerOwner); err != nil {
		// Reclaim the owner's expired tasks once, then retry.
		s.expireOwner(owner, now)
		if err = s.b.create(id, owner, encode(rec), s.opts.MaxTasks, s.opts.MaxTasksPerOwner); err != nil {
			return tasks.Task{}, err
		}
	}
	return rec.Task, nil
}

func (s *kvStore) expireOwner(owner string, now time.Time) {
	s.b.mu.Lock()
	ids := make([]string, 0, len(s.b.owners[owner]))
	for _, m := range s.b.owners[owner] {
		ids = append(ids, m.id)
	}
	s.b.mu.Unlock()
	for _, id := range ids {
		if h := s.b.hgetall(id); h != nil && decode(h).Expired(now) {
			s.b.del(id, h["rev"])
		}
	}
}

func (s *kvStore) Get(ctx context.Context, owner, id string) (tasks.Task, error) {
	rec, err := s.mutate(ctx, owner, id, func(*tasks.Record, time.Time) error { return nil })
	return rec.Task, err
}

func (s *kvStore) List(ctx context.Context, owner, cursor string, limit int) (tasks.Page, error) {
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
	// ZRANGEBYSCORE owner:{o} (after +inf LIMIT 0 limit+1, then HGETALL each.
	s.b.mu.Lock()
	var members []member
	for _, m := range s.b.owners[owner] {
		if m.seq > after {
			members = append(members, m)
		}
	}
	s.b.mu.Unlock()
	now := s.rules.Now()
	var p tasks.Page
	var last uint64
	for _, m := range members {
		h := s.b.hgetall(m.id)
		if h == nil {
			continue
		}
		rec := decode(h)
		if rec.Expired(now) {
			continue
		}
		if len(p.Tasks) == limit {
			var b [8]byte
			binary.BigEndian.PutUint64(b[:], last)
			p.NextCursor = base64.RawURLEncoding.EncodeToString(b[:])
			break
		}
		p.Tasks = append(p.Tasks, rec.Task)
		last = m.seq
	}
	return p, nil
}

func (s *kvStore) Update(ctx context.Context, owner, id string, ch tasks.Change) (tasks.Task, error) {
	rec, err := s.mutate(ctx, owner, id, func(r *tasks.Record, now time.Time) error { return s.rules.Change(r, ch, now) })
	return rec.Task, err
}

func (s *kvStore) DeliverInputs(ctx context.Context, owner, id string, resp map[string]jsontext.Value) (tasks.Delivery, error) {
	var accepted []string
	rec, err := s.mutate(ctx, owner, id, func(r *tasks.Record, now time.Time) error {
		var err error
		accepted, err = s.rules.Deliver(r, resp, now)
		return err
	})
	return tasks.Delivery{Accepted: accepted, Task: rec.Task}, err
}

func (s *kvStore) RequestCancel(ctx context.Context, owner, id string) (tasks.Task, error) {
	rec, err := s.mutate(ctx, owner, id, func(r *tasks.Record, now time.Time) error { s.rules.Cancel(r, now); return nil })
	return rec.Task, err
}

func (s *kvStore) Acquire(ctx context.Context, id, holder string, ttl time.Duration) (tasks.Lease, error) {
	var l tasks.Lease
	_, err := s.mutate(ctx, "", id, func(r *tasks.Record, now time.Time) error {
		var err error
		l, err = s.rules.Acquire(r, holder, ttl, now)
		return err
	})
	return l, err
}

func (s *kvStore) Renew(ctx context.Context, id, holder string, ttl time.Duration) (tasks.Lease, error) {
	var l tasks.Lease
	_, err := s.mutate(ctx, "", id, func(r *tasks.Record, now time.Time) error {
		var err error
		l, err = s.rules.Renew(r, holder, ttl, now)
		return err
	})
	return l, err
}

func (s *kvStore) Release(ctx context.Context, id, holder string) error {
	_, err := s.mutate(ctx, "", id, func(r *tasks.Record, _ time.Time) error { return s.rules.Release(r, holder) })
	return err
}

func (s *kvStore) Sweep(ctx context.Context) (tasks.SweepStats, error) {
	if err := s.check(ctx); err != nil {
		return tasks.SweepStats{}, err
	}
	s.b.mu.Lock()
	ids := make([]string, 0, len(s.b.hashes))
	for id := range s.b.hashes {
		ids = append(ids, id)
	}
	s.b.mu.Unlock()
	var st tasks.SweepStats
	now := s.rules.Now()
	for _, id := range ids {
		h := s.b.hgetall(id)
		if h == nil {
			continue
		}
		rec := decode(h)
		switch s.rules.Sweep(&rec, now) {
		case tasks.SweepDelete:
			if s.b.del(id, h["rev"]) {
				st.Expired++
			}
		case tasks.SweepFailed:
			if s.b.put(id, h["rev"], encode(rec), true) {
				st.LeaseLost++
			}
		}
	}
	return st, nil
}

func (s *kvStore) Watch(ctx context.Context, owner, id string) (<-chan tasks.Task, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if _, err := s.Get(ctx, owner, id); err != nil {
		return nil, err
	}
	// SUBSCRIBE first, then read the current state in the same step so
	// that no change falls between the two.
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.hashes[id]
	if h == nil {
		return nil, tasks.ErrNotFound
	}
	if len(b.subs[id]) >= s.opts.MaxWatchersPerTask {
		return nil, &tasks.LimitError{What: "watchers per task", Limit: s.opts.MaxWatchersPerTask}
	}
	sub := &kvSub{ch: make(chan tasks.Task, s.opts.WatchBuffer)}
	cur := decode(h)
	sub.ch <- cur.Task
	if cur.Status.Terminal() {
		closeSub(sub)
		return sub.ch, nil
	}
	b.subs[id] = append(b.subs[id], sub)
	sub.stop = context.AfterFunc(ctx, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if !sub.closed {
			b.subs[id] = slices.DeleteFunc(b.subs[id], func(x *kvSub) bool { return x == sub })
			closeSub(sub)
		}
	})
	return sub.ch, nil
}

func (s *kvStore) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	for id := range s.b.subs {
		s.b.unsubscribeAll(id)
	}
	return nil
}
