package pmcp

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
