package tasks

import (
	"context"
)

// watcher is one Watch channel. All its fields are guarded by the store's
// mutex, and only the store sends on ch, so a send never blocks: when the
// buffer is full the oldest snapshot is dropped to make room.
type watcher struct {
	ch     chan Task
	e      *entry
	closed bool
	stop   func() bool // deregisters the context callback
}

func (w *watcher) push(t Task) {
	for {
		select {
		case w.ch <- t:
			return
		default:
		}
		select {
		case <-w.ch: // drop the oldest; the reader may have taken it already
		default:
		}
	}
}

func (w *watcher) close() {
	if w.closed {
		return
	}
	w.closed = true
	close(w.ch)
	if w.stop != nil {
		w.stop()
	}
}

// publish sends the entry's current snapshot to every watcher, and closes
// them all once the task is terminal. Called with the store's mutex held.
func (e *entry) publish() {
	for _, w := range e.watchers {
		w.push(e.rec.Task.Clone())
	}
	if e.rec.Status.Terminal() {
		e.closeWatchers()
	}
}

func (e *entry) closeWatchers() {
	for _, w := range e.watchers {
		w.close()
	}
	e.watchers = nil
}

func (e *entry) dropWatcher(w *watcher) {
	for i, x := range e.watchers {
		if x == w {
			last := len(e.watchers) - 1
			e.watchers[i] = e.watchers[last]
			e.watchers[last] = nil
			e.watchers = e.watchers[:last]
			return
		}
	}
}

// Watch implements Store. The context callback is registered with
// context.AfterFunc, so a watcher costs a channel and no goroutine.
func (s *MemoryStore) Watch(ctx context.Context, owner, id string) (<-chan Task, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.lookup(owner, id, s.opts.Now())
	if err != nil {
		return nil, err
	}
	if len(e.watchers) >= s.opts.MaxWatchersPerTask {
		return nil, &LimitError{What: "watchers per task", Limit: s.opts.MaxWatchersPerTask}
	}
	w := &watcher{ch: make(chan Task, s.opts.WatchBuffer), e: e}
	w.ch <- e.rec.Task.Clone()
	if e.rec.Status.Terminal() {
		w.close()
		return w.ch, nil
	}
	e.watchers = append(e.watchers, w)
	w.stop = context.AfterFunc(ctx, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !w.closed {
			w.e.dropWatcher(w)
			w.close()
		}
	})
	return w.ch, nil
}
