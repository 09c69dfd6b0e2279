package pmcp

import (
	"context"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// listen serves a modern subscriptions/listen request: the acknowledgement
// first, then every matching event tagged with the subscription id (the
// listen request's JSON-RPC id), until the client ends the subscription
// (notifications/cancelled on stdio, closing the stream on HTTP) or the
// server stops.
func (s *Server) listen(ctx context.Context, req *jsonrpc.Request, env *requestEnv) (Result, error) {
	if env.listenSend == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "subscriptions/listen needs a streaming transport"}
	}
	p, err := decodeParams[ListenParams](req.Params)
	if err != nil {
		return nil, err
	}
	// Honour only what the server's capabilities back.
	var f SubscriptionFilter
	if s.tools.len() > 0 {
		f.ToolsListChanged = p.Notifications.ToolsListChanged
	}
	if s.prompts.len() > 0 {
		f.PromptsListChanged = p.Notifications.PromptsListChanged
	}
	if s.resources.len() > 0 || s.templates.len() > 0 {
		f.ResourcesListChanged = p.Notifications.ResourcesListChanged
		f.ResourceSubscriptions = p.Notifications.ResourceSubscriptions
	}
	subMeta := func() Meta { return Meta{MetaSubscriptionID: req.ID} }
	l := s.newListener(filterAccept(&f))
	// Register before acknowledging so no event between the two is lost;
	// events queue until the acknowledgement is written.
	s.listeners.add(l)
	defer s.listeners.remove(l)
	if err := env.listenSend(ctx, NotificationSubscriptionsAck, &SubscriptionsAckParams{Notifications: f, Meta: subMeta()}); err != nil {
		return nil, err
	}
	for {
		select {
		case <-ctx.Done():
			return nil, errListenEnded
		case <-env.streamDone:
			return nil, errListenEnded
		case ev := <-l.q:
			var params any = &struct {
				Meta Meta `json:"_meta"`
			}{subMeta()}
			if ev.kind == resourceUpdated {
				params = &ResourceUpdatedParams{URI: ev.uri, Meta: subMeta()}
			}
			if err := env.listenSend(ctx, listMethods[ev.kind], params); err != nil {
				return nil, err
			}
		}
	}
}

// errListenEnded reports that the client ended a subscription; transports
// send no response for it.
var errListenEnded = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "subscription ended"}
