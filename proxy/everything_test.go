package proxy

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/transport/command"
)

// Environment of TestServerEverything, set by scripts/test.sh after it
// installed @modelcontextprotocol/server-everything with
// `scripts/conformance.sh npm`.
const (
	envEverythingDir = "PMCP_SERVER_EVERYTHING" // the install directory
	envNode          = "PMCP_NODE"              // the Node binary to run it with
)

// everythingCommand returns the command line of the reference TypeScript
// server over stdio. Without its environment the test is skipped locally
// and fails under CI=true, so CI cannot silently lose it.
func everythingCommand(t *testing.T) (string, []string) {
	dir, node := os.Getenv(envEverythingDir), os.Getenv(envNode)
	if dir == "" || node == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %s or %s is not set: scripts/test.sh installs the server and sets them", envEverythingDir, envNode)
		}
		t.Skipf("%s and %s not set (scripts/test.sh sets them)", envEverythingDir, envNode)
	}
	js := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(js); err != nil {
		t.Fatalf("%s: %v", envEverythingDir, err)
	}
	return node, []string{js, "stdio"}
}

// bridgeEverything serves the reference server over stdio, bridged to
// Streamable HTTP, and returns the endpoint.
func bridgeEverything(t *testing.T) string {
	node, args := everythingCommand(t)
	var logs syncBuffer
	// The server ignores the end of its stdin: SIGTERM it soon after.
	dial, err := Command(node, args, CommandOptions{Logger: newTextLogger(&logs), Transport: command.Options{WaitDelay: 500 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	p := newProxy(t, Options{Upstreams: []Upstream{{Name: "everything", Dial: dial}}}, nil)
	h := pmcp.NewStreamableHTTPHandler(p.Server(), pmcp.StreamableHTTPOptions{})
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		_ = h.Close()
		ts.Close()
	})
	return ts.URL
}

// TestServerEverything: the reference TypeScript server
// (@modelcontextprotocol/server-everything, 2025-11-25 only) over stdio,
// bridged to Streamable HTTP and driven by our client in both eras:
// tools, arguments, progress in order, cancellation, elicitation (as
// input_required rounds for the modern client), resources and prompts.
func TestServerEverything(t *testing.T) {
	url := bridgeEverything(t)
	for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
		t.Run(era.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var asked []string
			var mu sync.Mutex
			cs, err := pmcp.NewClient(pmcp.ClientOptions{Era: era, Elicitation: func(_ context.Context, ep *pmcp.ElicitParams) (*pmcp.ElicitResult, error) {
				mu.Lock()
				asked = append(asked, ep.Message)
				mu.Unlock()
				return &pmcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada Lovelace", "check": true}}, nil
			}}).ConnectHTTP(ctx, url, pmcp.HTTPClientOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if cs.Era() != era {
				t.Fatalf("era %v", cs.Era())
			}

			tools, err := cs.AllTools(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range tools {
				names = append(names, tl.Name)
			}
			for _, want := range []string{"echo", "get-sum", "trigger-long-running-operation", "trigger-elicitation-request"} {
				if !slices.Contains(names, want) {
					t.Fatalf("tools %v: no %s", names, want)
				}
			}

			res, err := cs.CallTool(ctx, "echo", map[string]any{"message": "through the bridge"})
			if err != nil || textOf(res) != "Echo: through the bridge" {
				t.Fatalf("echo: %q, %v", textOf(res), err)
			}
			res, err = cs.CallTool(ctx, "get-sum", map[string]any{"a": 2, "b": 3})
			if err != nil || !strings.Contains(textOf(res), "5") {
				t.Fatalf("get-sum: %q, %v", textOf(res), err)
			}

			// Progress in order.
			var got []float64
			res, err = cs.CallTool(ctx, "trigger-long-running-operation", map[string]any{"duration": 0.2, "steps": 4},
				pmcp.WithProgress(func(_ context.Context, pp *pmcp.ProgressParams) { got = append(got, pp.Progress) }))
			if err != nil || !strings.Contains(textOf(res), "completed") {
				t.Fatalf("long-running: %q, %v", textOf(res), err)
			}
			if !slices.Equal(got, []float64{1, 2, 3, 4}) {
				t.Fatalf("progress %v, want 1..4 in order", got)
			}

			// Cancellation: a 60 s operation cancelled after its first step.
			first := make(chan struct{}, 1)
			cctx, stop := context.WithCancel(ctx)
			errc := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(cctx, "trigger-long-running-operation", map[string]any{"duration": 60, "steps": 600},
					pmcp.WithProgress(func(context.Context, *pmcp.ProgressParams) {
						select {
						case first <- struct{}{}:
						default:
						}
					}))
				errc <- err
			}()
			<-first
			stop()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled call: %v", err)
			}

			// Elicitation: a legacy server-to-client request upstream.
			res, err = cs.CallTool(ctx, "trigger-elicitation-request", nil)
			if err != nil || !strings.Contains(textOf(res), "Name: Ada Lovelace") {
				t.Fatalf("elicitation: %q, %v", textOf(res), err)
			}
			mu.Lock()
			if len(asked) != 1 {
				t.Errorf("client asked %d times: %q", len(asked), asked)
			}
			mu.Unlock()

			resources, err := cs.AllResources(ctx)
			if err != nil || len(resources) == 0 {
				t.Fatalf("resources: %d, %v", len(resources), err)
			}
			rr, err := cs.ReadResource(ctx, resources[0].URI)
			if err != nil || len(rr.Contents) == 0 {
				t.Fatalf("read %s: %v", resources[0].URI, err)
			}
			prompts, err := cs.AllPrompts(ctx)
			if err != nil || len(prompts) == 0 {
				t.Fatalf("prompts: %d, %v", len(prompts), err)
			}
		})
	}
}

func textOf(res *pmcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*pmcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestServerEverythingTask: the reference server's task-only tool
// (simulate-research-query, which asks for a clarification inside the
// task with a related-task elicitation on tasks/result) through the
// bridge, for a client of each era: created, polled, answered, completed.
func TestServerEverythingTask(t *testing.T) {
	url := bridgeEverything(t)
	for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
		t.Run(era.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			asked := 0
			cs, err := pmcp.NewClient(pmcp.ClientOptions{Era: era, Elicitation: func(_ context.Context, ep *pmcp.ElicitParams) (*pmcp.ElicitResult, error) {
				asked++
				return &pmcp.ElicitResult{Action: "accept", Content: map[string]any{"interpretation": "programming"}}, nil
			}}).ConnectHTTP(ctx, url, pmcp.HTTPClientOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			task, err := cs.CallToolTask(ctx, "simulate-research-query", map[string]any{"topic": "python", "ambiguous": true}, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if task.ID() == "" {
				t.Fatal("simulate-research-query answered without a task")
			}
			var statuses []string
			res, err := task.Wait(ctx, func(st *pmcp.DetailedTask) { statuses = append(statuses, st.Status) })
			if err != nil {
				t.Fatalf("wait: %v (statuses %q)", err, statuses)
			}
			if !strings.Contains(textOf(res), "Clarification**: programming") || asked != 1 {
				t.Fatalf("result %q after %d questions", textOf(res), asked)
			}
			if len(statuses) == 0 || statuses[len(statuses)-1] != "completed" {
				t.Errorf("statuses %q", statuses)
			}
		})
	}
}
