package pmcp

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// TestClientTaskWatchFollowsLiveTasks checks the subscription a modern
// session keeps for the tasks it created: reopened with each new id,
// capped at defaultMaxListenTaskIDs, and ended (the server told) once the
// last watched task reached a terminal status.
func TestClientTaskWatchFollowsLiveTasks(t *testing.T) {
	type listen struct {
		id  jsonrpc.ID
		ids []string
	}
	listens := make(chan listen, 256)
	var n atomic.Int64
	f, st := startFake(t, func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		switch req.Method {
		case MethodDiscover:
			return modernDiscover, nil
		case MethodToolsCall:
			return jsontext.Value(fmt.Sprintf(`{"resultType":"task","taskId":"t%d","status":"working"}`, n.Add(1))), nil
		case MethodSubscriptionsListen:
			var p ListenParams
			if err := Unmarshal(req.Params, &p); err != nil {
				return nil, err
			}
			listens <- listen{req.ID, p.Notifications.TaskIDs}
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: req.Method}
	})
	s := connectClient(t, NewClient(ClientOptions{Notifications: ClientNotificationHandlers{TaskStatus: func(context.Context, *DetailedTask) {}}}), st)
	ctx := context.Background()
	recv := func() listen {
		t.Helper()
		select {
		case l := <-listens:
			return l
		case <-time.After(5 * time.Second):
			t.Fatal("no subscriptions/listen")
		}
		return listen{}
	}
	next := func(want ...string) listen {
		t.Helper()
		l := recv()
		if !slices.Equal(l.ids, want) {
			t.Fatalf("listen for %v, want %v", l.ids, want)
		}
		return l
	}
	cancelled := func(l listen) {
		t.Helper()
		for {
			p := f.waitNote(t, NotificationCancelled)
			if strings.Contains(string(p.Params), `"requestId":`+l.id.String()) {
				return
			}
		}
	}
	for range 2 {
		if _, err := s.CallToolTask(ctx, "job", nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	// The second creation may come before the first listen started.
	l := recv()
	if slices.Equal(l.ids, []string{"t1"}) {
		cancelled(l)
		l = next("t1", "t2")
	} else if !slices.Equal(l.ids, []string{"t1", "t2"}) {
		t.Fatalf("listen for %v", l.ids)
	}
	if err := f.conn.Notify(ctx, NotificationTasks, map[string]any{"taskId": "t1", "status": "completed"}); err != nil {
		t.Fatal(err)
	}
	if err := f.conn.Notify(ctx, NotificationTasks, map[string]any{"taskId": "t2", "status": "failed"}); err != nil {
		t.Fatal(err)
	}
	cancelled(l)

	// The bound: the ids beyond defaultMaxListenTaskIDs are not watched.
	var want []string
	for i := range defaultMaxListenTaskIDs + 3 {
		if _, err := s.CallToolTask(ctx, "job", nil, 0); err != nil {
			t.Fatal(err)
		}
		if i < defaultMaxListenTaskIDs {
			want = append(want, fmt.Sprintf("t%d", i+3))
		}
	}
	for {
		l = recv()
		if len(l.ids) == defaultMaxListenTaskIDs {
			break
		}
	}
	if !slices.Equal(l.ids, want) {
		t.Fatalf("listen for %v", l.ids)
	}
}
