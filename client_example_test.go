package pmcp_test

import (
	"context"
	"fmt"
	"log"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
	"github.com/gopmcp/pmcp/transport/memory"
)

type sumIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

type sumOut struct {
	Sum int `json:"sum"`
}

// serveInMemory starts srv on one end of an in-memory pipe and returns the
// other end plus a function that waits for the server to stop.
func serveInMemory(srv *pmcp.Server) (clientEnd jsonrpc.Stream, wait func()) {
	a, b := memory.NewPipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(context.Background(), a) // returns when the client closes
	}()
	return b, func() { <-done }
}

// A client connects, negotiates the era (the modern one against a pmcp
// server), lists the tools and calls one with typed input and output.
func ExampleClient() {
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "calc", Version: "1.0.0"})
	if err != nil {
		log.Fatal(err)
	}
	err = pmcp.AddTool(srv, &pmcp.Tool{Name: "sum", Description: "Adds two integers."},
		func(ctx context.Context, _ *pmcp.RequestHandlerExtra, in sumIn) (sumOut, error) {
			return sumOut{Sum: in.A + in.B}, nil
		})
	if err != nil {
		log.Fatal(err)
	}
	st, wait := serveInMemory(srv)

	ctx := context.Background()
	client := pmcp.NewClient(pmcp.ClientOptions{Name: "example-client", Version: "1.0.0"})
	session, err := client.Connect(ctx, st) // or the stream of a transport/command child process
	if err != nil {
		log.Fatal(err)
	}
	defer wait()
	defer session.Close()
	fmt.Println(session.Era(), session.ProtocolVersion(), session.ServerInfo().Name)

	tools, err := session.AllTools(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, tool := range tools {
		fmt.Println("tool:", tool.Name)
	}
	out, _, err := pmcp.CallToolTyped[sumOut](ctx, session, "sum", sumIn{A: 2, B: 3})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("sum:", out.Sum)
	// Output:
	// modern 2026-07-28 calc
	// tool: sum
	// sum: 5
}

// The same elicitation handler answers a legacy server's real
// elicitation/create request and a modern server's input_required round:
// tool and client code are written once for both eras.
func ExampleClientOptions_elicitation() {
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "greeter"})
	if err != nil {
		log.Fatal(err)
	}
	err = pmcp.AddTool(srv, &pmcp.Tool{Name: "greet"},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ struct{}) (string, error) {
			res, err := extra.Peer.Elicit(ctx, &pmcp.ElicitParams{
				Message:         "What is your name?",
				RequestedSchema: jsontext.Value(`{"type":"object","properties":{"name":{"type":"string"}}}`),
			})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("Hello, %v!", res.Content["name"]), nil
		})
	if err != nil {
		log.Fatal(err)
	}
	opts := pmcp.ClientOptions{
		// Setting the handler declares the elicitation capability.
		Elicitation: func(ctx context.Context, p *pmcp.ElicitParams) (*pmcp.ElicitResult, error) {
			return &pmcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
	}
	for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
		opts.Era = era
		st, wait := serveInMemory(srv)
		session, err := pmcp.NewClient(opts).Connect(context.Background(), st)
		if err != nil {
			log.Fatal(err)
		}
		res, err := session.CallTool(context.Background(), "greet", nil)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(session.Era(), res.Content[0].(*pmcp.TextContent).Text)
		session.Close()
		wait()
	}
	// Output:
	// modern Hello, Ada!
	// legacy Hello, Ada!
}
