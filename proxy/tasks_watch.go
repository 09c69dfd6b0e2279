package proxy

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/gopmcp/pmcp"
)

// Task status pushes across the bridge. A client that made a task through
// the bridge is told of its status changes as it would be by the upstream
// directly: a 2025-11-25 session gets notifications/tasks/status, a
// 2026-07-28 client notifications/tasks on a subscriptions/listen naming
// the task (ServerOptions.WatchTask; only the caller's own tasks, see
// tasks_ids.go). Whatever the upstream's era, the proxy polls the
// upstream task at the interval the upstream suggests (clamped to
// [minWatchPoll, maxWatchPoll]) while someone is told: for a legacy
// session from the task's creation until it ends or the session does, for
// a modern client while its listen lasts. At most maxTaskWatches tasks are
// polled at once; beyond that a task's status is not pushed (its client
// still polls tasks/get). Polling, not forwarding the upstream's own
// pushes, so that it works the same for every pair of eras, for shared
// and per-session upstreams, and across upstream restarts.

const (
	maxTaskWatches = 1024
	minWatchPoll   = 100 * time.Millisecond
	maxWatchPoll   = 10 * time.Second
	// defaultWatchPoll is the interval of an upstream that suggests none.
	defaultWatchPoll = time.Second
)

// taskState is what a status push reports about a task: a push is sent
// when it changes.
func taskState(st *pmcp.DetailedTask) string {
	var b strings.Builder
	b.WriteString(st.Status)
	b.WriteByte(0)
	b.WriteString(st.StatusMessage)
	keys := make([]string, 0, len(st.InputRequests))
	for k := range st.InputRequests {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b.WriteByte(0)
		b.WriteString(k)
	}
	return b.String()
}

// startWatch runs watch in a goroutine of the proxy (Close waits for it)
// whose ctx ends with parent's, the proxy's, or when stop is called; false
// when maxTaskWatches are running or the proxy is closed.
func (p *Proxy) startWatch(parent context.Context, watch func(ctx context.Context)) (stop func(), ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.watches >= maxTaskWatches {
		if !p.closed {
			p.log.Warn("proxy: too many tasks watched; status of this one is not pushed", "max", maxTaskWatches)
		}
		return nil, false
	}
	p.watches++
	ctx, cancel := context.WithCancel(p.base)
	unhook := context.AfterFunc(parent, cancel)
	p.jobs.Add(1)
	go func() {
		defer p.jobs.Done()
		defer cancel()
		defer unhook()
		watch(ctx)
		p.mu.Lock()
		p.watches--
		p.mu.Unlock()
	}()
	return cancel, true
}

// watchTask polls the upstream task ct, whose last state told is st (as
// taskStatus gives it for the downstream era), and hands each changed
// state to tell under the downstream id, until the task ended, ctx is
// done, the upstream fails, or tell fails.
func (p *Proxy) watchTask(ctx context.Context, sl *slot, l *live, ct *pmcp.ClientTask, modern bool, st *pmcp.DetailedTask, tell func(*pmcp.DetailedTask) error) {
	downID := st.TaskID
	last := taskState(st)
	for !st.Terminal() {
		wait := defaultWatchPoll
		if st.PollIntervalMs != nil && *st.PollIntervalMs > 0 {
			wait = time.Duration(*st.PollIntervalMs) * time.Millisecond
		}
		t := time.NewTimer(min(max(wait, minWatchPoll), maxWatchPoll))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		next, err := p.taskStatus(ctx, sl, l, ct, modern)
		if err != nil {
			return
		}
		next.TaskID = downID
		if s := taskState(next); s != last {
			if tell(next) != nil {
				return
			}
			last = s
		}
		st = next
	}
}

// watchLegacyTask pushes the status of a task just created for a
// 2025-11-25 downstream session (st, as shown to it) with notify until
// the task ends or the session does.
func (p *Proxy) watchLegacyTask(extra *pmcp.RequestHandlerExtra, notify func(context.Context, *pmcp.Task) error, sl *slot, l *live, ct *pmcp.ClientTask, st *pmcp.DetailedTask) {
	if notify == nil || st.Terminal() {
		return
	}
	created := *st
	stop, ok := p.startWatch(context.Background(), func(ctx context.Context) {
		p.watchTask(ctx, sl, l, ct, false, &created, func(st *pmcp.DetailedTask) error {
			t := legacyTask(st)
			return notify(ctx, &t)
		})
	})
	if ok && !extra.OnSessionEnd(stop) {
		stop() // the session cannot tell us it ended: do not outlive it
	}
}

// watchModernTask answers ServerOptions.WatchTask: the states of the
// caller's bridged task id while the listen (ctx) lasts, its current
// state first.
func (p *Proxy) watchModernTask(ctx context.Context, extra *pmcp.RequestHandlerExtra, id string) (<-chan *pmcp.DetailedTask, bool) {
	req := &pmcp.Request{Method: pmcp.MethodTasksGet, Extra: extra}
	owner, err := taskOwner(req)
	if err != nil {
		return nil, false
	}
	up, rest, ok := p.route(id)
	if !ok {
		return nil, false
	}
	upID, ok := p.taskIDs.open(owner, up, rest)
	if !ok {
		return nil, false
	}
	sl, l, err := p.conn(ctx, req, up)
	if err != nil || !l.tasks {
		return nil, false
	}
	ct := l.conn.Session.Task(upID)
	st, err := p.taskStatus(ctx, sl, l, ct, true)
	if err != nil {
		return nil, false
	}
	st.TaskID = id
	out := make(chan *pmcp.DetailedTask, 1)
	out <- modernTask(st)
	if _, ok := p.startWatch(ctx, func(ctx context.Context) {
		defer close(out)
		p.watchTask(ctx, sl, l, ct, true, st, func(st *pmcp.DetailedTask) error {
			select {
			case out <- modernTask(st):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}); !ok {
		close(out)
	}
	return out, true
}
