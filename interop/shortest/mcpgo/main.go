// Command mcpgo is examples/shortest written with github.com/mark3labs/mcp-go:
// the same tools, resource and prompt, stdio or -http ADDR, stopped by
// SIGINT or SIGTERM (HTTP gracefully, within 5 s), every error reported.
// interop's TestShortestServers counts its lines and runs it.
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

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

type AddIn struct {
	A int `json:"a" jsonschema_description:"first addend"`
	B int `json:"b" jsonschema_description:"second addend"`
}

type AddOut struct {
	Sum int `json:"sum"`
}

type GreetIn struct {
	Name string `json:"name" jsonschema_description:"who to greet"`
}

type GreetOut struct {
	Greeting string `json:"greeting"`
}

func main() {
	addr := flag.String("http", "", "serve Streamable HTTP on this address instead of stdio")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s := server.NewMCPServer("shortest", "1.0.0")
	s.AddTool(mcp.NewTool("add", mcp.WithDescription("Adds two integers."), mcp.WithInputSchema[AddIn](), mcp.WithOutputSchema[AddOut]()),
		mcp.NewStructuredToolHandler(func(ctx context.Context, _ mcp.CallToolRequest, in AddIn) (AddOut, error) {
			return AddOut{Sum: in.A + in.B}, nil
		}))
	s.AddTool(mcp.NewTool("greet", mcp.WithDescription("Greets someone."), mcp.WithInputSchema[GreetIn](), mcp.WithOutputSchema[GreetOut]()),
		mcp.NewStructuredToolHandler(func(ctx context.Context, _ mcp.CallToolRequest, in GreetIn) (GreetOut, error) {
			return GreetOut{Greeting: "Hello, " + in.Name + "!"}, nil
		}))
	s.AddResource(mcp.NewResource("info://about", "about", mcp.WithMIMEType("text/plain")),
		func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: "A tiny MCP server."}}, nil
		})
	s.AddPrompt(mcp.NewPrompt("review", mcp.WithPromptDescription("Asks for a code review."), mcp.WithArgument("code", mcp.RequiredArgument())),
		func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult("", []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("Review this code:\n"+req.Params.Arguments["code"]))}), nil
		})
	if *addr == "" {
		if err := server.NewStdioServer(s).Listen(ctx, os.Stdin, os.Stdout); err != nil {
			log.Fatal(err)
		}
		return
	}
	hs := &http.Server{Addr: *addr, Handler: server.NewStreamableHTTPServer(s), ReadHeaderTimeout: 10 * time.Second}
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
