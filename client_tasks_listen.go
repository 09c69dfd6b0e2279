package pmcp

import (
	"context"
	"slices"
	"sync"
)

// taskWatch pushes the status of the tasks a modern session created to
// Notifications.TaskStatus, as a legacy server pushes
// notifications/tasks/status on its own: one subscriptions/listen whose
// filter names the session's live tasks, at most defaultMaxListenTaskIDs
// (the server's bound) of them. Creating a task reopens the subscription
// with the new id added (the server sends each task's current snapshot
// first, so a status reached meanwhile is not lost); a terminal status
// removes the id, and the subscription ends with the last live task. A
// task created beyond the bound is not watched (Get and Wait still work).
// The watching goroutine is the session's: it ends with the session.
type taskWatch struct {
	mu      sync.Mutex
	ids     []string
	kick    chan struct{} // capacity 1: the id set changed
	running bool
	done    chan struct{} // closed when the goroutine returned
}

// watchTask adds id to the watched tasks of a modern session with a
// TaskStatus handler, starting the watching goroutine on first use.
func (s *ClientSession) watchTask(id string) {
	if id == "" || s.c.opts.Notifications.TaskStatus == nil || s.Era() != EraModern {
		return
	}
	w := &s.tasksWatch
	w.mu.Lock()
	defer w.mu.Unlock()
	if slices.Contains(w.ids, id) || s.ctx.Err() != nil {
		return
	}
	if len(w.ids) >= defaultMaxListenTaskIDs {
		s.c.log.Warn("pmcp: client: too many live tasks to watch; status of this one is not pushed", "task", capPeerString(id), "max", defaultMaxListenTaskIDs)
		return
	}
	w.ids = append(w.ids, id)
	if !w.running {
		w.running = true
		w.kick = make(chan struct{}, 1)
		w.done = make(chan struct{})
		go s.runTaskWatch(w.kick, w.done)
	}
	w.signal()
}

// taskEnded removes a task whose terminal status the session saw; the
// subscription ends when no watched task is left.
func (s *ClientSession) taskEnded(id string) {
	w := &s.tasksWatch
	w.mu.Lock()
	defer w.mu.Unlock()
	i := slices.Index(w.ids, id)
	if i < 0 {
		return
	}
	w.ids = slices.Delete(w.ids, i, i+1)
	if len(w.ids) == 0 {
		w.signal()
	}
}

// signal wakes the goroutine without blocking; w.mu is held.
func (w *taskWatch) signal() {
	if w.kick == nil {
		return
	}
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// snapshot returns a copy of the watched ids.
func (w *taskWatch) snapshot() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.ids)
}

// wait waits for the watching goroutine, if one ever started; the
// session's ctx must be done.
func (w *taskWatch) wait() {
	w.mu.Lock()
	done := w.done
	w.mu.Unlock()
	if done != nil {
		<-done
	}
}

// runTaskWatch keeps one subscription open for the current id set until
// the session ends. A subscription the server ended or refused is opened
// again only when the set changes, so a server without task listens costs
// one request per created task, never a loop.
func (s *ClientSession) runTaskWatch(kick <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	var (
		stop  context.CancelFunc
		ended chan struct{}
	)
	end := func() {
		if stop != nil {
			stop()
			<-ended
			stop, ended = nil, nil
		}
	}
	defer end()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-kick:
		}
		end()
		ids := s.tasksWatch.snapshot()
		if len(ids) == 0 {
			continue
		}
		ctx, cancel := context.WithCancel(s.ctx)
		stop, ended = cancel, make(chan struct{})
		go func(ended chan<- struct{}) {
			defer close(ended)
			if err := s.Listen(ctx, SubscriptionFilter{TaskIDs: ids}); err != nil && ctx.Err() == nil {
				s.c.log.Debug("pmcp: client: task status subscription ended", "error", err)
			}
		}(ended)
	}
}
