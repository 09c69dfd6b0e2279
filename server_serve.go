package pmcp

import (
	"context"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/internal/rpcconn"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// Serve serves one stream connection (stdio, an in-memory pipe, any
// jsonrpc.Stream) until the peer closes it or ctx is cancelled.
//
// The era is decided per request: a request whose params carry modern
// _meta (protocolVersion, clientCapabilities) is served statelessly under
// 2026-07-28; otherwise the connection speaks the legacy protocol, which
// starts with initialize. Requests run concurrently, bounded by
// ServerOptions.MaxConcurrentRequests, except initialize: it is answered
// before the next message is read, so a client may pipeline requests
// behind it. When the peer closes its side,
// requests in flight finish and their replies are written before Serve
// returns. Serve closes st before it returns.
//
// Serve returns nil when the peer closes its side cleanly (end of input),
// ctx.Err() when ctx ends it, and otherwise the error that stopped reading.
func (s *Server) Serve(ctx context.Context, st jsonrpc.Stream) error {
	ss := &session{}
	var conn *rpcconn.Conn
	// The connection's back-channel, made once (conn is set below, before
	// any request is read).
	var (
		notify func(ctx context.Context, method string, params any) error
		call   func(ctx context.Context, method string, params any) (jsontext.Value, error)
	)
	ti := streamTransport(st)
	h := rpcconn.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.IsNotification() {
			if s.nchain == nil {
				s.onNotification(req, func() context.Context { return ctx }, func(id jsonrpc.ID) { conn.CancelIncoming(id) })
			} else {
				s.notification(ctx, &Notification{Method: req.Method, Params: req.Params, Transport: ti},
					func(ctx context.Context) {
						s.onNotification(req, func() context.Context { return ctx }, func(id jsonrpc.ID) { conn.CancelIncoming(id) })
					})
			}
			return nil, nil
		}
		rs := new(reqState)
		env := &rs.env
		*env = requestEnv{session: ss, notify: notify, call: call, listenSend: notify, streamDone: conn.ReadDone(), state: rs, transport: &ti}
		res, err := s.handle(ctx, req, env)
		res, err = s.streamAccess(ctx, req, rs, res, err)
		if err == errListenEnded {
			return nil, rpcconn.ErrNoResponse
		}
		return res, err
	})
	conn = rpcconn.NewConn(st, h, rpcconn.ConnOptions{
		MaxConcurrent: s.opts.MaxConcurrentRequests,
		// initialize finishes before the next message is read, so requests
		// pipelined behind it (without waiting for its reply) find the
		// session initialized. Everything else runs concurrently.
		Barrier: isInitialize,
		// json.Marshal, with a direct encoder for common results.
		MarshalResult: marshalResult,
		Logger:        s.logger,
		// A server-to-client request abandoned by its handler (timeout or
		// cancellation) is cancelled at the client too.
		OnCallCancelled: func(id jsonrpc.ID, method string, cause error) {
			ctx, cancel := context.WithTimeout(context.Background(), cancelNotifyTimeout)
			defer cancel()
			_ = conn.Notify(ctx, NotificationCancelled, &cancelledParams{RequestID: id, Reason: cause.Error()})
		},
	})
	notify, call = conn.Notify, conn.Call
	ss.notify = conn.Notify

	// Legacy list-changed and resource-updated notifications for this
	// connection, written by one pump goroutine owned by Serve.
	l := s.newListener(ss.accept)
	s.listeners.add(l)
	pumpCtx, stopPump := context.WithCancel(ctx)
	pumpDone := make(chan struct{})
	go func() {
		defer close(pumpDone)
		for {
			select {
			case <-pumpCtx.Done():
				return
			case <-l.ready:
				_ = l.drain(func(ev event) error {
					var params any = struct{}{}
					if ev.kind == resourceUpdated {
						params = &ResourceUpdatedParams{URI: ev.uri}
					}
					return conn.Notify(pumpCtx, listMethods[ev.kind], params)
				})
			}
		}
	}()
	err := conn.Run(ctx)
	ss.finish()
	_ = conn.Close()
	s.listeners.remove(l)
	stopPump()
	<-pumpDone
	return err
}

func isInitialize(req *jsonrpc.Request) bool { return req.Method == MethodInitialize }

// cancelNotifyTimeout bounds the write of a notifications/cancelled.
const cancelNotifyTimeout = 5 * time.Second

type cancelledParams struct {
	RequestID jsonrpc.ID `json:"requestId"`
	Reason    string     `json:"reason,omitempty"`
}

// onNotification handles a client notification, for every transport (the
// stream connections here, the Streamable HTTP sessions in
// legacyNotification). It runs inline (on the read loop, in the POST), so
// it must stay quick. cancel cancels the client's request a
// notifications/cancelled names, if it still runs; hookCtx returns the
// context a hook runs in, asked only when a hook runs (an HTTP session
// makes its context on demand: an idle session keeps none).
func (s *Server) onNotification(req *jsonrpc.Request, hookCtx func() context.Context, cancel func(jsonrpc.ID)) {
	switch req.Method {
	case NotificationCancelled:
		var p struct {
			RequestID jsonrpc.ID `json:"requestId"`
		}
		if len(req.Params) > 0 && json.Unmarshal(req.Params, &p) == nil && p.RequestID.IsValid() {
			cancel(p.RequestID)
		}
	case NotificationRootsListChanged:
		if s.opts.RootsListChanged != nil {
			s.opts.RootsListChanged(hookCtx())
		}
	}
	// notifications/initialized and notifications/progress need no action:
	// requests are accepted as soon as initialize has been answered.
}
