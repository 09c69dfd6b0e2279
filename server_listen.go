package pmcp

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// listen serves a modern subscriptions/listen request: the acknowledgement
// first, then every matching event tagged with the subscription id (the
// listen request's JSON-RPC id), until the client ends the subscription
// (notifications/cancelled on stdio, closing the stream on HTTP) or the
// server stops.
func (s *Server) listen(ctx context.Context, req *jsonrpc.Request, env *requestEnv, extra *RequestHandlerExtra) (Result, error) {
	if env.listenSend == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "subscriptions/listen needs a streaming transport"}
	}
	p, err := decodeParams[ListenParams](req.Params)
	if err != nil {
		return nil, err
	}
	// The filter keeps a bounded set of copied URIs; nothing of the
	// request (its body can be megabytes) stays referenced for the life of
	// the stream.
	uris, err := newURISet(p.Notifications.ResourceSubscriptions, s.subLimits())
	if err != nil {
		return nil, err
	}
	if err := authorize(extra, s.subscriptionScopes(p.Notifications.ResourceSubscriptions)); err != nil {
		return nil, err
	}
	// Honour only what the server's capabilities back.
	var ack SubscriptionFilter
	lf := &listenFilter{}
	caps := s.capabilities(EraModern) // listen exists only in the modern era
	if caps.Tools != nil {
		ack.ToolsListChanged = p.Notifications.ToolsListChanged
	}
	if caps.Prompts != nil {
		ack.PromptsListChanged = p.Notifications.PromptsListChanged
	}
	if caps.Resources != nil {
		ack.ResourcesListChanged = p.Notifications.ResourcesListChanged
		ack.ResourceSubscriptions = p.Notifications.ResourceSubscriptions
		lf.uris = uris
	}
	lf.tools, lf.prompts, lf.resources = ack.ToolsListChanged, ack.PromptsListChanged, ack.ResourcesListChanged
	taskq, stopTasks, err := s.watchTasks(ctx, extra, p.Notifications.TaskIDs, &ack)
	if err != nil {
		return nil, err
	}
	defer stopTasks()
	id := req.ID
	releaseParams(req, env)
	subMeta := func() Meta { return Meta{MetaSubscriptionID: id} }
	// The params of every list-changed notification of this stream, encoded
	// once (boxed once, too: the transport gets the same value each time).
	rawParams := subscriptionParams(id)
	var listParams any = rawParams
	l := s.newListener(lf.accept)
	// Register before acknowledging so no event between the two is lost;
	// events wait until the acknowledgement is written.
	s.listeners.add(l)
	detached := false
	defer func() {
		if !detached {
			s.listeners.remove(l)
		}
	}()
	if env.detach != nil && taskq == nil {
		// The transport may take the stream over (it then owns l) and
		// write its events without this goroutine.
		msg, err := encodeMessage(noID, NotificationSubscriptionsAck, &SubscriptionsAckParams{Notifications: ack, Meta: subMeta()})
		if err != nil {
			return nil, err
		}
		if detached = env.detach(msg, l, id, rawParams); detached {
			return nil, errListenEnded
		}
	}
	if err := env.listenSend(ctx, NotificationSubscriptionsAck, &SubscriptionsAckParams{Notifications: ack, Meta: subMeta()}); err != nil {
		return nil, err
	}
	send := func(ev event) error {
		params := listParams
		if ev.kind == resourceUpdated {
			params = &ResourceUpdatedParams{URI: ev.uri, Meta: subMeta()}
		}
		return env.listenSend(ctx, listMethods[ev.kind], params)
	}
	if taskq == nil && (env.streamDone == nil || env.streamDoneCtx != nil) {
		return nil, listenQuiet(ctx, env, l, send)
	}
	var tick <-chan time.Time
	if env.listenEvery > 0 {
		t := time.NewTicker(env.listenEvery)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return nil, errListenEnded
		case <-env.streamDone:
			return nil, errListenEnded
		case t := <-taskq:
			dt := *t // a hook's task is not ours to change
			dt.Meta = subMeta()
			if err := env.listenSend(ctx, NotificationTasks, &dt); err != nil {
				return nil, err
			}
		case <-l.ready:
			if err := l.drain(send); err != nil {
				return nil, err
			}
		case <-tick:
			if err := env.listenPing(); err != nil {
				return nil, err
			}
		}
	}
}

