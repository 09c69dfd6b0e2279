package pmcp_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/internal/everything"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// everythingClient connects a client with every handler to a fresh
// everything server in the given era.
func everythingClient(t *testing.T, era pmcp.Era, logs chan<- string) *pmcp.ClientSession {
	t.Helper()
	srv, err := everything.New(everything.Options{Step: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	st, wait := serveInMemory(srv)
	c := pmcp.NewClient(everythingClientOptions(era, logs))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := c.Connect(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.Close()
		wait()
	})
	return s
}

// everythingClientOptions has every handler the everything server's
// peer tools need, answering as the tests expect.
func everythingClientOptions(era pmcp.Era, logs chan<- string) pmcp.ClientOptions {
	return pmcp.ClientOptions{
		Name: "integration", Version: "1.0.0", Era: era, LogLevel: pmcp.LevelInfo,
		Elicitation: func(ctx context.Context, p *pmcp.ElicitParams) (*pmcp.ElicitResult, error) {
			return &pmcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "alice", "color": "blue", "context": "tests", "ok": true}}, nil
		},
		Sampling: func(ctx context.Context, p *pmcp.CreateMessageParams) (*pmcp.CreateMessageResult, error) {
			return &pmcp.CreateMessageResult{Model: "test-model", Content: pmcp.Text("Paris")}, nil
		},
		Roots: func(ctx context.Context) (*pmcp.ListRootsResult, error) {
			return &pmcp.ListRootsResult{Roots: []*pmcp.Root{{URI: "file:///work", Name: "work"}}}, nil
		},
		Notifications: pmcp.ClientNotificationHandlers{
			LogMessage: func(ctx context.Context, p *pmcp.LoggingMessageParams) {
				if s, ok := p.Data.(string); ok {
					logs <- s
				}
			},
		},
	}
}

func text(t *testing.T, res *pmcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatalf("no content in %+v", res)
	}
	tc, ok := res.Content[0].(*pmcp.TextContent)
	if !ok {
		t.Fatalf("content %T", res.Content[0])
	}
	return tc.Text
}

func TestClientAgainstEverythingServer(t *testing.T) {
	for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
		t.Run(era.String(), func(t *testing.T) {
			logs := make(chan string, 64)
			exerciseEverything(t, everythingClient(t, era, logs), era, logs)
		})
	}
}

