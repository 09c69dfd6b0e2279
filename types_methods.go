package pmcp

import "github.com/go-json-experiment/json/jsontext"

// requestParamsBase holds the members every request's params may carry.
type requestParamsBase struct {
	Meta jsontext.Value `json:"_meta,omitempty"`
}

// initializeParams is the legacy handshake request.
type initializeParams struct {
	ProtocolVersion string             `json:"protocolVersion"`
	Capabilities    ClientCapabilities `json:"capabilities"`
	ClientInfo      Implementation     `json:"clientInfo"`
	Meta            jsontext.Value     `json:"_meta,omitempty"`
}

// InitializeResult answers initialize.
type InitializeResult struct {
	ResultFields
	ProtocolVersion string             `json:"protocolVersion"`
	Capabilities    ServerCapabilities `json:"capabilities"`
	ServerInfo      Implementation     `json:"serverInfo"`
	Instructions    string             `json:"instructions,omitempty"`
}

// discoverResult answers server/discover (2026-07-28).
type discoverResult struct {
	ResultFields
	CacheFields
	SupportedVersions []string           `json:"supportedVersions"`
	Capabilities      ServerCapabilities `json:"capabilities"`
	Instructions      string             `json:"instructions,omitempty"`
}

// paginatedParams are the params of the list methods.
type paginatedParams struct {
	Cursor string         `json:"cursor,omitempty"`
	Meta   jsontext.Value `json:"_meta,omitempty"`
}

// ToolAnnotations are hints about a tool's behaviour. Untrusted unless the
// server is.
type ToolAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// ToolExecution describes a tool's task support: TaskSupportForbidden
// (or empty), TaskSupportOptional or TaskSupportRequired. It is sent in
// tools/list and decides, on a server with ServerOptions.Tasks, whether a
// call runs as a task (see TaskOptions).
type ToolExecution struct {
	TaskSupport string `json:"taskSupport,omitempty"`
}

// Tool describes a tool. InputSchema and OutputSchema are JSON documents
// emitted verbatim.
type Tool struct {
	Name         string           `json:"name"`
	Title        string           `json:"title,omitempty"`
	Description  string           `json:"description,omitempty"`
	InputSchema  jsontext.Value   `json:"inputSchema"`
	OutputSchema jsontext.Value   `json:"outputSchema,omitempty"`
	Annotations  *ToolAnnotations `json:"annotations,omitempty"`
	Execution    *ToolExecution   `json:"execution,omitempty"`
	Icons        []Icon           `json:"icons,omitempty"`
	Meta         Meta             `json:"_meta,omitempty"`
	// Scopes are the OAuth scopes a caller needs to call the tool (see
	// "Scopes" in the package doc). Server-side only: never sent, and
	// empty in what a client decodes.
	Scopes []string `json:"-"`
}

// ListToolsResult answers tools/list.
type ListToolsResult struct {
	ResultFields
	CacheFields
	Tools      []*Tool `json:"tools"`
	NextCursor string  `json:"nextCursor,omitempty"`
}

// CallToolParams are the params of tools/call. InputResponses and
// RequestState are the modern-era multi-round-trip members.
type CallToolParams struct {
	Name      string         `json:"name"`
	Arguments jsontext.Value `json:"arguments,omitempty"`
	// Task is the raw task-augmentation request (2025-11-25: a
	// TaskMetadata object, possibly empty, which must still be sent). It
	// is handed to the handler as RequestHandlerExtra.TaskRequest.
	Task           jsontext.Value `json:"task,omitzero"`
	InputResponses jsontext.Value `json:"inputResponses,omitempty"`
	RequestState   *string        `json:"requestState,omitempty"`
	Meta           jsontext.Value `json:"_meta,omitempty"`
}

// CallToolResult answers tools/call.
type CallToolResult struct {
	ResultFields
	Content           []Content `json:"content"`
	StructuredContent any       `json:"structuredContent,omitempty"`
	IsError           bool      `json:"isError,omitzero"`
}

// Resource describes a readable resource.
type Resource struct {
	URI         string       `json:"uri"`
	Name        string       `json:"name"`
	Title       string       `json:"title,omitempty"`
	Description string       `json:"description,omitempty"`
	MIMEType    string       `json:"mimeType,omitempty"`
	Size        *int64       `json:"size,omitempty"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Icons       []Icon       `json:"icons,omitempty"`
	Meta        Meta         `json:"_meta,omitempty"`
	// Scopes are the OAuth scopes a caller needs to read the resource (see
	// "Scopes" in the package doc). Server-side only: never sent, and
	// empty in what a client decodes.
	Scopes []string `json:"-"`
}

// ResourceTemplate describes a family of resources by an RFC 6570 template.
type ResourceTemplate struct {
	URITemplate string       `json:"uriTemplate"`
	Name        string       `json:"name"`
	Title       string       `json:"title,omitempty"`
	Description string       `json:"description,omitempty"`
	MIMEType    string       `json:"mimeType,omitempty"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Icons       []Icon       `json:"icons,omitempty"`
	Meta        Meta         `json:"_meta,omitempty"`
	// Scopes are the OAuth scopes a caller needs to read a resource of the template (see
	// "Scopes" in the package doc). Server-side only: never sent, and
	// empty in what a client decodes.
	Scopes []string `json:"-"`
}

