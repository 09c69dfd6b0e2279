package redis

import (
	"context"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/reqstate"
	"github.com/gopmcp/pmcp/transport/memory"
)

func newBus(t *testing.T, channel string, sharded bool) *Bus {
	t.Helper()
	b, err := NewBus(t.Context(), needRedis(t), BusOptions{Channel: channel, Sharded: sharded})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func TestBusFanOut(t *testing.T) {
	for _, sharded := range []bool{false, true} {
		t.Run(map[bool]string{false: "pubsub", true: "sharded"}[sharded], func(t *testing.T) {
			ch := uniquePrefix("bus")
			a, b := newBus(t, ch, sharded), newBus(t, ch, sharded)
			got := make(chan pmcp.ServerEvent, 4)
			unsub, err := b.Subscribe(func(ev pmcp.ServerEvent) { got <- ev })
			if err != nil {
				t.Fatal(err)
			}
			want := pmcp.ServerEvent{Kind: pmcp.ServerEventResourceUpdated, URI: "file:///a\nb"}
			if err := a.Publish(t.Context(), want); err != nil {
				t.Fatal(err)
			}
			if ev := recv(t, got); ev != want {
				t.Fatalf("got %+v, want %+v", ev, want)
			}
			unsub()
			// Another bus on another channel hears nothing.
			other := newBus(t, ch+":other", sharded)
			heard := make(chan pmcp.ServerEvent, 1)
			if _, err := other.Subscribe(func(ev pmcp.ServerEvent) { heard <- ev }); err != nil {
				t.Fatal(err)
			}
			// After unsubscribe b's callback is not called; a itself is
			// subscribed too and does hear its own event.
			mine := make(chan pmcp.ServerEvent, 1)
			if _, err := a.Subscribe(func(ev pmcp.ServerEvent) { mine <- ev }); err != nil {
				t.Fatal(err)
			}
			if err := a.Publish(t.Context(), pmcp.ServerEvent{Kind: pmcp.ServerEventToolsListChanged}); err != nil {
				t.Fatal(err)
			}
			if ev := recv(t, mine); ev.Kind != pmcp.ServerEventToolsListChanged {
				t.Fatalf("got %+v", ev)
			}
			select {
			case ev := <-got:
				t.Fatalf("unsubscribed callback got %+v", ev)
			case ev := <-heard:
				t.Fatalf("another channel got %+v", ev)
			default:
			}
		})
	}
}

func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("nothing arrived in 10s")
		panic("unreachable")
	}
}

// A tool added on replica A reaches a legacy client and a modern listen
// stream served by replica B.
func TestBusListChangedAcrossServers(t *testing.T) {
	ch := uniquePrefix("bus")
	keys := []reqstate.Key{{ID: "k1", Secret: make([]byte, reqstate.KeySize)}}
	a, err := pmcp.NewServer(pmcp.ServerOptions{Name: "a", EventBus: newBus(t, ch, false), RequestStateKeys: keys})
	if err != nil {
		t.Fatal(err)
	}
	b, err := pmcp.NewServer(pmcp.ServerOptions{Name: "b", EventBus: newBus(t, ch, false), RequestStateKeys: keys})
	if err != nil {
		t.Fatal(err)
	}
	addTool(t, b, "first")

	got := make(chan string, 8)
	acked := make(chan struct{}, 1)
	handlers := pmcp.ClientNotificationHandlers{
		ToolsListChanged:         func(context.Context) { got <- "tools" },
		SubscriptionAcknowledged: func(context.Context, *pmcp.SubscriptionsAckParams) { acked <- struct{}{} },
	}
	connect(t, b, pmcp.ClientOptions{Era: pmcp.EraLegacy, Notifications: handlers})
	modern := connect(t, b, pmcp.ClientOptions{Era: pmcp.EraModern, Notifications: handlers})
	lctx, stop := context.WithCancel(t.Context())
	listening := make(chan error, 1)
	go func() { listening <- modern.Listen(lctx, pmcp.SubscriptionFilter{ToolsListChanged: true}) }()
	t.Cleanup(func() { stop(); <-listening })
	recv(t, acked)

	addTool(t, a, "second")
	if a, b := recv(t, got), recv(t, got); a != "tools" || b != "tools" {
		t.Fatalf("got %q %q", a, b)
	}
}

func addTool(t *testing.T, srv *pmcp.Server, name string) {
	t.Helper()
	type in struct{}
	if err := pmcp.AddTool(srv, &pmcp.Tool{Name: name}, func(context.Context, *pmcp.RequestHandlerExtra, in) (struct{}, error) {
		return struct{}{}, nil
	}); err != nil {
		t.Fatal(err)
	}
}

func connect(t *testing.T, srv *pmcp.Server, opts pmcp.ClientOptions) *pmcp.ClientSession {
	t.Helper()
	x, y := memory.NewPipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(context.Background(), x)
	}()
	sess, err := pmcp.NewClient(opts).Connect(t.Context(), y)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sess.Close(); <-done })
	return sess
}
