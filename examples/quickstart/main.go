// Command quickstart is the README's quick start: an MCP server with one
// tool, add, served over stdio in both protocol eras. It exits with status 0
// when the client closes stdin.
package main

import (
	"context"
	"errors"
	"log"

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

func main() {
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "demo", Version: "1.0.0"})
	if err != nil {
		log.Fatal(err)
	}
	err = pmcp.AddTool(srv, &pmcp.Tool{Name: "add", Description: "Adds two integers."},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, in AddIn) (AddOut, error) {
			_ = extra.Log(pmcp.LevelInfo, "adding")
			sum := in.A + in.B
			if (sum > in.A) != (in.B > 0) {
				return AddOut{}, errors.New("the sum overflows int") // becomes isError: true
			}
			return AddOut{Sum: sum}, nil
		})
	if err != nil {
		log.Fatal(err)
	}
	// Serve returns nil when the client closes its side (end of stdin).
	if err := srv.Serve(context.Background(), stdio.Stdio(stdio.Options{})); err != nil {
		log.Fatal(err)
	}
}
