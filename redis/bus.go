package redis

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gopmcp/pmcp"
	goredis "github.com/redis/go-redis/v9"
)

// DefaultBusChannel is the Pub/Sub channel of a Bus.
const DefaultBusChannel = "pmcp:bus"

// BusOptions configure a Bus. The zero value works.
type BusOptions struct {
	// Channel is the Pub/Sub channel; "" means DefaultBusChannel. All
	// replicas of one server share it; separate servers (or tenants) use
	// separate channels.
	Channel string
	// Sharded uses sharded Pub/Sub (SPUBLISH/SSUBSCRIBE, Redis >= 7.0), so
	// that on Redis Cluster an event travels only within the shard that
	// owns the channel instead of to every node.
	Sharded bool
	// NoResyncEvents turns off the list-changed events a Bus delivers
	// locally after it reconnected (see Bus).
	NoResyncEvents bool
}

// Bus is a pmcp.EventBus on Redis Pub/Sub: one channel per server, one
// connection and one goroutine per Bus. Delivery is at most once, which
// fits list_changed (clients re-list). Events published while the
// connection was down are lost, so after reconnecting a Bus delivers
// tools, prompts and resources list_changed to its subscribers, which makes
// clients re-list rather than miss a change.
type Bus struct {
	rdb     goredis.UniversalClient
	ps      *goredis.PubSub
	channel string
	sharded bool
	resync  bool
	done    chan struct{}

	mu     sync.Mutex
	closed bool
	subs   map[uint64]func(pmcp.ServerEvent)
	next   uint64
}

var _ pmcp.EventBus = (*Bus)(nil)

// NewBus subscribes to the bus channel on rdb (which the caller keeps
// owning) and returns once the subscription is confirmed.
func NewBus(ctx context.Context, rdb goredis.UniversalClient, opts BusOptions) (*Bus, error) {
	b := &Bus{rdb: rdb, channel: opts.Channel, sharded: opts.Sharded, resync: !opts.NoResyncEvents,
		done: make(chan struct{}), subs: map[uint64]func(pmcp.ServerEvent){}}
	if b.channel == "" {
		b.channel = DefaultBusChannel
	}
	if b.sharded {
		b.ps = rdb.SSubscribe(ctx, b.channel)
	} else {
		b.ps = rdb.Subscribe(ctx, b.channel)
	}
	if _, err := b.ps.Receive(ctx); err != nil {
		_ = b.ps.Close()
		return nil, err
	}
	go b.loop()
	return b, nil
}

// encodeEvent renders ev as "<kind>" or "<kind>\n<uri>".
func encodeEvent(ev pmcp.ServerEvent) string {
	s := strconv.Itoa(int(ev.Kind))
	if ev.URI != "" {
		s += "\n" + ev.URI
	}
	return s
}

func decodeEvent(p string) (pmcp.ServerEvent, bool) {
	k, uri, _ := strings.Cut(p, "\n")
	n, err := strconv.Atoi(k)
	if err != nil || n <= 0 || n > 255 {
		return pmcp.ServerEvent{}, false
	}
	return pmcp.ServerEvent{Kind: pmcp.ServerEventKind(n), URI: uri}, true
}

// Publish implements pmcp.EventBus.
func (b *Bus) Publish(ctx context.Context, ev pmcp.ServerEvent) error {
	if b.sharded {
		return b.rdb.SPublish(ctx, b.channel, encodeEvent(ev)).Err()
	}
	return b.rdb.Publish(ctx, b.channel, encodeEvent(ev)).Err()
}

// Subscribe implements pmcp.EventBus. deliver runs on the Bus's goroutine.
func (b *Bus) Subscribe(deliver func(pmcp.ServerEvent)) (func(), error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, ErrClosed
	}
	id := b.next
	b.next++
	b.subs[id] = deliver
	return func() {
		b.mu.Lock()
		delete(b.subs, id)
		b.mu.Unlock()
	}, nil
}

func (b *Bus) fanOut(ev pmcp.ServerEvent) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, f := range b.subs {
		f(ev)
	}
}

func (b *Bus) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

func (b *Bus) loop() {
	defer close(b.done)
	ctx := context.Background()
	for {
		msg, err := b.ps.Receive(ctx)
		if err != nil {
			if b.isClosed() {
				return
			}
			<-time.After(reconnectBackoff) // go-redis redials meanwhile
			continue
		}
		switch m := msg.(type) {
		case *goredis.Message:
			if ev, ok := decodeEvent(m.Payload); ok {
				b.fanOut(ev)
			}
		case *goredis.Subscription:
			// A resubscription after a reconnect: changes may have been
			// missed meanwhile.
			if b.resync && (m.Kind == "subscribe" || m.Kind == "ssubscribe") {
				for _, k := range []pmcp.ServerEventKind{pmcp.ServerEventToolsListChanged, pmcp.ServerEventPromptsListChanged, pmcp.ServerEventResourcesListChanged} {
					b.fanOut(pmcp.ServerEvent{Kind: k})
				}
			}
		}
	}
}

// Close ends the subscription and its goroutine. It does not close the
// Redis client.
func (b *Bus) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.subs = map[uint64]func(pmcp.ServerEvent){}
	b.mu.Unlock()
	err := b.ps.Close()
	<-b.done
	return err
}

// ErrClosed: the Bus was closed.
var ErrClosed = errors.New("pmcp/redis: closed")
