package pmcp_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
)

// localBus is an in-process EventBus that several Servers share, standing
// in for a networked one.
type localBus struct {
	mu      sync.Mutex
	subs    map[int]func(pmcp.ServerEvent)
	next    int
	fail    error
	publish int
}

func (b *localBus) Publish(_ context.Context, ev pmcp.ServerEvent) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.publish++
	if b.fail != nil {
		return b.fail
	}
	for _, f := range b.subs {
		f(ev)
	}
	return nil
}

func (b *localBus) Subscribe(f func(pmcp.ServerEvent)) (func(), error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.subs == nil {
		b.subs = map[int]func(pmcp.ServerEvent){}
	}
	id := b.next
	b.next++
	b.subs[id] = f
	return func() {
		b.mu.Lock()
		delete(b.subs, id)
		b.mu.Unlock()
	}, nil
}

// connectLegacy serves srv in memory to a legacy client whose list-changed
// and resource-updated notifications land in the returned channel.
func connectLegacy(t *testing.T, srv *pmcp.Server) (*pmcp.ClientSession, <-chan string) {
	t.Helper()
	got := make(chan string, 16)
	st, wait := serveInMemory(srv)
	c := pmcp.NewClient(pmcp.ClientOptions{Era: pmcp.EraLegacy, Notifications: pmcp.ClientNotificationHandlers{
		ToolsListChanged: func(context.Context) { got <- "tools" },
		ResourceUpdated:  func(_ context.Context, p *pmcp.ResourceUpdatedParams) { got <- "updated " + p.URI },
	}})
	sess, err := c.Connect(t.Context(), st)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sess.Close(); wait() })
	return sess, got
}

func waitFor(t *testing.T, got <-chan string, want string) {
	t.Helper()
	select {
	case s := <-got:
		if s != want {
			t.Fatalf("got %q, want %q", s, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no %q notification", want)
	}
}

func TestEventBusReachesOtherReplicas(t *testing.T) {
	bus := &localBus{}
	keys := sharedKeys(t)
	a, err := pmcp.NewServer(pmcp.ServerOptions{Name: "a", EventBus: bus, RequestStateKeys: keys})
	if err != nil {
		t.Fatal(err)
	}
	b, err := pmcp.NewServer(pmcp.ServerOptions{Name: "b", EventBus: bus, RequestStateKeys: keys})
	if err != nil {
		t.Fatal(err)
	}
	addEcho(t, b) // b must declare tools and resources to send their changes
	if err := b.AddResource(&pmcp.Resource{URI: "file:///x", Name: "x"}, func(context.Context, *pmcp.RequestHandlerExtra, *pmcp.ResourceRequest) (*pmcp.ReadResourceResult, error) {
		return &pmcp.ReadResourceResult{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	sess, got := connectLegacy(t, b)
	addEcho(t, a)
	waitFor(t, got, "tools")
	if err := sess.Subscribe(t.Context(), "file:///x"); err != nil {
		t.Fatal(err)
	}
	a.NotifyResourceUpdated("file:///x")
	waitFor(t, got, "updated file:///x")

	// A failing bus still tells this replica's own listeners.
	bus.mu.Lock()
	bus.fail = errors.New("bus down")
	bus.mu.Unlock()
	b.RemoveTools("echo")
	waitFor(t, got, "tools")
}

func addEcho(t *testing.T, srv *pmcp.Server) {
	t.Helper()
	err := pmcp.AddTool(srv, &pmcp.Tool{Name: "echo"}, func(ctx context.Context, _ *pmcp.RequestHandlerExtra, in sumIn) (sumOut, error) {
		return sumOut{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
