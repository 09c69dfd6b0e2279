// Command gosdk is the bench server for github.com/modelcontextprotocol/go-sdk.
// See bench/README.md.
package main

import (
	"context"
	"net/http"
	"strconv"

	"github.com/gopmcp/pmcp/bench/internal/harness"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoIn struct {
	Text string `json:"text"`
}

type addIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func newServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "bench-gosdk", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes its text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return text(in.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Adds a and b."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, any, error) {
			return text(strconv.FormatFloat(in.A+in.B, 'g', -1, 64)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "stream", Description: "Sends progress, then a result."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			if tok := req.Params.GetProgressToken(); tok != nil {
				for i := 1; i <= harness.StreamNotes; i++ {
					if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: harness.StreamNotes}); err != nil {
						return nil, nil, err
					}
				}
			}
			return text("done"), nil, nil
		})
	return s
}

func main() {
	harness.Main(func() http.Handler {
		s := newServer()
		get := func(*http.Request) *mcp.Server { return s }
		// go-sdk serves the 2026-07-28 protocol only from a Stateless
		// handler, and legacy sessions only from a stateful one, so the
		// endpoint routes on the MCP-Protocol-Version header.
		stateful := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{JSONResponse: !*harness.SSE})
		stateless := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{JSONResponse: !*harness.SSE, Stateless: true})
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Mcp-Protocol-Version") >= "2026-07-28" {
				stateless.ServeHTTP(w, r)
				return
			}
			stateful.ServeHTTP(w, r)
		})
	}, func(ctx context.Context) error {
		return newServer().Run(ctx, &mcp.StdioTransport{})
	})
}
