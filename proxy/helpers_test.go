package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
	"github.com/gopmcp/pmcp/transport/memory"
	"github.com/gopmcp/pmcp/transport/stdio"
)

// onlyEra makes a server serve one era: requests of the other are refused
// as an unknown method, as a server that predates (or dropped) it would.
func onlyEra(e pmcp.Era) pmcp.Middleware {
	return func(next pmcp.MethodHandler) pmcp.MethodHandler {
		return func(ctx context.Context, req *pmcp.Request) (pmcp.Result, error) {
			if req.Extra.Era() != e {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found: " + req.Method}
			}
			return next(ctx, req)
		}
	}
}

// upState records what the upstream's handlers observed.
type upState struct {
	cancelled chan struct{} // closed when "count" saw its cancellation
	once      sync.Once
	calls     chan string   // tool names called, in order
	roots     chan struct{} // a roots list_changed notification arrived
	// The "roots_later" tool asks for roots once askNow is sent on, after
	// its call is over, and puts what it got on later.
	askNow, later chan string
}

var objectSchema = jsontext.Value(`{"type":"object"}`)

func text(s string) *pmcp.CallToolResult {
	return &pmcp.CallToolResult{Content: []pmcp.Content{pmcp.Text(s)}}
}

// newUpstream returns a test server serving era (EraUnknown: both).
func newUpstream(t testing.TB, era pmcp.Era, label string) (*pmcp.Server, *upState) {
	st := &upState{cancelled: make(chan struct{}), calls: make(chan string, 64), roots: make(chan struct{}, 8), askNow: make(chan string, 8), later: make(chan string, 8)}
	var mw []pmcp.Middleware
	if era != pmcp.EraUnknown {
		mw = append(mw, onlyEra(era))
	}
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "up-" + label, Middleware: mw,
		RootsListChanged: func(context.Context) {
			select {
			case st.roots <- struct{}{}:
			default:
			}
		},
		Completion: func(ctx context.Context, extra *pmcp.RequestHandlerExtra, p *pmcp.CompleteParams) (*pmcp.CompleteResult, error) {
			return &pmcp.CompleteResult{Completion: pmcp.Completion{Values: []string{label + ":" + p.Ref.Name + p.Ref.URI + ":" + p.Argument.Value}}}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.AddPrompt(&pmcp.Prompt{Name: "greet", Arguments: []*pmcp.PromptArgument{{Name: "who", Required: true}}},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, p *pmcp.GetPromptParams) (*pmcp.GetPromptResult, error) {
			return &pmcp.GetPromptResult{Messages: []*pmcp.PromptMessage{{Role: "user", Content: pmcp.Text(label + ": hello " + p.Arguments["who"])}}}, nil
		}); err != nil {
		t.Fatal(err)
	}
	if err := srv.AddResource(&pmcp.Resource{URI: "test://" + label + "/r", Name: "r"},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, r *pmcp.ResourceRequest) (*pmcp.ReadResourceResult, error) {
			return &pmcp.ReadResourceResult{Contents: []*pmcp.ResourceContents{{URI: r.URI, Text: label + ": body"}}}, nil
		}); err != nil {
		t.Fatal(err)
	}
	if err := srv.AddResourceTemplate(&pmcp.ResourceTemplate{URITemplate: "test://" + label + "/t/{id}", Name: "t"},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, r *pmcp.ResourceRequest) (*pmcp.ReadResourceResult, error) {
			return &pmcp.ReadResourceResult{Contents: []*pmcp.ResourceContents{{URI: r.URI, Text: label + ": item " + r.Vars["id"]}}}, nil
		}); err != nil {
		t.Fatal(err)
	}
	add := func(name string, h pmcp.ToolHandler) {
		if err := srv.AddRawTool(&pmcp.Tool{Name: name, InputSchema: objectSchema}, func(ctx context.Context, extra *pmcp.RequestHandlerExtra, p *pmcp.CallToolParams) (*pmcp.CallToolResult, error) {
			select {
			case st.calls <- name:
			default:
			}
			return h(ctx, extra, p)
		}); err != nil {
			t.Fatal(err)
		}
	}
	ask := func(ctx context.Context, extra *pmcp.RequestHandlerExtra, field string) (string, error) {
		res, err := extra.Peer.Elicit(ctx, &pmcp.ElicitParams{Message: "your " + field + "?",
			RequestedSchema: jsontext.Value(`{"type":"object","properties":{"` + field + `":{"type":"string"}},"required":["` + field + `"]}`)})
		if err != nil {
			return "", err
		}
		if res.Action != "accept" {
			return "", fmt.Errorf("elicitation %s", res.Action)
		}
		s, _ := res.Content[field].(string)
		return s, nil
	}
	add("ask", func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ *pmcp.CallToolParams) (*pmcp.CallToolResult, error) {
		name, err := ask(ctx, extra, "name")
		if err != nil {
			return nil, err
		}
		mood, err := ask(ctx, extra, "mood")
		if err != nil {
			return nil, err
		}
		return text(label + ": hello " + name + " (" + mood + ")"), nil
	})
	add("ask_then_progress", func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ *pmcp.CallToolParams) (*pmcp.CallToolResult, error) {
		name, err := ask(ctx, extra, "name")
		if err != nil {
			return nil, err
		}
		if err := extra.ReportProgress(1, 1, "after "+name); err != nil {
			return nil, err
		}
		return text(label + ": done " + name), nil
	})
	add("echo", func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ *pmcp.CallToolParams) (*pmcp.CallToolResult, error) {
		return text(label + ": echo"), nil
	})
	add("secret", func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ *pmcp.CallToolParams) (*pmcp.CallToolResult, error) {
		return text(label + ": secret"), nil
	})
	add("count", func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ *pmcp.CallToolParams) (*pmcp.CallToolResult, error) {
		for i := 1; i <= 5; i++ {
			if err := extra.ReportProgress(float64(i), 5, "step "+strconv.Itoa(i)); err != nil {
				return nil, err
			}
		}
		<-ctx.Done()
		st.once.Do(func() { close(st.cancelled) })
		return nil, ctx.Err()
	})
	add("fail", func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ *pmcp.CallToolParams) (*pmcp.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: -32050, Message: "teapot refused", Data: jsontext.Value(`{"why":"short and stout"}`)}
	})
	add("meta", func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ *pmcp.CallToolParams) (*pmcp.CallToolResult, error) {
		tc, _ := extra.TraceContext()
		return text(tc.TraceParent), nil
	})
	add("log", func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ *pmcp.CallToolParams) (*pmcp.CallToolResult, error) {
		if err := extra.Log(pmcp.LevelInfo, label+": hello log"); err != nil {
			return nil, err
		}
		_ = extra.Log(pmcp.LevelDebug, label+": debug log")
		return text("logged"), nil
	})
	add("env", func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ *pmcp.CallToolParams) (*pmcp.CallToolResult, error) {
		return text(os.Getenv("TENANT_TOKEN")), nil
	})
	add("sample", func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ *pmcp.CallToolParams) (*pmcp.CallToolResult, error) {
		res, err := extra.Peer.Sample(ctx, &pmcp.CreateMessageParams{MaxTokens: 10, Messages: []*pmcp.SamplingMessage{{Role: "user", Content: pmcp.Text("2+2?")}}})
		if err != nil {
			return nil, err
		}
		tc, _ := res.Content.(*pmcp.TextContent)
		if tc == nil {
			return nil, errors.New("no text from the model")
		}
		roots, err := extra.Peer.ListRoots(ctx)
		if err != nil {
			return nil, err
		}
		return text(label + ": model said " + tc.Text + ", roots " + strconv.Itoa(len(roots.Roots))), nil
	})
	add("huge", func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ *pmcp.CallToolParams) (*pmcp.CallToolResult, error) {
		// Over the stdio line cap: a child's answer its proxy cannot read.
		return text(strings.Repeat("x", stdio.DefaultMaxLineBytes+1<<20)), nil
	})
	add("roots", func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ *pmcp.CallToolParams) (*pmcp.CallToolResult, error) {
		res, err := extra.Peer.ListRoots(ctx)
		if err != nil {
			return nil, err
		}
		var uris []string
		for _, r := range res.Roots {
			uris = append(uris, r.URI)
		}
		return text(label + ": roots " + strings.Join(uris, ",")), nil
	})
	add("roots_later", func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ *pmcp.CallToolParams) (*pmcp.CallToolResult, error) {
		// Ask once the call is over, as a server syncing its roots after
		// initialize or a list change does: no call is in flight then.
		peer := extra.Peer
		go func() {
			<-st.askNow
			res, err := peer.ListRoots(context.Background())
			out := ""
			if err != nil {
				out = "error: " + err.Error()
			} else {
				for _, r := range res.Roots {
					out += r.URI + ";"
				}
			}
			st.later <- out
		}()
		return text("later"), nil
	})
	add("pid", func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ *pmcp.CallToolParams) (*pmcp.CallToolResult, error) {
		return text(strconv.Itoa(os.Getpid())), nil
	})
	add("block", func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ *pmcp.CallToolParams) (*pmcp.CallToolResult, error) {
		_ = extra.ReportProgress(1, 0, "blocking")
		<-ctx.Done()
		return nil, ctx.Err()
	})
	return srv, st
}

