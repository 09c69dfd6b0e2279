// Command shortest is the comparison server of the README: two typed tools,
// a resource and a prompt, served over stdio or, with -http ADDR, over
// Streamable HTTP at http://ADDR/mcp. SIGINT or SIGTERM stops it (HTTP
// gracefully, within 5 s); every error is reported. interop/shortest holds
// the same server written with go-sdk and with mcp-go.
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/transport/stdio"
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

// example:main begin

func main() {
	addr := flag.String("http", "", "serve Streamable HTTP on this address instead of stdio")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "shortest", Version: "1.0.0"})
	if err != nil {
		log.Fatal(err)
	}
	// Every registration returns its error; errors.Join reports them all.
	err = errors.Join(
		pmcp.AddTool(srv, &pmcp.Tool{Name: "add", Description: "Adds two integers."},
			func(ctx context.Context, _ *pmcp.RequestHandlerExtra, in AddIn) (AddOut, error) {
				return AddOut{Sum: in.A + in.B}, nil
			}),
		pmcp.AddTool(srv, &pmcp.Tool{Name: "greet", Description: "Greets someone."},
			func(ctx context.Context, _ *pmcp.RequestHandlerExtra, in GreetIn) (GreetOut, error) {
				return GreetOut{Greeting: "Hello, " + in.Name + "!"}, nil
			}),
		srv.AddResource(&pmcp.Resource{URI: "info://about", Name: "about", MIMEType: "text/plain"},
			func(ctx context.Context, _ *pmcp.RequestHandlerExtra, r *pmcp.ResourceRequest) (*pmcp.ReadResourceResult, error) {
				return &pmcp.ReadResourceResult{Contents: []*pmcp.ResourceContents{{URI: r.URI, MIMEType: "text/plain", Text: "A tiny MCP server."}}}, nil
			}),
		srv.AddPrompt(&pmcp.Prompt{Name: "review", Description: "Asks for a code review.", Arguments: []*pmcp.PromptArgument{{Name: "code", Required: true}}},
			func(ctx context.Context, _ *pmcp.RequestHandlerExtra, p *pmcp.GetPromptParams) (*pmcp.GetPromptResult, error) {
				return &pmcp.GetPromptResult{Messages: []*pmcp.PromptMessage{{Role: "user", Content: pmcp.Text("Review this code:\n" + p.Arguments["code"])}}}, nil
			}),
	)
	if err != nil {
		log.Fatal(err) // a registration failed: a schema, a name, a URI
	}
	if *addr != "" {
		err = srv.ListenAndServe(ctx, *addr) // http://ADDR/mcp, both eras
	} else {
		err = srv.Serve(ctx, stdio.Stdio(stdio.Options{}))
	}
	if err != nil {
		log.Fatal(err)
	}
}

// example:main end
