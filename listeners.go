package pmcp

import (
	"context"
	"sync"
)

type listKind uint8

const (
	listTools listKind = iota
	listPrompts
	listResources
	resourceUpdated
)

var listMethods = [...]string{
	listTools:       NotificationToolsListChanged,
	listPrompts:     NotificationPromptsListChanged,
	listResources:   NotificationResourcesListChanged,
	resourceUpdated: NotificationResourceUpdated,
}

// event is one list-changed or resource-updated occurrence.
type event struct {
	kind listKind
	uri  string
}

// listener receives events for one legacy session or one modern
// subscriptions/listen stream. Delivery never blocks the producer: the queue
// is bounded and, when full, the newest event is dropped and counted.
type listener struct {
	accept func(ev event) bool
	q      chan event
}

type listenerSet struct {
	mu sync.RWMutex
	m  map[*listener]struct{}
}

func (ls *listenerSet) add(l *listener) {
	ls.mu.Lock()
	if ls.m == nil {
		ls.m = make(map[*listener]struct{})
	}
	ls.m[l] = struct{}{}
	ls.mu.Unlock()
}

func (ls *listenerSet) remove(l *listener) {
	ls.mu.Lock()
	delete(ls.m, l)
	ls.mu.Unlock()
}

func (ls *listenerSet) len() int {
	ls.mu.RLock()
	defer ls.mu.RUnlock()
	return len(ls.m)
}

func (s *Server) newListener(accept func(event) bool) *listener {
	n := s.opts.NotificationQueue
	if n <= 0 {
		n = DefaultNotificationQueue
	}
	return &listener{accept: accept, q: make(chan event, n)}
}

// broadcast tells every listener of every replica: through the EventBus
// when there is one (this replica hears its own event back from the bus),
// else, or when publishing fails, to this replica's listeners directly.
func (s *Server) broadcast(ev event) {
	if b := s.opts.EventBus; b != nil {
		ctx, cancel := context.WithTimeout(context.Background(), DefaultEventBusPublishTimeout)
		err := b.Publish(ctx, ev.public())
		cancel()
		if err == nil {
			return
		}
		s.logger.Warn("pmcp: event bus publish failed, only this replica's listeners are told", "error", err)
	}
	s.deliver(ev)
}

// deliver hands ev to this replica's listeners without blocking.
func (s *Server) deliver(ev event) {
	s.listeners.mu.RLock()
	defer s.listeners.mu.RUnlock()
	for l := range s.listeners.m {
		if !l.accept(ev) {
			continue
		}
		select {
		case l.q <- ev:
		default:
			s.droppedNotifications.Add(1)
		}
	}
}

func (s *Server) notifyListChanged(k listKind) { s.broadcast(event{kind: k}) }

// NotifyResourceUpdated tells subscribed clients (legacy resources/subscribe
// and modern subscriptions/listen with resourceSubscriptions) that the
// resource at uri changed.
func (s *Server) NotifyResourceUpdated(uri string) {
	s.broadcast(event{kind: resourceUpdated, uri: uri})
}

// listenFilter is what a modern listen stream receives: the list changes
// it asked for (and the server backs) and updates of the URIs in uris.
type listenFilter struct {
	tools, prompts, resources bool
	uris                      *uriSet // nil: no resource updates
}

func (f *listenFilter) accept(ev event) bool {
	switch ev.kind {
	case listTools:
		return f.tools
	case listPrompts:
		return f.prompts
	case listResources:
		return f.resources
	case resourceUpdated:
		return f.uris != nil && f.uris.has(ev.uri)
	}
	return false
}
