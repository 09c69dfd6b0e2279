package pmcp

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/internal/peer"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// More errors of the client API; test with errors.Is or errors.As.
var (
	// ErrNotSupportedInEra: the method does not exist in the negotiated
	// protocol era (for example Ping in 2026-07-28, Listen in 2025-11-25).
	// The message names the replacement.
	ErrNotSupportedInEra = errors.New("pmcp: not supported in the negotiated protocol era")
	// ErrTooManyPages: a listing still had more pages after
	// ClientOptions.MaxPages pages, or the server repeated a cursor.
	ErrTooManyPages = errors.New("pmcp: too many pages")
	// ErrNoStructuredContent: CallToolTyped got a result with neither
	// structuredContent nor a JSON text block to decode.
	ErrNoStructuredContent = errors.New("pmcp: tool result has no structured content")
)

// ToolError is returned by CallToolTyped when the tool reported a failure
// (isError). Message is the result's text, capped.
type ToolError struct {
	Tool    string
	Message string
	Result  *CallToolResult
}

// Error implements error.
func (e *ToolError) Error() string {
	return fmt.Sprintf("pmcp: tool %q failed: %s", capPeerString(e.Tool), e.Message)
}

func (s *ClientSession) requireEra(want Era, what, instead string) error {
	if e := s.Era(); e != want {
		return fmt.Errorf("%w: %s is not part of protocol %s (%s era); %s", ErrNotSupportedInEra, what, s.ProtocolVersion(), e, instead)
	}
	return nil
}

// listPage fetches one page of a list method.
func listPage[R any](ctx context.Context, s *ClientSession, method, cursor string) (*R, error) {
	meta, err := s.requestMeta(nil, nil)
	if err != nil {
		return nil, err
	}
	raw, err := s.call(ctx, method, &paginatedParams{Cursor: cursor, Meta: meta})
	if err != nil {
		return nil, err
	}
	r := new(R)
	if err := decodeResult(method, raw, r); err != nil {
		return nil, err
	}
	return r, nil
}

// listAll iterates every item of a list method, page by page, bounded by
// ClientOptions.MaxPages. Nil items are skipped.
func listAll[E, R any](ctx context.Context, s *ClientSession, method string, get func(*R) ([]*E, string)) iter.Seq2[*E, error] {
	return func(yield func(*E, error) bool) {
		cursor := ""
		max := s.c.maxPages()
		for page := 1; ; page++ {
			r, err := listPage[R](ctx, s, method, cursor)
			if err != nil {
				yield(nil, err)
				return
			}
			items, next := get(r)
			for _, it := range items {
				if it != nil && !yield(it, nil) {
					return
				}
			}
			switch {
			case next == "":
				return
			case next == cursor:
				yield(nil, fmt.Errorf("%w: %s: the server repeated cursor %q", ErrTooManyPages, method, capPeerString(next)))
				return
			case page >= max:
				yield(nil, fmt.Errorf("%w: %s has more than %d pages", ErrTooManyPages, method, max))
				return
			}
			cursor = next
		}
	}
}

