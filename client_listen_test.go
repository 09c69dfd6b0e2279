package pmcp

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/internal/rpcconn"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// recv waits for a value on ch.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

func TestClientProgressAndLogsBothEras(t *testing.T) {
	srv := newClientTestServer(t, ServerOptions{})
	for _, era := range []Era{EraModern, EraLegacy} {
		t.Run(era.String(), func(t *testing.T) {
			logs := make(chan string, 16)
			c := NewClient(ClientOptions{Era: era, LogLevel: LevelDebug, Notifications: ClientNotificationHandlers{
				LogMessage: func(ctx context.Context, p *LoggingMessageParams) { logs <- p.Level.String() + ":" + p.Data.(string) },
			}})
			s := connectClient(t, c, serveOnPipe(t, srv))
			var mu sync.Mutex
			var got []float64
			res, err := s.CallTool(context.Background(), "work", nil, WithProgress(func(ctx context.Context, p *ProgressParams) {
				mu.Lock()
				got = append(got, p.Progress)
				mu.Unlock()
			}))
			if err != nil || res.IsError {
				t.Fatalf("%+v %v", res, err)
			}
			mu.Lock()
			if len(got) != 3 || got[0] != 1 || got[2] != 3 {
				t.Errorf("progress %v: all of it must arrive before the result", got)
			}
			mu.Unlock()
			// Debug is delivered: the level went with the request (modern) or
			// through logging/setLevel at Connect (legacy).
			if l := recv(t, logs, "first log"); l != "debug:debug record" {
				t.Errorf("first log %q", l)
			}
			if l := recv(t, logs, "second log"); l != "info:info record" {
				t.Errorf("second log %q", l)
			}
			// A call without WithProgress carries no token and gets no progress.
			if _, err := s.CallTool(context.Background(), "work", nil); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			if len(got) != 3 {
				t.Errorf("progress after the call: %v", got)
			}
			mu.Unlock()
		})
	}
}

func TestClientCancellationSendsNotification(t *testing.T) {
	for _, era := range []Era{EraModern, EraLegacy} {
		t.Run(era.String(), func(t *testing.T) {
			started := make(chan jsonrpc.ID, 1)
			f, st := startFake(t, func(ctx context.Context, req *jsonrpc.Request) (any, error) {
				switch req.Method {
				case MethodDiscover:
					return modernDiscover, nil
				case MethodInitialize:
					return legacyHandler(Version20251125, nil)(ctx, req)
				case MethodToolsCall:
					started <- req.ID
					<-ctx.Done() // cancelled by notifications/cancelled
					return nil, rpcconn.ErrNoResponse
				}
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "nope"}
			})
			s := connectClient(t, NewClient(ClientOptions{Era: era}), st)
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				_, err := s.CallTool(ctx, "slow", nil)
				errc <- err
			}()
			id := recv(t, started, "the call")
			cancel()
			if err := recv(t, errc, "the call to return"); !errors.Is(err, context.Canceled) {
				t.Fatalf("err %v", err)
			}
			n := f.waitNote(t, NotificationCancelled)
			var p cancelledParams
			if err := Unmarshal(n.Params, &p); err != nil || p.RequestID.String() != id.String() {
				t.Fatalf("cancelled %s for request %v (%v)", n.Params, id, err)
			}
		})
	}
}

