// Command mcpgo is the bench server for github.com/mark3labs/mcp-go. See
// bench/README.md.
package main

import (
	"context"
	"net/http"
	"os"
	"strconv"

	"github.com/gopmcp/pmcp/bench/internal/harness"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

type echoIn struct {
	Text string `json:"text"`
}

type addIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

func newServer() *server.MCPServer {
	s := server.NewMCPServer("bench-mcpgo", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("echo", mcp.WithDescription("Echoes its text."),
		mcp.WithString("text", mcp.Required())),
		mcp.NewTypedToolHandler(func(_ context.Context, _ mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(in.Text), nil
		}))
	s.AddTool(mcp.NewTool("add", mcp.WithDescription("Adds a and b."),
		mcp.WithNumber("a", mcp.Required()), mcp.WithNumber("b", mcp.Required())),
		mcp.NewTypedToolHandler(func(_ context.Context, _ mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(strconv.FormatFloat(in.A+in.B, 'g', -1, 64)), nil
		}))
	s.AddTool(mcp.NewTool("stream", mcp.WithDescription("Sends progress, then a result.")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
				srv := server.ServerFromContext(ctx)
				for i := 1; i <= harness.StreamNotes; i++ {
					if err := srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
						"progressToken": req.Params.Meta.ProgressToken, "progress": i, "total": harness.StreamNotes,
					}); err != nil {
						return nil, err
					}
				}
			}
			return mcp.NewToolResultText("done"), nil
		})
	return s
}

func main() {
	harness.Main(func() http.Handler {
		// Stateful: initialize opens a tracked session, as in the other
		// servers' legacy rows.
		return server.NewStreamableHTTPServer(newServer(), server.WithStateful(true))
	}, func(ctx context.Context) error {
		return server.NewStdioServer(newServer()).Listen(ctx, os.Stdin, os.Stdout)
	})
}
