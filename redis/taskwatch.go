package redis

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gopmcp/pmcp/tasks"
	goredis "github.com/redis/go-redis/v9"
)

// watchHub fans the store's change channel out to local watchers. Every
// replica subscribes once per store to the one channel all scripts publish
// on; a change reaches every replica, which delivers it to its own watchers
// of that task. One Pub/Sub connection and one goroutine serve all
// watchers.
type watchHub struct {
	s    *TaskStore
	ps   *goredis.PubSub
	done chan struct{} // closed when the receive loop ends

	mu       sync.Mutex
	closed   bool
	watchers map[string][]*watcher
	// seen is the highest version received per watched task, and waits
	// the writers waiting for their change to reach local watchers.
	seen  map[string]uint64
	waits map[string][]deliveryWait
}

type deliveryWait struct {
	version uint64
	ch      chan struct{}
}

// DefaultDeliveryWait bounds how long a write waits for its change to
// reach this replica's watchers of the task (see TaskStore.Update).
const DefaultDeliveryWait = 5 * time.Second

type watcher struct {
	ch      chan tasks.Task
	last    uint64       // highest version pushed
	ready   bool         // initial snapshot pushed
	pending []tasks.Task // changes received before the initial snapshot
	gone    bool         // deleted before the initial snapshot
	closed  bool
	stop    func() bool
}

// reconnectBackoff is how long the receive loop waits after an error before
// receiving again (go-redis reconnects and resubscribes underneath).
const reconnectBackoff = 100 * time.Millisecond

func newWatchHub(ctx context.Context, s *TaskStore) (*watchHub, error) {
	ps := s.rdb.Subscribe(ctx, s.channel)
	// Wait for the confirmation: from here on no change is missed.
	if _, err := ps.Receive(ctx); err != nil {
		_ = ps.Close()
		return nil, err
	}
	h := &watchHub{s: s, ps: ps, done: make(chan struct{}), watchers: map[string][]*watcher{},
		seen: map[string]uint64{}, waits: map[string][]deliveryWait{}}
	go h.loop()
	return h, nil
}

func (h *watchHub) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

func (h *watchHub) loop() {
	defer close(h.done)
	ctx := context.Background()
	for {
		msg, err := h.ps.Receive(ctx)
		if err != nil {
			if h.isClosed() {
				return
			}
			t := time.NewTimer(reconnectBackoff)
			select {
			case <-h.s.stop:
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		switch m := msg.(type) {
		case *goredis.Message:
			h.dispatch(m.Payload)
		case *goredis.Subscription:
			// A (re)subscription after a reconnect: changes published
			// while the connection was down were lost, so re-read.
			if m.Kind == "subscribe" {
				h.resync()
			}
		}
	}
}

// dispatch delivers one published change.
func (h *watchHub) dispatch(p string) {
	id, body, ok := strings.Cut(p, "\n")
	if !ok {
		return
	}
	h.mu.Lock()
	ws := h.watchers[id]
	h.mu.Unlock()
	if len(ws) == 0 {
		return // nobody here watches this task
	}
	if body == "" {
		h.gone(id)
		return
	}
	var m map[string]string
	if err := unmarshalField(body, &m); err != nil {
		return
	}
	rec, err := decodeRecord(m)
	if err != nil {
		return
	}
	h.deliver(id, rec.Task)
}

// resync re-reads every watched task after a reconnect.
func (h *watchHub) resync() {
	h.mu.Lock()
	ids := make([]string, 0, len(h.watchers))
	for id := range h.watchers {
		ids = append(ids, id)
	}
	h.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	recs, err := h.s.loadMany(ctx, ids)
	if err != nil {
		return
	}
	for i, rec := range recs {
		if rec == nil {
			h.gone(ids[i])
		} else {
			h.deliver(ids[i], rec.Task)
		}
	}
}

// waitDelivered returns once this replica's watchers of id received
// version v (at once when nobody here watches id), so that a write is in
// local watchers' buffers when it returns, as with the in-memory store.
func (h *watchHub) waitDelivered(ctx context.Context, id string, v uint64) {
	h.mu.Lock()
	if len(h.watchers[id]) == 0 || h.seen[id] >= v {
		h.mu.Unlock()
		return
	}
	w := deliveryWait{version: v, ch: make(chan struct{})}
	h.waits[id] = append(h.waits[id], w)
	h.mu.Unlock()
	t := time.NewTimer(DefaultDeliveryWait)
	defer t.Stop()
	select {
	case <-w.ch:
	case <-ctx.Done():
	case <-h.s.stop:
	case <-t.C:
	}
}

// release wakes the writers waiting for versions up to v of id (all of
// them when all is set). Called with h.mu held.
func (h *watchHub) release(id string, v uint64, all bool) {
	ws := h.waits[id]
	if len(ws) == 0 {
		return
	}
	keep := ws[:0]
	for _, w := range ws {
		if all || w.version <= v {
			close(w.ch)
		} else {
			keep = append(keep, w)
		}
	}
	if len(keep) == 0 {
		delete(h.waits, id)
	} else {
		h.waits[id] = keep
	}
}

func (h *watchHub) deliver(id string, t tasks.Task) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.watchers[id]) > 0 && t.Version > h.seen[id] {
		h.seen[id] = t.Version
	}
	defer h.release(id, t.Version, false)
	for _, w := range slices.Clone(h.watchers[id]) {
		if !w.ready {
			if len(w.pending) >= cap(w.ch) {
				w.pending = w.pending[1:]
			}
			w.pending = append(w.pending, t.Clone())
			continue
		}
		h.push(id, w, t.Clone())
	}
}

