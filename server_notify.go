package pmcp

import "context"

// Hooks for servers whose features live elsewhere (package proxy serves an
// upstream session's tools, prompts and resources through a middleware).

// declaredBy gates the feature methods on explicitly declared
// capabilities (ServerOptions.Capabilities).
func declaredBy(c *ServerCapabilities, method string) bool {
	switch method {
	case MethodToolsList, MethodToolsCall:
		return c.Tools != nil
	case MethodPromptsList, MethodPromptsGet:
		return c.Prompts != nil
	case MethodResourcesList, MethodResourcesTemplatesList, MethodResourcesRead:
		return c.Resources != nil
	case MethodResourcesSubscribe, MethodResourcesUnsubscribe:
		return c.Resources != nil && c.Resources.Subscribe
	case MethodCompletionComplete:
		return c.Completions != nil
	case MethodTasksGet, MethodTasksResult, MethodTasksList, MethodTasksCancel, MethodTasksUpdate:
		// Declared in either era's form: the legacy capability or the
		// modern extension. Undeclared, they must not reach serveTasks,
		// which needs the task runner only ServerOptions.Tasks starts.
		_, ext := c.Extensions[ExtensionTasks]
		return len(c.Tasks) > 0 || ext
	}
	return true
}

// NotifyToolsListChanged tells clients that the list of tools changed
// (notifications/tools/list_changed: pushed to legacy sessions, delivered on
// modern subscriptions/listen streams that asked for it), as registering a
// tool does. For servers whose tools are not registered (ServerOptions.
// Capabilities).
func (s *Server) NotifyToolsListChanged() { s.notifyListChanged(listTools) }

// NotifyPromptsListChanged is NotifyToolsListChanged for prompts.
func (s *Server) NotifyPromptsListChanged() { s.notifyListChanged(listPrompts) }

// NotifyResourcesListChanged is NotifyToolsListChanged for resources and
// resource templates.
func (s *Server) NotifyResourcesListChanged() { s.notifyListChanged(listResources) }

// SessionKey identifies a legacy session within its Server. It is
// comparable and opaque; the zero value means "no session".
type SessionKey struct{ s *session }

// IsZero reports whether k names no session.
func (k SessionKey) IsZero() bool { return k.s == nil }

// SessionKey returns the key of the legacy session the request belongs to
// (a stdio or in-memory connection, or a Streamable HTTP session): the same
// for every request of the session and different from every other
// session's. It is the zero SessionKey in the modern era, which has no
// sessions. Use it to keep per-session state, dropped in OnSessionEnd.
func (e *RequestHandlerExtra) SessionKey() SessionKey {
	if e == nil {
		return SessionKey{}
	}
	return SessionKey{e.session}
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
