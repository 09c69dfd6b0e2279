package pmcp

// Hooks for servers whose features live elsewhere (package proxy serves an
// upstream session's tools, prompts and resources through a middleware).

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
