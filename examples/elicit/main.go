// Command elicit shows a handler written once for both protocol eras: its
// tool asks the client for a name with Elicit. A legacy client gets a real
// elicitation/create request; a modern client gets an input_required result
// and retries with the answer. Server and client run in this process,
// connected by an in-memory pipe, once per era.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/transport/memory"
)

var schema = jsontext.Value(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)

// example:handler begin
func greet(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ struct{}) (string, error) {
	res, err := extra.Peer.Elicit(ctx, &pmcp.ElicitParams{Message: "What is your name?", RequestedSchema: schema})
	if err != nil {
		return "", err
	}
	if res.Action != "accept" {
		return "Hello, stranger!", nil
	}
	return fmt.Sprintf("Hello, %v!", res.Content["name"]), nil
}

// example:handler end

func main() {
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "greeter", Version: "1.0.0"})
	if err != nil {
		log.Fatal(err)
	}
	if err := pmcp.AddTool(srv, &pmcp.Tool{Name: "greet", Description: "Greets you by name."}, greet); err != nil {
		log.Fatal(err)
	}
	opts := pmcp.ClientOptions{
		Name: "elicit-example", Version: "1.0.0",
		// Setting the handler declares the elicitation capability.
		Elicitation: func(ctx context.Context, p *pmcp.ElicitParams) (*pmcp.ElicitResult, error) {
			return &pmcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
	}
	for _, era := range []pmcp.Era{pmcp.EraLegacy, pmcp.EraModern} {
		opts.Era = era
		if err := greetOnce(srv, opts); err != nil {
			log.Fatal(err)
		}
	}
}

// greetOnce serves srv on one end of an in-memory pipe, connects a client
// to the other end and calls greet.
func greetOnce(srv *pmcp.Server, opts pmcp.ClientOptions) error {
	ctx := context.Background()
	serverEnd, clientEnd := memory.NewPipe()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, serverEnd) }()

	s, err := pmcp.NewClient(opts).Connect(ctx, clientEnd)
	if err != nil {
		return err
	}
	res, err := s.CallTool(ctx, "greet", nil)
	if err == nil && res.IsError {
		err = fmt.Errorf("greet reported an error: %v", res.Content)
	}
	if err == nil {
		fmt.Println(s.Era(), res.Content[0].(*pmcp.TextContent).Text)
	}
	_ = s.Close()
	if serr := <-served; err == nil {
		err = serr
	}
	return err
}
