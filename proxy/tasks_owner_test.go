package proxy

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// subjectFromClientName authenticates each downstream request as the
// subject its client names itself, so that two clients are two principals.
func subjectFromClientName(next pmcp.MethodHandler) pmcp.MethodHandler {
	return func(ctx context.Context, req *pmcp.Request) (pmcp.Result, error) {
		if ci := req.Extra.ClientInfo(); ci != nil && ci.Name != "" {
			req.Extra.AuthContext = &pmcp.AuthContext{Subject: ci.Name}
		}
		return next(ctx, req)
	}
}

// TestBridgeTaskOfAnotherPrincipal: a task made through the bridge is its
// creator's. Another principal presenting its id gets what an unknown task
// gets, from tasks/get, tasks/result, tasks/cancel and tasks/update, even
// where both share one upstream session (the modern era, Options.Shared);
// the creator keeps full use of it.
func TestBridgeTaskOfAnotherPrincipal(t *testing.T) {
	for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
		for _, shared := range []bool{false, true} {
			name := era.String()
			if shared {
				name += "/shared"
			}
			t.Run(name, func(t *testing.T) {
				srv, up := newTaskUpstream(t, pmcp.EraUnknown, "u")
				var wg sync.WaitGroup
				p := newProxy(t, Options{Shared: shared, Upstreams: []Upstream{{Dial: memDial(srv, &wg)}},
					Server: pmcp.ServerOptions{Middleware: []pmcp.Middleware{subjectFromClientName}}}, &wg)
				alice := downstream(t, p, "http", pmcp.ClientOptions{Era: era, Name: "alice"})
				bob := downstream(t, p, "http", pmcp.ClientOptions{Era: era, Name: "bob"})
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				task, err := alice.CallToolTask(ctx, "slow", nil, 0)
				if err != nil {
					t.Fatal(err)
				}
				if task.ID() == "" {
					t.Fatal("slow ran synchronously")
				}
				if len(task.ID()) > 200 {
					t.Errorf("task id of %d bytes", len(task.ID()))
				}
				// Each request answers for alice's id what it answers for an
				// id never given out.
				ops := map[string]func(*pmcp.ClientTask) error{
					"tasks/get":    func(ct *pmcp.ClientTask) error { _, err := ct.Get(ctx); return err },
					"tasks/result": func(ct *pmcp.ClientTask) error { _, err := ct.Wait(ctx, nil); return err },
					"tasks/cancel": func(ct *pmcp.ClientTask) error { return ct.Cancel(ctx) },
				}
				if era == pmcp.EraModern {
					ops["tasks/update"] = func(ct *pmcp.ClientTask) error {
						return ct.Update(ctx, map[string]jsontext.Value{"q": jsontext.Value(`{}`)})
					}
				}
				for method, op := range ops {
					var unknown, theirs *jsonrpc.Error
					if err := op(bob.Task(task.ID() + "x")); !errors.As(err, &unknown) {
						t.Fatalf("%s of an unknown id: %v", method, err)
					}
					if err := op(bob.Task(task.ID())); !errors.As(err, &theirs) || theirs.Code != unknown.Code || theirs.Message != unknown.Message {
						t.Errorf("bob's %s of alice's task: %v, want %v", method, err, unknown)
					}
				}
				if era == pmcp.EraLegacy {
					page, err := bob.ListTasks(ctx, "")
					if err != nil {
						t.Fatal(err)
					}
					for _, lt := range page.Tasks {
						t.Errorf("bob's tasks/list shows %q", lt.TaskID)
					}
				}
				if st, err := task.Get(ctx); err != nil || st.Status != "working" {
					t.Fatalf("alice's view: %+v, %v", st, err)
				}
				if err := task.Cancel(ctx); err != nil {
					t.Fatal(err)
				}
				<-up.cancelled
			})
		}
	}
}