func (h *watchHub) gone(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	defer h.release(id, 0, true)
	for _, w := range slices.Clone(h.watchers[id]) {
		if !w.ready {
			w.gone = true
			continue
		}
		h.closeWatcher(id, w)
	}
}

// push sends t if it is newer than what w has seen, dropping w's oldest
// snapshot when its buffer is full, and closes w after a terminal one.
// Called with h.mu held.
func (h *watchHub) push(id string, w *watcher, t tasks.Task) {
	if w.closed || t.Version <= w.last {
		return
	}
	w.last = t.Version
	for sent := false; !sent; {
		select {
		case w.ch <- t:
			sent = true
		default:
			select {
			case <-w.ch:
			default:
			}
		}
	}
	if t.Status.Terminal() {
		h.closeWatcher(id, w)
	}
}

// closeWatcher closes w and forgets it. Called with h.mu held.
func (h *watchHub) closeWatcher(id string, w *watcher) {
	if w.closed {
		return
	}
	w.closed = true
	close(w.ch)
	if w.stop != nil {
		w.stop()
	}
	ws := slices.DeleteFunc(h.watchers[id], func(x *watcher) bool { return x == w })
	if len(ws) == 0 {
		delete(h.watchers, id)
		delete(h.seen, id)
		h.release(id, 0, true)
	} else {
		h.watchers[id] = ws
	}
}

func (h *watchHub) close() error {
	h.mu.Lock()
	h.closed = true
	for id, ws := range h.watchers {
		for _, w := range slices.Clone(ws) {
			h.closeWatcher(id, w)
		}
	}
	h.mu.Unlock()
	err := h.ps.Close()
	<-h.done
	return err
}

// Watch implements tasks.Store.
func (s *TaskStore) Watch(ctx context.Context, owner, id string) (<-chan tasks.Task, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if err := s.rules.CheckOwner(owner); err != nil {
		return nil, err
	}
	if !s.rules.WellFormedID(id) {
		return nil, tasks.ErrNotFound
	}
	h := s.w
	// Register first, then read: a change published in between is held
	// in pending and delivered after the snapshot read.
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, tasks.ErrClosed
	}
	if len(h.watchers[id]) >= s.opts.MaxWatchersPerTask {
		h.mu.Unlock()
		return nil, &tasks.LimitError{What: "watchers per task", Limit: s.opts.MaxWatchersPerTask}
	}
	w := &watcher{ch: make(chan tasks.Task, s.opts.WatchBuffer)}
	h.watchers[id] = append(h.watchers[id], w)
	h.mu.Unlock()

	t, err := s.Get(ctx, owner, id)

	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil || w.closed {
		h.closeWatcher(id, w)
		if err == nil {
			err = tasks.ErrClosed
		}
		return nil, err
	}
	w.ready = true
	h.push(id, w, t)
	for _, p := range w.pending {
		h.push(id, w, p)
	}
	w.pending = nil
	if w.gone {
		h.closeWatcher(id, w)
	}
	if !w.closed {
		w.stop = context.AfterFunc(ctx, func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.closeWatcher(id, w)
		})
	}
	return w.ch, nil
}

var errNoPayload = errors.New("empty payload")

func unmarshalField(s string, v any) error {
	if s == "" {
		return errNoPayload
	}
	return unmarshalJSON([]byte(s), v)
}
