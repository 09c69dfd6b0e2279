package pmcp

import (
	"context"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/tasks"
)

// lazyStore is the Server-owned memory store, built on first use: a server
// that never runs a task starts no janitor goroutine.
type lazyStore struct {
	opts   tasks.Options
	mu     sync.Mutex
	st     *tasks.MemoryStore
	closed bool
}

func (l *lazyStore) get() (*tasks.MemoryStore, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, tasks.ErrClosed
	}
	if l.st == nil {
		st, err := tasks.NewMemoryStore(l.opts)
		if err != nil {
			return nil, err
		}
		l.st = st
	}
	return l.st, nil
}

func (l *lazyStore) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.st == nil {
		return nil
	}
	return l.st.Close()
}

func (l *lazyStore) Create(ctx context.Context, owner string, spec tasks.Spec) (tasks.Task, error) {
	st, err := l.get()
	if err != nil {
		return tasks.Task{}, err
	}
	return st.Create(ctx, owner, spec)
}

func (l *lazyStore) Get(ctx context.Context, owner, id string) (tasks.Task, error) {
	st, err := l.get()
	if err != nil {
		return tasks.Task{}, err
	}
	return st.Get(ctx, owner, id)
}

func (l *lazyStore) List(ctx context.Context, owner, cursor string, limit int) (tasks.Page, error) {
	st, err := l.get()
	if err != nil {
		return tasks.Page{}, err
	}
	return st.List(ctx, owner, cursor, limit)
}

func (l *lazyStore) Update(ctx context.Context, owner, id string, ch tasks.Change) (tasks.Task, error) {
	st, err := l.get()
	if err != nil {
		return tasks.Task{}, err
	}
	return st.Update(ctx, owner, id, ch)
}

func (l *lazyStore) DeliverInputs(ctx context.Context, owner, id string, responses map[string]jsontext.Value) (tasks.Delivery, error) {
	st, err := l.get()
	if err != nil {
		return tasks.Delivery{}, err
	}
	return st.DeliverInputs(ctx, owner, id, responses)
}

func (l *lazyStore) RequestCancel(ctx context.Context, owner, id string) (tasks.Task, error) {
	st, err := l.get()
	if err != nil {
		return tasks.Task{}, err
	}
	return st.RequestCancel(ctx, owner, id)
}

func (l *lazyStore) Watch(ctx context.Context, owner, id string) (<-chan tasks.Task, error) {
	st, err := l.get()
	if err != nil {
		return nil, err
	}
	return st.Watch(ctx, owner, id)
}

func (l *lazyStore) Acquire(ctx context.Context, id, holder string, ttl time.Duration) (tasks.Lease, error) {
	st, err := l.get()
	if err != nil {
		return tasks.Lease{}, err
	}
	return st.Acquire(ctx, id, holder, ttl)
}

func (l *lazyStore) Renew(ctx context.Context, id, holder string, ttl time.Duration) (tasks.Lease, error) {
	st, err := l.get()
	if err != nil {
		return tasks.Lease{}, err
	}
	return st.Renew(ctx, id, holder, ttl)
}

func (l *lazyStore) Release(ctx context.Context, id, holder string) error {
	st, err := l.get()
	if err != nil {
		return err
	}
	return st.Release(ctx, id, holder)
}

func (l *lazyStore) Sweep(ctx context.Context) (tasks.SweepStats, error) {
	st, err := l.get()
	if err != nil {
		return tasks.SweepStats{}, err
	}
	return st.Sweep(ctx)
}