// ListResourcesResult answers resources/list.
type ListResourcesResult struct {
	ResultFields
	CacheFields
	Resources  []*Resource `json:"resources"`
	NextCursor string      `json:"nextCursor,omitempty"`
}

// ListResourceTemplatesResult answers resources/templates/list.
type ListResourceTemplatesResult struct {
	ResultFields
	CacheFields
	ResourceTemplates []*ResourceTemplate `json:"resourceTemplates"`
	NextCursor        string              `json:"nextCursor,omitempty"`
}

// ReadResourceParams are the params of resources/read.
type ReadResourceParams struct {
	URI            string         `json:"uri"`
	InputResponses jsontext.Value `json:"inputResponses,omitempty"`
	RequestState   *string        `json:"requestState,omitempty"`
	Meta           jsontext.Value `json:"_meta,omitempty"`
}

// ReadResourceResult answers resources/read.
type ReadResourceResult struct {
	ResultFields
	CacheFields
	Contents []*ResourceContents `json:"contents"`
}

// SubscribeParams are the params of resources/subscribe and unsubscribe.
type SubscribeParams struct {
	URI  string         `json:"uri"`
	Meta jsontext.Value `json:"_meta,omitempty"`
}

// ResourceUpdatedParams are the params of notifications/resources/updated.
type ResourceUpdatedParams struct {
	URI  string `json:"uri"`
	Meta Meta   `json:"_meta,omitempty"`
}

// PromptArgument describes one argument of a prompt.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitzero"`
}

// Prompt describes a prompt template.
type Prompt struct {
	Name        string            `json:"name"`
	Title       string            `json:"title,omitempty"`
	Description string            `json:"description,omitempty"`
	Arguments   []*PromptArgument `json:"arguments,omitempty"`
	Icons       []Icon            `json:"icons,omitempty"`
	Meta        Meta              `json:"_meta,omitempty"`
	// Scopes are the OAuth scopes a caller needs to get the prompt (see
	// "Scopes" in the package doc). Server-side only: never sent, and
	// empty in what a client decodes.
	Scopes []string `json:"-"`
}

// ListPromptsResult answers prompts/list.
type ListPromptsResult struct {
	ResultFields
	CacheFields
	Prompts    []*Prompt `json:"prompts"`
	NextCursor string    `json:"nextCursor,omitempty"`
}

// GetPromptParams are the params of prompts/get.
type GetPromptParams struct {
	Name           string            `json:"name"`
	Arguments      map[string]string `json:"arguments,omitempty"`
	InputResponses jsontext.Value    `json:"inputResponses,omitempty"`
	RequestState   *string           `json:"requestState,omitempty"`
	Meta           jsontext.Value    `json:"_meta,omitempty"`
}

// PromptMessage is one message of a prompt.
type PromptMessage struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// GetPromptResult answers prompts/get.
type GetPromptResult struct {
	ResultFields
	Description string           `json:"description,omitempty"`
	Messages    []*PromptMessage `json:"messages"`
}

// CompleteReference is the ref of completion/complete: a prompt
// ("ref/prompt", Name) or a resource template ("ref/resource", URI).
type CompleteReference struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
	URI  string `json:"uri,omitempty"`
}

