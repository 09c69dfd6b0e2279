// Command gosdk is examples/shortest written with
// github.com/modelcontextprotocol/go-sdk: the same tools, resource and
// prompt, stdio or -http ADDR, stopped by SIGINT or SIGTERM (HTTP
// gracefully, within 5 s), every error reported. interop's
// TestShortestServers counts its lines and runs it.
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type AddIn struct {
	A int `json:"a" jsonschema:"first addend"`
	B int `json:"b" jsonschema:"second addend"`
}

type AddOut struct {
	Sum int `json:"sum"`
}

type GreetIn struct {
	Name string `json:"name" jsonschema:"who to greet"`
}

type GreetOut struct {
	Greeting string `json:"greeting"`
}

func main() {
	addr := flag.String("http", "", "serve Streamable HTTP on this address instead of stdio")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s := mcp.NewServer(&mcp.Implementation{Name: "shortest", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Adds two integers."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in AddIn) (*mcp.CallToolResult, AddOut, error) {
			return nil, AddOut{Sum: in.A + in.B}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "greet", Description: "Greets someone."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in GreetIn) (*mcp.CallToolResult, GreetOut, error) {
			return nil, GreetOut{Greeting: "Hello, " + in.Name + "!"}, nil
		})
	s.AddResource(&mcp.Resource{URI: "info://about", Name: "about", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "A tiny MCP server."}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "review", Description: "Asks for a code review.", Arguments: []*mcp.PromptArgument{{Name: "code", Required: true}}},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Review this code:\n" + req.Params.Arguments["code"]}}}}, nil
		})
	if *addr == "" {
		if err := s.Run(ctx, &mcp.StdioTransport{}); err != nil {
			log.Fatal(err)
		}
		return
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	hs := &http.Server{Addr: *addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	shut := make(chan error, 1)
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		shut <- hs.Shutdown(sctx)
	}()
	if err := hs.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
	if err := <-shut; err != nil {
		log.Fatal(err)
	}
}