// memDial dials srv over an in-memory pipe; wg tracks the serving
// goroutines.
func memDial(srv *pmcp.Server, wg *sync.WaitGroup) DialFunc {
	return func(ctx context.Context, c *pmcp.Client, _ Downstream) (Conn, error) {
		a, b := memory.NewPipe()
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = srv.Serve(context.Background(), a)
		}()
		s, err := c.Connect(ctx, b)
		if err != nil {
			return Conn{}, err
		}
		return Conn{Session: s}, nil
	}
}

// httpDial serves srv over loopback HTTP and dials it.
func httpDial(t testing.TB, srv *pmcp.Server) DialFunc {
	h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{})
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		_ = h.Close()
		ts.Close()
	})
	return HTTP(ts.URL, pmcp.HTTPClientOptions{})
}

// downstream connects a client to the proxy over transport ("stream" or
// "http").
func downstream(t testing.TB, p *Proxy, transport string, opts pmcp.ClientOptions) *pmcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := pmcp.NewClient(opts)
	switch transport {
	case "stream":
		a, b := memory.NewPipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = p.Server().Serve(context.Background(), a)
		}()
		s, err := c.Connect(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = s.Close()
			<-done
		})
		return s
	case "http":
		h := pmcp.NewStreamableHTTPHandler(p.Server(), pmcp.StreamableHTTPOptions{})
		ts := httptest.NewServer(h)
		s, err := c.ConnectHTTP(ctx, ts.URL, pmcp.HTTPClientOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = s.Close()
			_ = h.Close()
			ts.Close()
		})
		return s
	}
	t.Fatalf("unknown transport %q", transport)
	return nil
}

