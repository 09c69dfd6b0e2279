// Command client connects to an MCP server over Streamable HTTP (the era is
// negotiated), calls its add tool and prints the era and the result. Start
// examples/httpserver or `pmcp serve` first.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"time"

	"github.com/gopmcp/pmcp"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8080/mcp", "server endpoint")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err := run(ctx, *url)
	cancel()
	if err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, url string) error {
	c := pmcp.NewClient(pmcp.ClientOptions{Name: "my-app", Version: "1.0.0"})
	s, err := c.ConnectHTTP(ctx, url, pmcp.HTTPClientOptions{}) // or c.Connect(ctx, stream)
	if err != nil {
		return err
	}
	defer s.Close()
	res, err := s.CallTool(ctx, "add", map[string]int{"a": 2, "b": 3},
		pmcp.WithProgress(func(ctx context.Context, p *pmcp.ProgressParams) { log.Println("progress:", p.Progress) }))
	if err != nil {
		return err // transport or protocol failure, or a JSON-RPC error
	}
	if res.IsError {
		return fmt.Errorf("add reported an error: %v", res.Content)
	}
	for _, block := range res.Content {
		if t, ok := block.(*pmcp.TextContent); ok {
			fmt.Println(s.Era(), t.Text)
		}
	}
	return nil
}
