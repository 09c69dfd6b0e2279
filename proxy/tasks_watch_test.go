package proxy

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
)

// TestBridgeTaskStatusPushed: a client that made a task through the
// bridge gets its status pushed as it would from the upstream directly:
// notifications/tasks/status on a legacy session, notifications/tasks on
// the subscriptions/listen a modern client opens for its tasks; in every
// pair of eras, over both downstream transports.
func TestBridgeTaskStatusPushed(t *testing.T) {
	for _, tc := range translations {
		for _, down := range []string{"stream", "http"} {
			t.Run(tc.name+"/down-"+down, func(t *testing.T) {
				srv, up := newTaskUpstream(t, tc.upstreamEr, "u")
				var wg sync.WaitGroup
				p := newProxy(t, Options{Upstreams: []Upstream{{Dial: memDial(srv, &wg)}}}, &wg)
				pushed := make(chan *pmcp.DetailedTask, 64)
				cs := downstream(t, p, down, pmcp.ClientOptions{Era: tc.clientEra, Notifications: pmcp.ClientNotificationHandlers{
					TaskStatus: func(_ context.Context, st *pmcp.DetailedTask) { pushed <- st },
				}})
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				task, err := cs.CallToolTask(ctx, "slow", nil, 0)
				if err != nil {
					t.Fatal(err)
				}
				if task.ID() == "" {
					t.Fatal("slow ran synchronously")
				}
				if err := task.Cancel(ctx); err != nil {
					t.Fatal(err)
				}
				<-up.cancelled
				for {
					select {
					case st := <-pushed:
						if st.TaskID != task.ID() {
							t.Fatalf("pushed status of %q, want %q", st.TaskID, task.ID())
						}
						if st.Status == "cancelled" {
							return
						}
					case <-ctx.Done():
						t.Fatal("the cancelled status was never pushed")
					}
				}
			})
		}
	}
}

// TestBridgeListenWithTaskIDs: a modern client listening for its tasks
// through the bridge has them acknowledged and gets their status as
// notifications/tasks; another principal's task ids are left out of its
// acknowledgement, as unknown ones.
func TestBridgeListenWithTaskIDs(t *testing.T) {
	for _, down := range []string{"stream", "http"} {
		t.Run(down, func(t *testing.T) {
			srv, up := newTaskUpstream(t, pmcp.EraUnknown, "u")
			var wg sync.WaitGroup
			p := newProxy(t, Options{Upstreams: []Upstream{{Dial: memDial(srv, &wg)}},
				Server: pmcp.ServerOptions{Middleware: []pmcp.Middleware{subjectFromClientName}}}, &wg)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			type client struct {
				cs     *pmcp.ClientSession
				acked  chan *pmcp.SubscriptionsAckParams
				pushed chan *pmcp.DetailedTask
			}
			connect := func(name string) *client {
				c := &client{acked: make(chan *pmcp.SubscriptionsAckParams, 4), pushed: make(chan *pmcp.DetailedTask, 64)}
				c.cs = downstream(t, p, down, pmcp.ClientOptions{Era: pmcp.EraModern, Name: name, Notifications: pmcp.ClientNotificationHandlers{
					SubscriptionAcknowledged: func(_ context.Context, a *pmcp.SubscriptionsAckParams) { c.acked <- a },
					TaskStatus:               func(_ context.Context, st *pmcp.DetailedTask) { c.pushed <- st },
				}})
				return c
			}
			alice, bob := connect("alice"), connect("bob")
			task, err := alice.cs.CallToolTask(ctx, "slow", nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			// The session's own listen for the task (client_tasks_listen.go)
			// is acknowledged with the task.
			select {
			case a := <-alice.acked:
				if len(a.Notifications.TaskIDs) != 1 || a.Notifications.TaskIDs[0] != task.ID() {
					t.Errorf("alice's listen acknowledged %+v, want task %q", a.Notifications, task.ID())
				}
			case <-ctx.Done():
				t.Fatal("alice's listen was never acknowledged")
			}
			select {
			case st := <-alice.pushed:
				if st.TaskID != task.ID() || st.Status != "working" {
					t.Errorf("first push %+v, want %q working", st, task.ID())
				}
			case <-ctx.Done():
				t.Fatal("no status pushed to alice")
			}

			// Bob listens for alice's task: not acknowledged, nothing pushed.
			lctx, stop := context.WithCancel(ctx)
			errc := make(chan error, 1)
			go func() {
				errc <- bob.cs.Listen(lctx, pmcp.SubscriptionFilter{ToolsListChanged: true, TaskIDs: []string{task.ID()}})
			}()
			select {
			case a := <-bob.acked:
				if !a.Notifications.ToolsListChanged || len(a.Notifications.TaskIDs) != 0 {
					t.Errorf("bob's listen acknowledged %+v", a.Notifications)
				}
			case err := <-errc:
				t.Fatalf("bob's listen ended: %v", err)
			case <-ctx.Done():
				t.Fatal("bob's listen never acknowledged")
			}

			if err := task.Cancel(ctx); err != nil {
				t.Fatal(err)
			}
			<-up.cancelled
			for done := false; !done; {
				select {
				case st := <-alice.pushed:
					done = st.Status == "cancelled"
				case <-ctx.Done():
					t.Fatal("the cancelled status was never pushed to alice")
				}
			}
			stop()
			<-errc
			select {
			case st := <-bob.pushed:
				t.Errorf("bob got alice's status %+v", st)
			default:
			}
		})
	}
}