// listenQuiet is the wait loop of a listen stream without task ids whose
// stream end is a context: everything that can wake the stream (an event,
// the request's end, the stream's end, a keep-alive) signals l.ready, so
// the stream waits on that one channel. A fan-out then wakes each of
// thousands of streams with one channel receive instead of a select that
// locks and queues on four channels.
func listenQuiet(ctx context.Context, env *requestEnv, l *listener, send func(event) error) error {
	defer context.AfterFunc(ctx, l.wake)()
	done := env.streamDoneCtx
	if done != nil {
		defer context.AfterFunc(done, l.wake)()
	}
	var ping atomic.Bool
	var timer *time.Timer
	if d := env.listenEvery; d > 0 {
		timer = time.AfterFunc(d, func() {
			ping.Store(true)
			l.wake()
		})
		defer timer.Stop()
	}
	for {
		<-l.ready
		if ctx.Err() != nil || (done != nil && done.Err() != nil) {
			return errListenEnded
		}
		if err := l.drain(send); err != nil {
			return err
		}
		if ping.Swap(false) {
			if err := env.listenPing(); err != nil {
				return err
			}
			timer.Reset(env.listenEvery)
		}
	}
}

// subscriptionParams encodes the params of a list-changed notification of
// subscription id: only the _meta naming the subscription.
func subscriptionParams(id jsonrpc.ID) jsontext.Value {
	b := make([]byte, 0, 64)
	b = append(b, `{"_meta":{"`+MetaSubscriptionID+`":`...)
	b = id.AppendJSON(b)
	return append(b, "}}"...)
}

// errListenEnded reports that the client ended a subscription; transports
// send no response for it. It is deliberately not a *jsonrpc.Error: that
// type's errors.Is compares codes, so a marker with a JSON-RPC code would
// match every error a handler or middleware returns with that code.
var errListenEnded = errors.New("pmcp: subscription ended")

// releaseParams drops the references that the request and its per-request
// state hold into the transport's buffer (the raw params and the raw
// members scanned from them), for requests that outlive their decoding,
// such as a listen stream. Nothing reads them afterwards.
func releaseParams(req *jsonrpc.Request, env *requestEnv) {
	req.Params = nil
	if env.params != nil {
		*env.params = reqParams{}
	}
	if rs := env.state; rs != nil {
		rs.params = reqParams{}
		rs.meta = requestMeta{}
		rs.extra.RequestMeta = nil
		rs.pc.ClientInfo, rs.pc.ClientCapabilities = nil, nil
	}
}

// listFramePrefix holds, by list kind, the bytes of a list-changed SSE
// event up to its params: the same for every stream, so a stream's frame
// is this, its encoded params (subscriptionParams) and listFrameSuffix,
// without encoding a message per stream.
var listFramePrefix = func() (m [resourceUpdated]string) {
	for k := range m {
		m[k] = `event: message` + "\n" + `data: {"jsonrpc":"2.0","method":"` + listMethods[k] + `","params":`
	}
	return m
}()

const listFrameSuffix = "}\n\n"

// appendListFrame appends the SSE event of a list change of kind k whose
// params are raw: a JSON object without line breaks, as subscriptionParams
// makes. It is byte for byte the frame jsonrpc.AppendMessage gives.
func appendListFrame(dst []byte, k listKind, raw jsontext.Value) []byte {
	dst = append(dst, listFramePrefix[k]...)
	dst = append(dst, raw...)
	return append(dst, listFrameSuffix...)
}

// oneLineObject reports whether raw can go into appendListFrame as is: a
// JSON object (without leading whitespace) on one line, as
// subscriptionParams makes. Anything else takes the general encoder.
func oneLineObject(raw jsontext.Value) bool {
	return len(raw) > 0 && raw[0] == '{' && bytes.IndexByte(raw, '\n') < 0 && bytes.IndexByte(raw, '\r') < 0
}

// listKindOf returns the list kind of a list-changed method.
func listKindOf(method string) (listKind, bool) {
	for k := listTools; k < resourceUpdated; k++ {
		if listMethods[k] == method {
			return k, true
		}
	}
	return 0, false
}