func TestClientListenModern(t *testing.T) {
	srv := newClientTestServer(t, ServerOptions{})
	acks := make(chan *SubscriptionsAckParams, 4)
	toolsChanged := make(chan struct{}, 16)
	updated := make(chan string, 16)
	c := NewClient(ClientOptions{Notifications: ClientNotificationHandlers{
		SubscriptionAcknowledged: func(ctx context.Context, p *SubscriptionsAckParams) { acks <- p },
		ToolsListChanged:         func(ctx context.Context) { toolsChanged <- struct{}{} },
		ResourceUpdated:          func(ctx context.Context, p *ResourceUpdatedParams) { updated <- p.URI },
	}})
	s := connectClient(t, c, serveOnPipe(t, srv))
	base := srv.listeners.len() // Serve keeps one per connection
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		errc <- s.Listen(ctx, SubscriptionFilter{ToolsListChanged: true, ResourceSubscriptions: []string{"test://a"}})
	}()
	ack := recv(t, acks, "the acknowledgement")
	if !ack.Notifications.ToolsListChanged || len(ack.Notifications.ResourceSubscriptions) != 1 || ack.Meta[MetaSubscriptionID] == nil {
		t.Fatalf("ack %+v", ack)
	}
	if n := srv.listeners.len(); n != base+1 {
		t.Fatalf("%d listeners during the subscription, want %d", n, base+1)
	}
	if err := AddTool(srv, &Tool{Name: "late"}, func(ctx context.Context, e *RequestHandlerExtra, in struct{}) (string, error) { return "", nil }); err != nil {
		t.Fatal(err)
	}
	recv(t, toolsChanged, "tools list_changed")
	srv.NotifyResourceUpdated("test://a")
	if u := recv(t, updated, "resource updated"); u != "test://a" {
		t.Fatalf("updated %q", u)
	}
	// The session stays usable while a subscription is open.
	if _, err := s.ListTools(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := recv(t, errc, "Listen to return"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Listen: %v", err)
	}
	// The server got notifications/cancelled and dropped its listener.
	deadline := time.Now().Add(5 * time.Second)
	for srv.listeners.len() != base {
		if time.Now().After(deadline) {
			t.Fatalf("server still has %d listeners, want %d", srv.listeners.len(), base)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestClientListenEndedByServer(t *testing.T) {
	var fake *fakeServer
	fake, st := startFake(t, func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		switch req.Method {
		case MethodDiscover:
			return modernDiscover, nil
		case MethodSubscriptionsListen:
			idJSON := req.ID.AppendJSON(nil)
			_ = fake.conn.Notify(ctx, NotificationSubscriptionsAck, jsontext.Value(`{"notifications":{},"_meta":{"io.modelcontextprotocol/subscriptionId":`+string(idJSON)+`}}`))
			_ = fake.conn.Notify(ctx, NotificationCancelled, jsontext.Value(`{"requestId":`+string(idJSON)+`,"reason":"shutting down"}`))
			return nil, rpcconn.ErrNoResponse
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "nope"}
	})
	s := connectClient(t, NewClient(ClientOptions{}), st)
	if err := s.Listen(context.Background(), SubscriptionFilter{ToolsListChanged: true}); err != nil {
		t.Fatalf("Listen: %v", err)
	}
	// The client did not answer the server's cancellation with its own.
	if _, err := s.ListTools(context.Background(), ""); err == nil {
		t.Fatal("tools/list should fail against this fake")
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	for _, r := range fake.seen {
		if r.Method == NotificationCancelled {
			t.Fatalf("client sent notifications/cancelled for a subscription the server ended")
		}
	}
}

func TestClientLegacyNotifications(t *testing.T) {
	srv := newClientTestServer(t, ServerOptions{})
	toolsChanged := make(chan struct{}, 16)
	updated := make(chan string, 16)
	c := NewClient(ClientOptions{Era: EraLegacy, Notifications: ClientNotificationHandlers{
		ToolsListChanged: func(ctx context.Context) { toolsChanged <- struct{}{} },
		ResourceUpdated:  func(ctx context.Context, p *ResourceUpdatedParams) { updated <- p.URI },
	}})
	s := connectClient(t, c, serveOnPipe(t, srv))
	if err := s.Subscribe(context.Background(), "test://a"); err != nil {
		t.Fatal(err)
	}
	if err := AddTool(srv, &Tool{Name: "late"}, func(ctx context.Context, e *RequestHandlerExtra, in struct{}) (string, error) { return "", nil }); err != nil {
		t.Fatal(err)
	}
	recv(t, toolsChanged, "tools list_changed")
	srv.NotifyResourceUpdated("test://a")
	if u := recv(t, updated, "resource updated"); u != "test://a" {
		t.Fatalf("updated %q", u)
	}
}

// legacyPusher is a legacy fake that, on tools/call, sends n
// tools/list_changed notifications before answering.
func legacyPusher(t *testing.T, n int) (*fakeServer, jsonrpc.Stream) {
	var fake *fakeServer
	fake, st := startFake(t, legacyHandler(Version20251125, func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		for range n {
			_ = fake.conn.Notify(ctx, NotificationToolsListChanged, nil)
		}
		return jsontext.Value(`{"content":[]}`), nil
	}))
	return fake, st
}

func TestClientNotificationQueueDropsNewest(t *testing.T) {
	_, st := legacyPusher(t, 10)
	release := make(chan struct{})
	entered := make(chan struct{}, 16)
	c := NewClient(ClientOptions{NotificationQueue: 1, Notifications: ClientNotificationHandlers{
		ToolsListChanged: func(ctx context.Context) {
			entered <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
		},
	}})
	s := connectClient(t, c, st)
	// The notifications are read (and queued or dropped) before the result.
	if _, err := s.CallTool(context.Background(), "t", nil); err != nil {
		t.Fatal(err)
	}
	recv(t, entered, "the first handler")
	if d := s.dropped.Load(); d < 8 {
		t.Fatalf("dropped %d, want at least 8 of 10 with one running and one queued", d)
	}
	close(release)
}

func TestClientCloseFromHandler(t *testing.T) {
	_, st := legacyPusher(t, 1)
	closed := make(chan error, 1)
	var s *ClientSession
	var mu sync.Mutex
	c := NewClient(ClientOptions{Notifications: ClientNotificationHandlers{
		ToolsListChanged: func(ctx context.Context) {
			mu.Lock()
			sess := s
			mu.Unlock()
			closed <- sess.Close()
		},
	}})
	sess, err := c.Connect(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	s = sess
	mu.Unlock()
	_, _ = sess.CallTool(context.Background(), "t", nil)
	if err := recv(t, closed, "Close from the handler"); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := sess.Wait(); err != nil {
		t.Fatalf("Wait: %v", err)
	}
}

func TestClientNotificationHandlerPanicIsContained(t *testing.T) {
	_, st := legacyPusher(t, 2)
	calls := make(chan struct{}, 4)
	c := NewClient(ClientOptions{Notifications: ClientNotificationHandlers{
		ToolsListChanged: func(ctx context.Context) {
			calls <- struct{}{}
			panic("handler bug")
		},
	}})
	s := connectClient(t, c, st)
	if _, err := s.CallTool(context.Background(), "t", nil); err != nil {
		t.Fatal(err)
	}
	recv(t, calls, "first handler")
	recv(t, calls, "second handler")
	if _, err := s.CallTool(context.Background(), "t", nil); err != nil {
		t.Fatalf("session broken after a handler panic: %v", err)
	}
}