// CompleteParams are the params of completion/complete.
type CompleteParams struct {
	Ref      CompleteReference `json:"ref"`
	Argument struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"argument"`
	Context *struct {
		Arguments map[string]string `json:"arguments,omitempty"`
	} `json:"context,omitempty"`
	Meta jsontext.Value `json:"_meta,omitempty"`
}

// Completion is the completion member of CompleteResult.
type Completion struct {
	Values  []string `json:"values"`
	Total   *int     `json:"total,omitempty"`
	HasMore bool     `json:"hasMore,omitzero"`
}

// CompleteResult answers completion/complete.
type CompleteResult struct {
	ResultFields
	Completion Completion `json:"completion"`
}

// setLevelParams are the params of logging/setLevel.
type setLevelParams struct {
	Level LoggingLevel   `json:"level"`
	Meta  jsontext.Value `json:"_meta,omitempty"`
}

// LoggingMessageParams are the params of notifications/message.
type LoggingMessageParams struct {
	Level  LoggingLevel `json:"level"`
	Logger string       `json:"logger,omitempty"`
	Data   any          `json:"data"`
	Meta   Meta         `json:"_meta,omitempty"`
}

// ProgressParams are the params of notifications/progress.
type ProgressParams struct {
	ProgressToken jsontext.Value `json:"progressToken"`
	Progress      float64        `json:"progress"`
	Total         *float64       `json:"total,omitempty"`
	Message       string         `json:"message,omitempty"`
	Meta          Meta           `json:"_meta,omitempty"`
}

// SamplingMessage is one message of a sampling request.
type SamplingMessage struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
	Meta    Meta    `json:"_meta,omitempty"`
}

// ModelPreferences guide the client's model choice.
type ModelPreferences struct {
	Hints                []ModelHint `json:"hints,omitempty"`
	CostPriority         *float64    `json:"costPriority,omitempty"`
	SpeedPriority        *float64    `json:"speedPriority,omitempty"`
	IntelligencePriority *float64    `json:"intelligencePriority,omitempty"`
}

// ModelHint names a model family.
type ModelHint struct {
	Name string `json:"name,omitempty"`
}

// CreateMessageParams are the params of sampling/createMessage.
type CreateMessageParams struct {
	Messages         []*SamplingMessage `json:"messages"`
	ModelPreferences *ModelPreferences  `json:"modelPreferences,omitempty"`
	SystemPrompt     string             `json:"systemPrompt,omitempty"`
	IncludeContext   string             `json:"includeContext,omitempty"`
	Temperature      *float64           `json:"temperature,omitempty"`
	MaxTokens        int64              `json:"maxTokens"`
	StopSequences    []string           `json:"stopSequences,omitempty"`
	Metadata         map[string]any     `json:"metadata,omitempty"`
	Tools            []*Tool            `json:"tools,omitempty"`
	ToolChoice       map[string]any     `json:"toolChoice,omitempty"`
	Meta             Meta               `json:"_meta,omitempty"`
}

// CreateMessageResult answers sampling/createMessage.
type CreateMessageResult struct {
	Role       string  `json:"role"`
	Content    Content `json:"content"`
	Model      string  `json:"model"`
	StopReason string  `json:"stopReason,omitempty"`
	Meta       Meta    `json:"_meta,omitempty"`
}

// ElicitParams are the params of elicitation/create. RequestedSchema is a
// flat object schema of primitives (form mode); URL and ElicitationID are
// for URL mode.
type ElicitParams struct {
	Mode            string         `json:"mode,omitempty"`
	Message         string         `json:"message"`
	RequestedSchema jsontext.Value `json:"requestedSchema,omitempty"`
	URL             string         `json:"url,omitempty"`
	ElicitationID   string         `json:"elicitationId,omitempty"`
	Meta            Meta           `json:"_meta,omitempty"`
}

// ElicitResult answers elicitation/create.
type ElicitResult struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
	Meta    Meta           `json:"_meta,omitempty"`
}

// ElicitationCompleteParams are the params of
// notifications/elicitation/complete (2025-11-25): the out-of-band step of
// the URL-mode elicitation ElicitationID is finished.
type ElicitationCompleteParams struct {
	ElicitationID string `json:"elicitationId"`
}

// ListRootsParams are the params of roots/list.
type ListRootsParams struct {
	Meta Meta `json:"_meta,omitempty"`
}

// Root is a filesystem or URI root the client exposes.
type Root struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
	Meta Meta   `json:"_meta,omitempty"`
}

// ListRootsResult answers roots/list.
type ListRootsResult struct {
	Roots []*Root `json:"roots"`
	Meta  Meta    `json:"_meta,omitempty"`
}

// InputRequest is one entry of InputRequiredResult.inputRequests: an
// elicitation, sampling or roots request without an id.
type InputRequest struct {
	Method string `json:"method"`
	Params any    `json:"params,omitzero"`
}

// InputRequiredResult is a modern-era answer asking the client for input
// before the request can complete.
type InputRequiredResult struct {
	ResultFields
	InputRequests map[string]*InputRequest `json:"inputRequests,omitempty"`
	RequestState  string                   `json:"requestState,omitempty"`
}

// SubscriptionFilter is the notifications member of subscriptions/listen.
type SubscriptionFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitzero"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitzero"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitzero"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
	// TaskIDs asks for notifications/tasks about these tasks (the
	// 2026-07-28 tasks extension; at most 64).
	TaskIDs []string `json:"taskIds,omitempty"`
}

// ListenParams are the params of subscriptions/listen.
type ListenParams struct {
	Notifications SubscriptionFilter `json:"notifications"`
	Meta          jsontext.Value     `json:"_meta,omitempty"`
}

// SubscriptionsAckParams are the params of
// notifications/subscriptions/acknowledged.
type SubscriptionsAckParams struct {
	Notifications SubscriptionFilter `json:"notifications"`
	Meta          Meta               `json:"_meta"`
}
