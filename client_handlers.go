package pmcp

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// errSubscriptionEndedByServer is the cancellation cause of a Listen call
// whose subscription the server ended with notifications/cancelled.
var errSubscriptionEndedByServer = errors.New("pmcp: the server ended the subscription")

// clientEvent is a notification waiting for the notification worker.
type clientEvent struct {
	method string
	params jsontext.Value
}

// handle serves what the server sends: notifications, and in the legacy
// era its requests, through the client handler of the method's row
// (method_table.go): ping, sampling, elicitation, roots, and the tasks/*
// requests about hosted tasks.
func (s *ClientSession) handle(ctx context.Context, req *jsonrpc.Request) (any, error) {
	if req.IsNotification() {
		s.onNotification(ctx, req)
		return nil, nil
	}
	s.handlers.Add(1)
	defer s.handlers.Add(-1)
	row := methodOf(req.Method)
	// 2026-07-28 has no server-to-client requests: input comes through
	// input_required results. Hosted tasks are served only when the client
	// hosts them.
	if row == nil || row.clientServe == nil || s.Era() == EraModern || (row.capability == capTasks && !s.c.opts.HostTasks) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found: " + capPeerString(req.Method)}
	}
	if !row.capability.input() {
		return row.clientServe(s, ctx, req)
	}
	// A request for input: task-augmented (sampling and elicitation
	// only) it becomes a hosted task; otherwise it is answered through
	// the client middleware and the row's handler (serveInput).
	if row.capability != capRoots && s.c.opts.HostTasks && hasTaskParam(req.Params) {
		return s.hostTask(req)
	}
	res, err := s.input(ctx, req.ID, req.Method, req.Params)
	switch {
	case errors.Is(err, ErrNoInputHandler):
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: err.Error()}
	case errors.Is(err, ErrMalformedInputRequest):
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	return res, err
}

// servePing answers the server's ping.
func (s *ClientSession) servePing(context.Context, *jsonrpc.Request) (any, error) {
	return &EmptyResult{}, nil
}

// onNotification runs on the connection's read loop. Progress is routed
// inline (so that a call's progress is delivered before its result); the
// rest goes through the bounded queue to the notification worker.
func (s *ClientSession) onNotification(ctx context.Context, req *jsonrpc.Request) {
	h := &s.c.opts.Notifications
	switch req.Method {
	case NotificationProgress:
		s.onProgress(ctx, req.Params)
	case NotificationCancelled:
		var p struct {
			RequestID jsonrpc.ID `json:"requestId"`
		}
		if Unmarshal(req.Params, &p) != nil || !p.RequestID.IsValid() {
			return
		}
		s.listenMu.Lock()
		end, ok := s.listens[p.RequestID]
		s.listenMu.Unlock()
		if ok {
			end(errSubscriptionEndedByServer)
			return
		}
		s.conn.CancelIncoming(p.RequestID) // a legacy server cancelling its own request
	case NotificationMessage:
		switch {
		case h.LogMessage == nil:
		case s.c.opts.SyncLogMessages:
			s.handlers.Add(1)
			s.runHandler(NotificationMessage, func() { s.dispatchEvent(clientEvent{method: req.Method, params: req.Params}) })
			s.handlers.Add(-1)
		default:
			s.enqueue(req)
		}
	case NotificationToolsListChanged:
		if h.ToolsListChanged != nil {
			s.enqueue(req)
		}
	case NotificationPromptsListChanged:
		if h.PromptsListChanged != nil {
			s.enqueue(req)
		}
	case NotificationResourcesListChanged:
		if h.ResourcesListChanged != nil {
			s.enqueue(req)
		}
	case NotificationResourceUpdated:
		if h.ResourceUpdated != nil {
			s.enqueue(req)
		}
	case NotificationSubscriptionsAck:
		if h.SubscriptionAcknowledged != nil {
			s.enqueue(req)
		}
	case NotificationElicitationComplete:
		if h.ElicitationComplete != nil && s.Era() == EraLegacy {
			s.enqueue(req)
		}
	case NotificationTasksStatus, NotificationTasks:
		if h.TaskStatus != nil {
			s.enqueue(req)
		}
	}
}

