package pmcp_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/transport/memory"
)

// handlerSeen is what a task handler observed about itself.
type handlerSeen struct {
	isTask      bool
	first, last string // TaskID at the first line and at the end
}

// newTaskProbe serves a tool, run as a task when the client asks, that
// reports what its handler sees and sets result _meta.
// The handler ends once release is closed.
func newTaskProbe(t *testing.T, release chan struct{}) (*pmcp.Server, chan handlerSeen) {
	t.Helper()
	seen := make(chan handlerSeen, 8)
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Tasks: &pmcp.TaskOptions{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	err = pmcp.AddTool(srv, &pmcp.Tool{Name: "probe", Execution: &pmcp.ToolExecution{TaskSupport: pmcp.TaskSupportOptional}},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ struct{}) (string, error) {
			s := handlerSeen{isTask: extra.IsTaskRequest(), first: extra.TaskID()}
			extra.SetResultMeta(map[string]any{"example.com/probe": "set by the handler"})
			// The test releases the handler once the client holds the
			// task: the task exists now in any case.
			select {
			case <-release:
			case <-ctx.Done():
				return "", ctx.Err()
			}
			s.last = extra.TaskID()
			seen <- s
			return "probed", nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return srv, seen
}

// TestTaskHandlerSeesItsTask: a handler running as a task knows it is one
// and its task id from its first line on, the id never changes, and the
// _meta it sets reaches the task's result, in both eras over a stream and
// Streamable HTTP.
func TestTaskHandlerSeesItsTask(t *testing.T) {
	for _, transport := range []string{"stream", "http"} {
		for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
			t.Run(transport+"/"+era.String(), func(t *testing.T) {
				release := make(chan struct{})
				srv, seen := newTaskProbe(t, release)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				c := pmcp.NewClient(pmcp.ClientOptions{Era: era})
				var s *pmcp.ClientSession
				var err error
				if transport == "http" {
					h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{})
					ts := httptest.NewServer(h)
					defer ts.Close()
					defer h.Close()
					s, err = c.ConnectHTTP(ctx, ts.URL, pmcp.HTTPClientOptions{})
				} else {
					a, b := memory.NewPipe()
					done := make(chan struct{})
					go func() {
						defer close(done)
						_ = srv.Serve(context.Background(), a)
					}()
					defer func() { <-done }()
					s, err = c.Connect(ctx, b)
				}
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				task, err := s.CallToolTask(ctx, "probe", nil, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				if task.ID() == "" {
					t.Fatal("the probe ran synchronously")
				}
				close(release)
				res, err := task.Wait(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				got := <-seen
				if !got.isTask || got.first != task.ID() || got.last != task.ID() {
					t.Errorf("handler saw IsTaskRequest=%v, TaskID %q at its start and %q at its end; want true and %q", got.isTask, got.first, got.last, task.ID())
				}
				if v, _ := res.Meta["example.com/probe"].(string); v != "set by the handler" {
					t.Errorf("result _meta %v: the handler's SetResultMeta is missing", res.Meta)
				}
			})
		}
	}
}
