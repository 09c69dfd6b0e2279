package pmcp

import (
	"context"
	"time"
)

// ServerEventKind says what changed.
type ServerEventKind uint8

// The events a Server fans out to its listeners (legacy GET streams and
// modern subscriptions/listen streams).
const (
	ServerEventToolsListChanged ServerEventKind = iota + 1
	ServerEventPromptsListChanged
	ServerEventResourcesListChanged
	// ServerEventResourceUpdated carries the URI of the changed resource.
	ServerEventResourceUpdated
)

// ServerEvent is one change every replica's listeners must hear about. It
// carries the change, not a wire frame: each replica renders and filters it
// for its own listeners.
type ServerEvent struct {
	Kind ServerEventKind
	URI  string // ServerEventResourceUpdated only
}

// EventBus carries ServerEvents between the replicas of one server behind
// a load balancer, so that a tool registered on one replica produces
// list_changed on listen and GET streams held by every replica. Delivery
// may be at most once: the events are hints after which clients re-list.
type EventBus interface {
	// Publish sends ev to the subscribers of every replica, this one
	// included.
	Publish(ctx context.Context, ev ServerEvent) error
	// Subscribe calls deliver for every event published after Subscribe
	// returns, by any replica. deliver must not block. The returned
	// function ends the subscription.
	Subscribe(deliver func(ServerEvent)) (unsubscribe func(), err error)
}

// DefaultEventBusPublishTimeout bounds one EventBus.Publish made by a
// Server (on AddTool, RemoveTools, NotifyResourceUpdated, ...).
const DefaultEventBusPublishTimeout = 5 * time.Second

var eventKinds = [...]listKind{
	ServerEventToolsListChanged:     listTools,
	ServerEventPromptsListChanged:   listPrompts,
	ServerEventResourcesListChanged: listResources,
	ServerEventResourceUpdated:      resourceUpdated,
}

func (ev event) public() ServerEvent {
	for k, lk := range eventKinds {
		if k != 0 && lk == ev.kind {
			return ServerEvent{Kind: ServerEventKind(k), URI: ev.uri}
		}
	}
	return ServerEvent{}
}

func fromPublic(e ServerEvent) (event, bool) {
	if e.Kind == 0 || int(e.Kind) >= len(eventKinds) {
		return event{}, false
	}
	ev := event{kind: eventKinds[e.Kind]}
	if e.Kind == ServerEventResourceUpdated {
		if e.URI == "" {
			return event{}, false
		}
		ev.uri = e.URI
	}
	return ev, true
}