// newProxy builds a proxy and closes it (and waits for the in-memory
// upstreams) at cleanup, after the downstream sessions (registered later,
// so cleaned up first).
func newProxy(t testing.TB, opts Options, wg *sync.WaitGroup) *Proxy {
	t.Helper()
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.Close()
		if wg != nil {
			wg.Wait()
		}
	})
	return p
}

// answerer is a downstream elicitation handler answering the test
// upstream's questions.
func answerer(ctx context.Context, p *pmcp.ElicitParams) (*pmcp.ElicitResult, error) {
	switch p.Message {
	case "your name?":
		return &pmcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
	case "your mood?":
		return &pmcp.ElicitResult{Action: "accept", Content: map[string]any{"mood": "happy"}}, nil
	}
	return nil, errors.New("unexpected question " + p.Message)
}

func resultText(t testing.TB, res *pmcp.CallToolResult) string {
	t.Helper()
	if res == nil || len(res.Content) != 1 {
		t.Fatalf("result %+v: want one content block", res)
	}
	tc, ok := res.Content[0].(*pmcp.TextContent)
	if !ok {
		t.Fatalf("content %T, want text", res.Content[0])
	}
	return tc.Text
}

// childEnv makes the test binary an upstream server over stdio ("exit":
// one that exits at once, "hang": one that never answers).
const childEnv = "PMCP_PROXY_TEST_CHILD"

func runChild() int {
	switch os.Getenv(childEnv) {
	case "exit": // an upstream that never starts
		fmt.Fprintln(os.Stderr, "child refuses to start")
		return 3
	case "hang": // an upstream that reads its requests but never answers
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 0
	}
	srv, _ := newUpstream(&childTB{}, pmcp.EraUnknown, "child")
	fmt.Fprintln(os.Stderr, "child started")
	if err := srv.Serve(context.Background(), stdio.Stdio(stdio.Options{})); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// childTB is the testing.TB of the child process: a failure ends it.
type childTB struct{ testing.TB }

func (childTB) Fatal(args ...any) {
	fmt.Fprintln(os.Stderr, args...)
	os.Exit(2)
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }

// noRaceExitSleep stops a race-enabled child from sleeping a second at
// exit (the race detector's default), which every test would wait for.
const noRaceExitSleep = "GORACE=atexit_sleep_ms=0"
