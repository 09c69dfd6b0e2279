// Command bridge puts a stdio MCP server on the network: it starts the
// command given after its flags as a child process per client session and
// serves it over Streamable HTTP in both protocol eras, whichever era the
// child speaks. It prints the endpoint's URL and runs until SIGINT or
// SIGTERM.
//
//	bridge -addr 127.0.0.1:9000 ./my-stdio-server --flag
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/proxy"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9000", "listen address (port 0 picks a free port)")
	flag.Parse()
	if flag.NArg() == 0 {
		log.Fatal("usage: bridge [-addr ADDR] COMMAND [ARGS...]")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *addr, flag.Args())
	stop()
	if err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, addr string, command []string) error {
	p, err := newBridge(command)
	if err != nil {
		return err
	}
	defer p.Close() // shuts the children down
	h := pmcp.NewStreamableHTTPHandler(p.Server(), pmcp.StreamableHTTPOptions{})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("listening on http://%s/mcp\n", ln.Addr())
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = h.Shutdown(sctx)
	return hs.Shutdown(sctx)
}

// example:bridge begin
// newBridge serves command (a stdio MCP server) in both eras: one child
// per client session, stopped with SIGTERM then SIGKILL when it ends.
// Serve p.Server() over HTTP (pmcp.NewStreamableHTTPHandler) or stdio.
func newBridge(command []string) (*proxy.Proxy, error) {
	dial, err := proxy.Command(command[0], command[1:], proxy.CommandOptions{})
	if err != nil {
		return nil, err
	}
	return proxy.New(proxy.Options{
		Upstreams: []proxy.Upstream{{Name: "child", Dial: dial}},
	})
}

// example:bridge end
