// Command pmcp is the bench server for this SDK. See bench/README.md.
package main

import (
	"context"
	"flag"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/bench/internal/harness"
	"github.com/gopmcp/pmcp/transport/stdio"
)

type echoIn struct {
	Text string `json:"text"`
}

type addIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

func newServer() *pmcp.Server {
	s, err := pmcp.NewServer(serverOptions())
	if err != nil {
		panic(err)
	}
	must(pmcp.AddTool(s, &pmcp.Tool{Name: "echo", Description: "Echoes its text."},
		func(_ context.Context, _ *pmcp.RequestHandlerExtra, in echoIn) (string, error) { return in.Text, nil }))
	must(pmcp.AddTool(s, &pmcp.Tool{Name: "add", Description: "Adds a and b."},
		func(_ context.Context, _ *pmcp.RequestHandlerExtra, in addIn) (string, error) {
			return strconv.FormatFloat(in.A+in.B, 'g', -1, 64), nil
		}))
	must(pmcp.AddTool(s, &pmcp.Tool{Name: "stream", Description: "Sends progress, then a result."},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ struct{}) (string, error) {
			if pr := extra.ProgressReporter; pr != nil {
				for i := 1; i <= harness.StreamNotes; i++ {
					if err := pr.ReportProgress(ctx, pmcp.Progress{Progress: float64(i), Total: harness.StreamNotes}); err != nil {
						return "", err
					}
				}
			}
			return "done", nil
		}))
	if *feature == "task" {
		// The feature-cost leg's task row: echo as a task, complete at once.
		must(pmcp.AddTool(s, &pmcp.Tool{Name: "echo_task", Description: "Echoes its text; may run as a task.",
			Execution: &pmcp.ToolExecution{TaskSupport: pmcp.TaskSupportOptional}},
			func(_ context.Context, _ *pmcp.RequestHandlerExtra, in echoIn) (string, error) { return in.Text, nil }))
	}
	return s
}

// detach serves subscriptions/listen streams detached from net/http (the
// fan-out leg's DetachListenStreams row).
var detach = flag.Bool("detach", false, "serve listen streams with StreamableHTTPOptions.DetachListenStreams")

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func main() {
	harness.Main(func() http.Handler {
		s := newServer()
		// The fan-out leg: each POST adds a tool, so every listener gets
		// one tools list_changed.
		var added atomic.Int64
		harness.Handle("/debug/notify", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			name := "added-" + strconv.FormatInt(added.Add(1), 10)
			if err := pmcp.AddTool(s, &pmcp.Tool{Name: name}, func(context.Context, *pmcp.RequestHandlerExtra, struct{}) (string, error) { return "", nil }); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
			}
		}))
		return withSpin(pmcp.NewStreamableHTTPHandler(s, withFeature(pmcp.StreamableHTTPOptions{
			// One application/json body per request, as every target of
			// the bench answers (see README.md).
			JSONResponse: !*harness.SSE,
			// The idle-session row opens 10,000 sessions; the default
			// cap is DefaultMaxSessions (4,096).
			MaxSessions: 20000,
			// The fan-out leg opens 10,000 listen streams; the default
			// cap is 1,024 (StreamableHTTPOptions.MaxListenStreams).
			MaxListenStreams:    20000,
			DetachListenStreams: *detach,
		})))
	}, func(ctx context.Context) error {
		return newServer().Serve(ctx, stdio.Stdio(stdio.Options{}))
	})
}