// exerciseEverything runs the era-independent contract of the everything
// server through s: the same checks over every transport.
func exerciseEverything(t *testing.T, s *pmcp.ClientSession, era pmcp.Era, logs <-chan string) {
	t.Helper()
	ctx := context.Background()
	if s.Era() != era || s.ServerInfo().Name != "pmcp-everything" || s.Instructions() == "" {
		t.Fatalf("era %v info %+v", s.Era(), s.ServerInfo())
	}

	tools, err := s.AllTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(tools))
	for i, tool := range tools {
		names[i] = tool.Name
	}
	for _, want := range []string{"greet_user", "roots_and_summary", "add", "test_tool_with_progress"} {
		if !slices.Contains(names, want) {
			t.Errorf("tool %q missing from %v", want, names)
		}
	}

	// Write-once peer tools: real requests (legacy) or input rounds (modern).
	call := func(name string) string {
		t.Helper()
		res, err := s.CallTool(ctx, name, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return text(t, res)
	}
	if got := call("greet_user"); got != "Hello, alice!" {
		t.Errorf("greet_user: %q", got)
	}
	if got := call("roots_and_summary"); got != "roots=file:///work summary=Paris" {
		t.Errorf("roots_and_summary: %q", got)
	}

	type sum struct {
		Sum int64 `json:"sum"`
	}
	out, _, err := pmcp.CallToolTyped[sum](ctx, s, "add", map[string]int{"a": 19, "b": 23})
	if err != nil || out.Sum != 42 {
		t.Errorf("add: %+v %v", out, err)
	}
	var te *pmcp.ToolError
	if _, _, err := pmcp.CallToolTyped[sum](ctx, s, "test_error_handling", nil); !errors.As(err, &te) {
		t.Errorf("test_error_handling: %v", err)
	}
	var re *jsonrpc.Error
	if _, err := s.CallTool(ctx, "panic", nil); !errors.As(err, &re) || re.Code != jsonrpc.CodeInternalError {
		t.Errorf("panic tool: %v", err)
	}

	var mu sync.Mutex
	var progress []float64
	if _, err := s.CallTool(ctx, "test_tool_with_progress", nil, pmcp.WithProgress(func(ctx context.Context, p *pmcp.ProgressParams) {
		mu.Lock()
		progress = append(progress, p.Progress)
		mu.Unlock()
	})); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if !slices.Equal(progress, []float64{0, 50, 100}) {
		t.Errorf("progress %v", progress)
	}
	mu.Unlock()

	if got := call("test_tool_with_logging"); got != "Logging test completed" {
		t.Errorf("logging tool: %q", got)
	}
	for _, want := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
		select {
		case got := <-logs:
			if got != want {
				t.Errorf("log %q, want %q", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no log record %q", want)
		}
	}

	rr, err := s.ReadResource(ctx, "test://template/5/data")
	if err != nil || !strings.Contains(rr.Contents[0].Text, "Data for ID: 5") {
		t.Errorf("template read: %+v %v", rr, err)
	}
	gp, err := s.GetPrompt(ctx, "test_prompt_with_arguments", map[string]string{"arg1": "x", "arg2": "y"})
	if err != nil || !strings.Contains(gp.Messages[0].Content.(*pmcp.TextContent).Text, "arg1='x'") {
		t.Errorf("prompt: %+v %v", gp, err)
	}
	if _, err := s.AllResources(ctx); err != nil {
		t.Error(err)
	}
	if _, err := s.AllResourceTemplates(ctx); err != nil {
		t.Error(err)
	}
	if _, err := s.AllPrompts(ctx); err != nil {
		t.Error(err)
	}
}

// TestClientEverythingMRTRTools drives the modern-only tools with explicit
// input keys through the client's handlers.
func TestClientEverythingMRTRTools(t *testing.T) {
	s := everythingClient(t, pmcp.EraModern, make(chan string, 64))
	ctx := context.Background()
	for _, tc := range []struct {
		tool string
		args any
		want string // prefix of the text result
	}{
		{"test_input_required_result_elicitation", nil, "Hello, alice!"},
		{"test_input_required_result_sampling", nil, "The model answered: Paris"},
		{"test_input_required_result_list_roots", nil, "Client roots: work (file:///work)"},
		{"test_input_required_result_request_state", nil, `state-ok: continuation={"step":"confirm"} action=accept`},
		{"test_input_required_result_multiple_inputs", nil, "name=alice greeting=Paris roots=work (file:///work)"},
		{"test_input_required_result_multi_round", nil, "alice likes blue"},
		{"test_input_required_result_tampered_state", nil, "state verified: accept"},
		{"test_input_required_result_capabilities", nil, "answered: "},
		{"test_missing_capability", nil, "sampling capability present"},
		{"test_elicitation_sep1034_defaults", nil, "Elicitation completed: action=accept"},
		{"test_sampling", map[string]string{"prompt": "capital of France?"}, "LLM response: Paris"},
		{"test_elicitation", map[string]string{"message": "who are you?"}, "User response: action=accept"},
	} {
		res, err := s.CallTool(ctx, tc.tool, tc.args)
		if err != nil {
			t.Errorf("%s: %v", tc.tool, err)
			continue
		}
		if got := text(t, res); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %q, want prefix %q", tc.tool, got, tc.want)
		}
	}
	gp, err := s.GetPrompt(ctx, "test_input_required_result_prompt", nil)
	if err != nil || gp.Messages[0].Content.(*pmcp.TextContent).Text != "Context from the user: tests" {
		t.Errorf("prompt with input: %+v %v", gp, err)
	}
}