func collect[E any](seq iter.Seq2[*E, error]) ([]*E, error) {
	var out []*E
	for it, err := range seq {
		if err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, nil
}

// ListTools returns one page of tools/list, starting at cursor ("" for the
// first page).
func (s *ClientSession) ListTools(ctx context.Context, cursor string) (*ListToolsResult, error) {
	return listPage[ListToolsResult](ctx, s, MethodToolsList, cursor)
}

// AllTools returns every tool, fetching pages as needed (at most
// ClientOptions.MaxPages; ErrTooManyPages past that). ListTools fetches
// one page: use it to stop early.
func (s *ClientSession) AllTools(ctx context.Context) ([]*Tool, error) {
	return collect(listAll(ctx, s, MethodToolsList, func(r *ListToolsResult) ([]*Tool, string) { return r.Tools, r.NextCursor }))
}

// ListResources returns one page of resources/list.
func (s *ClientSession) ListResources(ctx context.Context, cursor string) (*ListResourcesResult, error) {
	return listPage[ListResourcesResult](ctx, s, MethodResourcesList, cursor)
}

// AllResources returns every resource (see AllTools).
func (s *ClientSession) AllResources(ctx context.Context) ([]*Resource, error) {
	return collect(listAll(ctx, s, MethodResourcesList, func(r *ListResourcesResult) ([]*Resource, string) { return r.Resources, r.NextCursor }))
}

// ListResourceTemplates returns one page of resources/templates/list.
func (s *ClientSession) ListResourceTemplates(ctx context.Context, cursor string) (*ListResourceTemplatesResult, error) {
	return listPage[ListResourceTemplatesResult](ctx, s, MethodResourcesTemplatesList, cursor)
}

// AllResourceTemplates returns every resource template (see AllTools).
func (s *ClientSession) AllResourceTemplates(ctx context.Context) ([]*ResourceTemplate, error) {
	return collect(listAll(ctx, s, MethodResourcesTemplatesList, func(r *ListResourceTemplatesResult) ([]*ResourceTemplate, string) {
		return r.ResourceTemplates, r.NextCursor
	}))
}

// ListPrompts returns one page of prompts/list.
func (s *ClientSession) ListPrompts(ctx context.Context, cursor string) (*ListPromptsResult, error) {
	return listPage[ListPromptsResult](ctx, s, MethodPromptsList, cursor)
}

// AllPrompts returns every prompt (see AllTools).
func (s *ClientSession) AllPrompts(ctx context.Context) ([]*Prompt, error) {
	return collect(listAll(ctx, s, MethodPromptsList, func(r *ListPromptsResult) ([]*Prompt, string) { return r.Prompts, r.NextCursor }))
}

// encodeArguments marshals tool arguments, which must be a JSON object
// (or nil for none).
func encodeArguments(args any) (jsontext.Value, error) {
	if args == nil {
		return nil, nil
	}
	b, err := Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("pmcp: encode tool arguments: %w", err)
	}
	raw := jsontext.Value(b)
	switch raw.Kind() {
	case '{':
		return raw, nil
	case 'n':
		return nil, nil
	}
	return nil, fmt.Errorf("pmcp: tool arguments must encode as a JSON object, not %s", raw.Kind())
}

// CallTool calls a tool with args (a struct, a map, a jsontext.Value: any
// value that encodes as a JSON object; nil for none). A tool that fails
// reports it in the result (IsError), not as an error; errors are
// protocol and transport failures. In the modern era, input the server
// asks for is obtained from the client's handlers and the call is retried
// until it completes (see ClientOptions.MaxInputRounds).
func (s *ClientSession) CallTool(ctx context.Context, name string, args any, opts ...CallOption) (*CallToolResult, error) {
	res, _, err := s.callTool(ctx, name, args, opts)
	return res, err
}

func (s *ClientSession) callTool(ctx context.Context, name string, args any, opts []CallOption) (*CallToolResult, jsontext.Value, error) {
	a, err := encodeArguments(args)
	if err != nil {
		return nil, nil, err
	}
	var res CallToolResult
	decoded := false // res holds the last round's result
	version := metaVersion(s.negotiation().meta[MetaProtocolVersion])
	raw, rt, err := s.roundTripDecoding(ctx, MethodToolsCall, opts, func(meta, responses jsontext.Value, state *string) any {
		if op, ok := encodeCallTool(name, a, responses, state, meta, version); ok {
			return op
		}
		return &CallToolParams{Name: name, Arguments: a, InputResponses: responses, RequestState: state, Meta: meta}
	}, func(raw jsontext.Value) (string, bool) {
		decoded = decodeToolResult(ctx, raw, &res)
		return res.ResultType, decoded
	})
	if err != nil {
		return nil, nil, err
	}
	if rt == ResultTypeTask {
		// CallTool never asks for a task (CallToolTask does).
		return nil, nil, fmt.Errorf("%w %q in the result of %s: the call did not ask for a task", ErrUnexpectedResultType, rt, MethodToolsCall)
	}
	if !decoded {
		if err := decodeInto(MethodToolsCall, raw, &res); err != nil {
			return nil, nil, err
		}
	}
	return &res, raw, nil
}

