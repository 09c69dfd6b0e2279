package pmcp

import (
	"context"
	"errors"
	"testing"
)

// TestWatchTaskHook: a modern subscriptions/listen offers the task ids the
// server's own tasks lack to ServerOptions.WatchTask: an id it takes is
// acknowledged and its tasks pushed as notifications/tasks, one it refuses
// is left out, and the hook's ctx ends with the listen.
func TestWatchTaskHook(t *testing.T) {
	hookDone := make(chan struct{})
	srv, err := NewServer(ServerOptions{
		Capabilities: &ServerCapabilities{Extensions: map[string]map[string]any{ExtensionTasks: {}}},
		WatchTask: func(ctx context.Context, extra *RequestHandlerExtra, id string) (<-chan *DetailedTask, bool) {
			if id != "mine" {
				return nil, false
			}
			out := make(chan *DetailedTask, 2)
			out <- &DetailedTask{TaskID: id, Status: "working"}
			out <- &DetailedTask{TaskID: id, Status: "input_required"}
			go func() {
				<-ctx.Done()
				close(out)
				close(hookDone)
			}()
			return out, true
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	acks := make(chan *SubscriptionsAckParams, 1)
	pushed := make(chan *DetailedTask, 4)
	c := NewClient(ClientOptions{Era: EraModern, Notifications: ClientNotificationHandlers{
		SubscriptionAcknowledged: func(_ context.Context, a *SubscriptionsAckParams) { acks <- a },
		TaskStatus:               func(_ context.Context, st *DetailedTask) { pushed <- st },
	}})
	s := connectClient(t, c, serveOnPipe(t, srv))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- s.Listen(ctx, SubscriptionFilter{TaskIDs: []string{"mine", "theirs"}}) }()
	if a := recv(t, acks, "the acknowledgement"); len(a.Notifications.TaskIDs) != 1 || a.Notifications.TaskIDs[0] != "mine" {
		t.Fatalf("acknowledged %+v, want only mine", a.Notifications)
	}
	for _, want := range []string{"working", "input_required"} {
		if st := recv(t, pushed, want); st.TaskID != "mine" || st.Status != want {
			t.Fatalf("pushed %+v, want mine %s", st, want)
		}
	}
	cancel()
	if err := recv(t, errc, "Listen to return"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Listen: %v", err)
	}
	recv(t, hookDone, "the hook's ctx to end")
}