// onProgress routes a progress notification to the handler of the call
// that owns its token. Unknown and late tokens are ignored.
func (s *ClientSession) onProgress(ctx context.Context, params jsontext.Value) {
	var p ProgressParams
	if Unmarshal(params, &p) != nil {
		return
	}
	id, err := strconv.ParseInt(string(p.ProgressToken), 10, 64)
	if err != nil {
		return // not one of ours: the client only mints integer tokens
	}
	s.progressMu.Lock()
	h := s.progress[id]
	s.progressMu.Unlock()
	if h == nil {
		return
	}
	p.Message = capPeerString(p.Message)
	s.handlers.Add(1)
	s.runHandler(NotificationProgress, func() { h(ctx, &p) })
	s.handlers.Add(-1)
}

// maxQueuedBytes bounds the params bytes waiting in the notification
// queue, whatever the number of entries.
const maxQueuedBytes = 16 << 20

// enqueue hands a notification to the worker, dropping it (and counting)
// when the queue is full.
func (s *ClientSession) enqueue(req *jsonrpc.Request) {
	n := int64(len(req.Params))
	if s.queuedBytes.Add(n) > maxQueuedBytes {
		s.queuedBytes.Add(-n)
		s.drop(req.Method)
		return
	}
	select {
	case s.queue <- clientEvent{method: req.Method, params: req.Params}:
	default:
		s.queuedBytes.Add(-n)
		s.drop(req.Method)
	}
}

func (s *ClientSession) drop(method string) {
	n := s.dropped.Add(1)
	s.c.log.Warn("pmcp: client notification queue full; notification dropped", "method", method, "dropped_total", n)
}

// worker runs the notification handlers, one at a time, until the session
// ends.
func (s *ClientSession) worker() {
	defer close(s.workerDone)
	for {
		select {
		case <-s.ctx.Done():
			// The notifications received before the session ended
			// (a call's log records, sent before its response) are
			// still handed over, with the session's ended ctx; the
			// queue is bounded, so this ends.
			for {
				select {
				case ev := <-s.queue:
					s.deliver(ev)
				default:
					return
				}
			}
		case ev := <-s.queue:
			s.deliver(ev)
		}
	}
}

// deliver hands one queued notification to its handler.
func (s *ClientSession) deliver(ev clientEvent) {
	s.queuedBytes.Add(-int64(len(ev.params)))
	s.handlers.Add(1)
	s.runHandler(ev.method, func() { s.dispatchEvent(ev) })
	s.handlers.Add(-1)
}

// runHandler calls fn, turning a panic into a log record.
func (s *ClientSession) runHandler(method string, fn func()) {
	defer func() {
		if v := recover(); v != nil {
			s.c.log.Error("pmcp: client notification handler panicked", "method", method, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		}
	}()
	fn()
}

func (s *ClientSession) dispatchEvent(ev clientEvent) {
	h := &s.c.opts.Notifications
	ctx := s.ctx
	switch ev.method {
	case NotificationMessage:
		var p LoggingMessageParams
		if s.decodeEvent(ev, &p) && p.Level >= LoggingLevel(s.logLevel.Load()) {
			p.Logger = capPeerString(p.Logger)
			h.LogMessage(ctx, &p)
		}
	case NotificationToolsListChanged:
		h.ToolsListChanged(ctx)
	case NotificationPromptsListChanged:
		h.PromptsListChanged(ctx)
	case NotificationResourcesListChanged:
		h.ResourcesListChanged(ctx)
	case NotificationResourceUpdated:
		var p ResourceUpdatedParams
		if s.decodeEvent(ev, &p) {
			h.ResourceUpdated(ctx, &p)
		}
	case NotificationSubscriptionsAck:
		var p SubscriptionsAckParams
		if s.decodeEvent(ev, &p) {
			h.SubscriptionAcknowledged(ctx, &p)
		}
	case NotificationElicitationComplete:
		var p ElicitationCompleteParams
		// The id is passed as sent: it is matched against the one of the
		// -32042 error, not displayed.
		if s.decodeEvent(ev, &p) && p.ElicitationID != "" {
			h.ElicitationComplete(ctx, &p)
		}
	case NotificationTasksStatus, NotificationTasks:
		var w wireTask
		if s.decodeEvent(ev, &w) && w.TaskID != "" {
			st := w.status()
			h.TaskStatus(ctx, st)
			if st.Terminal() {
				s.taskEnded(st.TaskID)
			}
		}
	}
}

func (s *ClientSession) decodeEvent(ev clientEvent, out any) bool {
	params := ev.params
	if len(params) == 0 {
		params = jsontext.Value("{}")
	}
	if err := Unmarshal(params, out); err != nil {
		s.c.log.Warn("pmcp: client: malformed notification dropped", "method", ev.method, "error", capPeerString(err.Error()))
		return false
	}
	return true
}