// CallToolTyped calls a tool and decodes its structuredContent into Out
// (when the result has none, a single JSON text block is decoded
// instead). A tool failure (isError) is returned as a *ToolError; the raw
// result is returned whenever there is one.
func CallToolTyped[Out any](ctx context.Context, s *ClientSession, name string, args any, opts ...CallOption) (Out, *CallToolResult, error) {
	var out Out
	res, raw, err := s.callTool(ctx, name, args, opts)
	if err != nil {
		return out, nil, err
	}
	if res.IsError {
		return out, res, &ToolError{Tool: name, Message: capPeerString(resultText(res)), Result: res}
	}
	var sc struct {
		StructuredContent jsontext.Value `json:"structuredContent"`
	}
	_ = Unmarshal(raw, &sc)
	body := sc.StructuredContent
	if len(body) == 0 || body.Kind() == 'n' {
		body = nil
		if len(res.Content) == 1 {
			if t, ok := res.Content[0].(*TextContent); ok && jsontext.Value(t.Text).IsValid() {
				body = jsontext.Value(t.Text)
			}
		}
	}
	if body == nil {
		return out, res, fmt.Errorf("%w: tool %q", ErrNoStructuredContent, capPeerString(name))
	}
	if err := Unmarshal(body, &out); err != nil {
		return out, res, fmt.Errorf("pmcp: tool %q: decode structured content: %s", capPeerString(name), capPeerString(err.Error()))
	}
	return out, res, nil
}

// resultText joins the text blocks of a tool result.
func resultText(res *CallToolResult) string {
	var b []byte
	for _, c := range res.Content {
		if t, ok := c.(*TextContent); ok {
			if len(b) > 0 {
				b = append(b, '\n')
			}
			b = append(b, t.Text...)
			if len(b) > peer.MaxStringBytes {
				break
			}
		}
	}
	return string(b)
}

