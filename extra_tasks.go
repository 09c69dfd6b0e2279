package pmcp

import (
	"context"
	"errors"

	"github.com/gopmcp/pmcp/tasks"
)

// TaskID returns the id of the task the handler runs as, empty when it runs
// synchronously. It is the same from the handler's first line to its end,
// in both eras: in the 2026-07-28 era, asking for it while the input window
// (TaskOptions.InputWindow) is still open creates the task then, as
// SetTaskStatusMessage does (a RequireInput after that goes through the
// task).
func (e *RequestHandlerExtra) TaskID() string {
	if e.task == nil {
		return ""
	}
	if _, err := e.task.commit(); err != nil {
		return ""
	}
	return e.task.taskID()
}

// SetTaskStatusMessage sets the status message clients see on the task the
// handler runs as (creating the task if the input window is still open).
// It fails outside a task.
func (e *RequestHandlerExtra) SetTaskStatusMessage(msg string) error {
	if e.task == nil {
		return errors.New("pmcp: SetTaskStatusMessage outside a task")
	}
	r := e.task
	if _, err := r.commit(); err != nil {
		return err
	}
	t, err := r.ts.store.Update(e.ctx, r.owner, r.taskID(), tasks.Change{Holder: r.ts.replica, StatusMessage: &msg})
	if err == nil {
		r.notifyStatus(t)
	}
	return err
}

// TaskStatusNotifier returns a function that sends
// notifications/tasks/status about a task on the request's 2025-11-25
// session, as the server does for its own tasks. It stays usable after
// the request ended, until the session ends (it then fails). Nil when the
// request has no such session: the 2026-07-28 era pushes task status on
// subscriptions/listen instead (see ServerOptions.WatchTask). It is for a
// middleware that serves tasks of its own (package proxy).
func (e *RequestHandlerExtra) TaskStatusNotifier() func(ctx context.Context, t *Task) error {
	if e == nil || e.session == nil || e.session.notify == nil || e.Era() != EraLegacy {
		return nil
	}
	notify := e.session.notify
	return func(ctx context.Context, t *Task) error { return notify(ctx, NotificationTasksStatus, t) }
}
