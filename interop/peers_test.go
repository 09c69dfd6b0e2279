package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpgo "github.com/mark3labs/mcp-go/server"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Every peer server offers the same small contract, so one test body
// covers them all:
//
//   - tool "add" {a, b: integers} -> text "<a+b>"
//   - tool "slow_progress" -> progress 1/2 and 2/2, then text "done"
//   - tool "region" {region: string, x-mcp-header "Region"} -> text "<region>"
//   - prompt "greet" {name} -> one user message "Hello, <name>!"
//   - resource "test://hello" -> text "hello world"

// regionSchema carries an x-mcp-header annotation (SEP-2243): over modern
// HTTP the client must mirror the argument into Mcp-Param-Region.
const regionSchema = `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}},"required":["region"]}`

const addSchema = `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`

// ---- go-sdk v1.8.0 ----

func newGoSDKServer() *gosdk.Server {
	s := gosdk.NewServer(&gosdk.Implementation{Name: "go-sdk-peer", Version: "1.8.0"}, nil)
	s.AddTool(&gosdk.Tool{Name: "add", Description: "adds", InputSchema: json.RawMessage(addSchema)},
		func(ctx context.Context, req *gosdk.CallToolRequest) (*gosdk.CallToolResult, error) {
			var in struct{ A, B int }
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			return &gosdk.CallToolResult{Content: []gosdk.Content{&gosdk.TextContent{Text: fmt.Sprint(in.A + in.B)}}}, nil
		})
	s.AddTool(&gosdk.Tool{Name: "slow_progress", Description: "reports progress", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *gosdk.CallToolRequest) (*gosdk.CallToolResult, error) {
			if tok := req.Params.GetProgressToken(); tok != nil {
				for i := 1; i <= 2; i++ {
					if err := req.Session.NotifyProgress(ctx, &gosdk.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 2}); err != nil {
						return nil, err
					}
				}
			}
			return &gosdk.CallToolResult{Content: []gosdk.Content{&gosdk.TextContent{Text: "done"}}}, nil
		})
	s.AddTool(&gosdk.Tool{Name: "region", Description: "echoes its region", InputSchema: json.RawMessage(regionSchema)},
		func(ctx context.Context, req *gosdk.CallToolRequest) (*gosdk.CallToolResult, error) {
			var in struct{ Region string }
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			return &gosdk.CallToolResult{Content: []gosdk.Content{&gosdk.TextContent{Text: in.Region}}}, nil
		})
	s.AddPrompt(&gosdk.Prompt{Name: "greet", Arguments: []*gosdk.PromptArgument{{Name: "name", Required: true}}},
		func(ctx context.Context, req *gosdk.GetPromptRequest) (*gosdk.GetPromptResult, error) {
			return &gosdk.GetPromptResult{Messages: []*gosdk.PromptMessage{
				{Role: "user", Content: &gosdk.TextContent{Text: "Hello, " + req.Params.Arguments["name"] + "!"}},
			}}, nil
		})
	s.AddResource(&gosdk.Resource{URI: "test://hello", Name: "hello", MIMEType: "text/plain"},
		func(ctx context.Context, req *gosdk.ReadResourceRequest) (*gosdk.ReadResourceResult, error) {
			return &gosdk.ReadResourceResult{Contents: []*gosdk.ResourceContents{{URI: "test://hello", MIMEType: "text/plain", Text: "hello world"}}}, nil
		})
	return s
}

// goSDKHTTP serves the go-sdk peer over Streamable HTTP, stateless (the
// only mode in which go-sdk serves 2026-07-28) or stateful (legacy only).
func goSDKHTTP(t *testing.T, stateless bool) string {
	t.Helper()
	s := newGoSDKServer()
	h := gosdk.NewStreamableHTTPHandler(func(*http.Request) *gosdk.Server { return s }, &gosdk.StreamableHTTPOptions{Stateless: stateless})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// ---- mcp-go v1.2.1 ----

func newMCPGoServer() *mcpgo.MCPServer {
	s := mcpgo.NewMCPServer("mcp-go-peer", "1.2.1",
		mcpgo.WithToolCapabilities(false), mcpgo.WithResourceCapabilities(false, false), mcpgo.WithPromptCapabilities(false))
	s.AddTool(mcp.NewToolWithRawSchema("add", "adds", json.RawMessage(addSchema)),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(fmt.Sprint(req.GetInt("a", 0) + req.GetInt("b", 0))), nil
		})
	s.AddTool(mcp.NewToolWithRawSchema("slow_progress", "reports progress", json.RawMessage(`{"type":"object"}`)),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
				srv := mcpgo.ServerFromContext(ctx)
				for i := 1; i <= 2; i++ {
					if err := srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
						"progressToken": req.Params.Meta.ProgressToken, "progress": i, "total": 2,
					}); err != nil {
						return nil, err
					}
				}
			}
			return mcp.NewToolResultText("done"), nil
		})
	s.AddTool(mcp.NewToolWithRawSchema("region", "echoes its region", json.RawMessage(regionSchema)),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(req.GetString("region", "")), nil
		})
	s.AddPrompt(mcp.NewPrompt("greet", mcp.WithArgument("name", mcp.RequiredArgument())),
		func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult("", []mcp.PromptMessage{
				mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("Hello, "+req.Params.Arguments["name"]+"!")),
			}), nil
		})
	s.AddResource(mcp.NewResource("test://hello", "hello", mcp.WithMIMEType("text/plain")),
		func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: "test://hello", MIMEType: "text/plain", Text: "hello world"}}, nil
		})
	return s
}

// mcpGoHTTP serves the mcp-go peer over Streamable HTTP. versions, when
// given, restricts what it advertises (legacy only: "2025-11-25").
func mcpGoHTTP(t *testing.T, versions ...string) string {
	t.Helper()
	opts := []mcpgo.StreamableHTTPOption{}
	if len(versions) > 0 {
		opts = append(opts, mcpgo.WithStreamableHTTPProtocolVersions(versions...))
	}
	h := mcpgo.NewStreamableHTTPServer(newMCPGoServer(), opts...)
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		_ = h.Shutdown(context.Background())
		ts.Close()
	})
	return ts.URL + "/mcp"
}
