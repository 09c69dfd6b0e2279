package pmcp

import (
	"context"
	"slices"
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

// listener receives events for one legacy session, one stream connection
// or one modern subscriptions/listen stream. Delivery never blocks the
// producer and costs no allocation for list changes, so one event reaches
// thousands of listeners quickly and an idle listener is small (no queue
// of events is preallocated):
//
//   - a list change sets a pending bit: changes of one list that arrive
//     before the consumer looks become one notification (it only tells
//     the client to list again, so nothing is lost);
//   - a resource update queues its URI, once (an update of a URI already
//     pending is the same notification), in a queue bounded by max; beyond
//     it the update is dropped and counted.
//
// List changes go out before resource updates, each kind in a fixed order;
// updates go out oldest first.
type listener struct {
	accept func(ev event) bool
	ready  chan struct{} // capacity 1: something is pending
	max    int           // bound of uris

	mu    sync.Mutex
	lists uint8    // bit 1<<kind per pending list change
	uris  []string // pending resource updates, oldest first
	// onReady, when set, is called instead of signalling ready (a
	// detached listen stream is scheduled on a writer instead of waking a
	// goroutine of its own).
	onReady func()
}

// put records ev and reports false when it was dropped (the URI queue is
// full).
func (l *listener) put(ev event) bool {
	l.mu.Lock()
	if ev.kind == resourceUpdated {
		if slices.Contains(l.uris, ev.uri) {
			l.mu.Unlock()
			return true
		}
		if len(l.uris) >= l.max {
			l.mu.Unlock()
			return false
		}
		l.uris = append(l.uris, ev.uri)
	} else {
		l.lists |= 1 << ev.kind
	}
	onReady := l.onReady
	l.mu.Unlock()
	if onReady != nil {
		onReady()
		return true
	}
	l.wake()
	return true
}

// wake signals ready without blocking.
func (l *listener) wake() {
	select {
	case l.ready <- struct{}{}:
	default:
	}
}

// setOnReady makes f the wake-up of l from now on, and calls it when
// something is already pending.
func (l *listener) setOnReady(f func()) {
	l.mu.Lock()
	l.onReady = f
	pending := l.lists != 0 || len(l.uris) > 0
	l.mu.Unlock()
	if pending {
		f()
	}
}

// take removes and returns what is pending. The caller owns uris.
func (l *listener) take() (lists uint8, uris []string) {
	l.mu.Lock()
	lists, uris = l.lists, l.uris
	l.lists, l.uris = 0, nil
	l.mu.Unlock()
	return lists, uris
}

// drain takes what is pending and calls f for each event, list changes
// first; it stops at f's first error.
func (l *listener) drain(f func(ev event) error) error {
	lists, uris := l.take()
	for k := listTools; k <= listResources; k++ {
		if lists&(1<<k) == 0 {
			continue
		}
		if err := f(event{kind: k}); err != nil {
			return err
		}
	}
	for _, u := range uris {
		if err := f(event{kind: resourceUpdated, uri: u}); err != nil {
			return err
		}
	}
	return nil
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
		n = defaultNotificationQueue
	}
	return &listener{accept: accept, ready: make(chan struct{}, 1), max: n}
}

// broadcast tells every listener of every replica: through the EventBus
// when there is one (this replica hears its own event back from the bus),
// else, or when publishing fails, to this replica's listeners directly.
func (s *Server) broadcast(ev event) {
	if b := s.opts.EventBus; b != nil {
		ctx, cancel := context.WithTimeout(context.Background(), defaultEventBusPublishTimeout)
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
		if l.accept(ev) && !l.put(ev) {
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