// ReadResource reads the resource at uri. In the modern era it may go
// through input rounds like CallTool. A not-found answer in the legacy
// code (-32002) also matches ErrResourceNotFound; the modern code is the
// generic -32602.
func (s *ClientSession) ReadResource(ctx context.Context, uri string, opts ...CallOption) (*ReadResourceResult, error) {
	raw, _, err := s.roundTrip(ctx, MethodResourcesRead, opts, func(meta, responses jsontext.Value, state *string) any {
		return &ReadResourceParams{URI: uri, InputResponses: responses, RequestState: state, Meta: meta}
	})
	if err != nil {
		var re *jsonrpc.Error
		if errors.As(err, &re) && re.Code == jsonrpc.CodeResourceNotFound {
			return nil, fmt.Errorf("%w: %w", ErrResourceNotFound, err)
		}
		return nil, err
	}
	var res ReadResourceResult
	if err := decodeInto(MethodResourcesRead, raw, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// GetPrompt renders the prompt name with args. In the modern era it may go
// through input rounds like CallTool.
func (s *ClientSession) GetPrompt(ctx context.Context, name string, args map[string]string, opts ...CallOption) (*GetPromptResult, error) {
	raw, _, err := s.roundTrip(ctx, MethodPromptsGet, opts, func(meta, responses jsontext.Value, state *string) any {
		return &GetPromptParams{Name: name, Arguments: args, InputResponses: responses, RequestState: state, Meta: meta}
	})
	if err != nil {
		return nil, err
	}
	var res GetPromptResult
	if err := decodeInto(MethodPromptsGet, raw, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Complete asks for completions of a prompt or resource-template argument.
// p is not modified.
func (s *ClientSession) Complete(ctx context.Context, p *CompleteParams, opts ...CallOption) (*CompleteResult, error) {
	if p == nil {
		return nil, errors.New("pmcp: Complete: nil params")
	}
	cp := *p
	meta, done, err := s.callMeta(callConfigOf(opts))
	if err != nil {
		return nil, err
	}
	defer done()
	cp.Meta = meta
	raw, err := s.call(ctx, MethodCompletionComplete, &cp)
	if err != nil {
		return nil, err
	}
	var res CompleteResult
	if err := decodeResult(MethodCompletionComplete, raw, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Ping checks that the server answers (legacy era only: 2026-07-28 removed
// ping).
func (s *ClientSession) Ping(ctx context.Context) error {
	if err := s.requireEra(EraLegacy, "ping", "any cheap request (server/discover) shows liveness"); err != nil {
		return err
	}
	raw, err := s.call(ctx, MethodPing, nil)
	if err != nil {
		return err
	}
	return decodeResult(MethodPing, raw, &EmptyResult{})
}

// SetLoggingLevel sets the session-wide minimum level of the server's log
// records, and of those the session delivers to
// Notifications.LogMessage (legacy era only; in 2026-07-28 the level
// travels with every request: set ClientOptions.LogLevel).
func (s *ClientSession) SetLoggingLevel(ctx context.Context, level LoggingLevel) error {
	if err := s.requireEra(EraLegacy, "logging/setLevel", "set ClientOptions.LogLevel, which is sent with every request"); err != nil {
		return err
	}
	if level < LevelDebug || level > LevelEmergency {
		return fmt.Errorf("pmcp: SetLoggingLevel: invalid level %v", level)
	}
	raw, err := s.call(ctx, MethodLoggingSetLevel, &setLevelParams{Level: level})
	if err != nil {
		return err
	}
	if err := decodeResult(MethodLoggingSetLevel, raw, &EmptyResult{}); err != nil {
		return err
	}
	s.logLevel.Store(uint32(level))
	return nil
}

// Subscribe asks for notifications/resources/updated about uri (legacy era
// only; in 2026-07-28 use Listen with SubscriptionFilter.ResourceSubscriptions).
// Updates reach ClientNotificationHandlers.ResourceUpdated.
func (s *ClientSession) Subscribe(ctx context.Context, uri string) error {
	return s.subscription(ctx, MethodResourcesSubscribe, uri)
}

// Unsubscribe cancels Subscribe (legacy era only).
func (s *ClientSession) Unsubscribe(ctx context.Context, uri string) error {
	return s.subscription(ctx, MethodResourcesUnsubscribe, uri)
}

func (s *ClientSession) subscription(ctx context.Context, method, uri string) error {
	if err := s.requireEra(EraLegacy, method, "use Listen with SubscriptionFilter.ResourceSubscriptions"); err != nil {
		return err
	}
	raw, err := s.call(ctx, method, &SubscribeParams{URI: uri})
	if err != nil {
		return err
	}
	return decodeResult(method, raw, &EmptyResult{})
}

// NotifyRootsListChanged tells the server that the client's roots changed
// (legacy era only; a modern server asks for roots when it needs them).
func (s *ClientSession) NotifyRootsListChanged(ctx context.Context) error {
	if err := s.requireEra(EraLegacy, NotificationRootsListChanged, "modern servers ask for roots on every request that needs them"); err != nil {
		return err
	}
	return s.notify(ctx, NotificationRootsListChanged, nil)
}

// Listen opens a modern subscriptions/listen subscription for filter and
// keeps it open until ctx ends, delivering the server's acknowledgement
// and events to ClientOptions.Notifications (SubscriptionAcknowledged,
// the list-changed handlers, ResourceUpdated, and TaskStatus for
// filter.TaskIDs). No call timeout applies.
//
// It returns ctx's error when ctx ends (the usual way to stop; the server
// is told with notifications/cancelled), nil when the server ends the
// subscription, or the error that ended it. Several subscriptions may be
// open at once. In the legacy era it fails with ErrNotSupportedInEra: a
// legacy server pushes list changes to the handlers without being asked,
// and resource updates follow Subscribe.
func (s *ClientSession) Listen(ctx context.Context, filter SubscriptionFilter) error {
	if err := s.requireEra(EraModern, MethodSubscriptionsListen, "list changes arrive on their own; use Subscribe for resource updates"); err != nil {
		return err
	}
	// Task status needs the tasks extension declared on the request.
	meta, err := s.requestMeta(&callConfig{tasks: len(filter.TaskIDs) > 0}, nil)
	if err != nil {
		return err
	}
	lctx, end := context.WithCancelCause(ctx)
	defer end(nil)
	var id jsonrpc.ID
	slot := &idSlot{onID: func(got jsonrpc.ID) {
		id = got
		s.listenMu.Lock()
		s.listens[got] = end
		s.listenMu.Unlock()
	}}
	defer func() {
		if id.IsValid() {
			s.listenMu.Lock()
			delete(s.listens, id)
			s.listenMu.Unlock()
		}
	}()
	raw, err := s.send(context.WithValue(lctx, idSlotKey{}, slot), MethodSubscriptionsListen,
		&ListenParams{Notifications: filter, Meta: meta})
	if err != nil {
		switch {
		case errors.Is(context.Cause(lctx), errSubscriptionEndedByServer):
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		}
		return peerError(MethodSubscriptionsListen, err)
	}
	return decodeResult(MethodSubscriptionsListen, raw, &EmptyResult{})
}
