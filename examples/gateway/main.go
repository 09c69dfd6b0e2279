// Command gateway serves several MCP servers behind one Streamable HTTP
// endpoint: each upstream's tools and prompts are prefixed with its name,
// and tools matching a -deny glob are hidden and refused. Upstreams are
// given as NAME=URL (a Streamable HTTP server) or NAME=PATH (a stdio
// server started as a child process). It prints the endpoint's URL and
// runs until SIGINT or SIGTERM.
//
//	gateway -deny 'calc_*secret*' calc=./calc-server remote=http://127.0.0.1:8080/mcp
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
	"strings"
	"syscall"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/proxy"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9000", "listen address (port 0 picks a free port)")
	deny := flag.String("deny", "", "glob of the (prefixed) tool names to hide and refuse")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *addr, *deny, flag.Args())
	stop()
	if err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, addr, deny string, specs []string) error {
	p, err := newGateway(specs, deny)
	if err != nil {
		return err
	}
	defer p.Close()
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

// example:gateway begin
// newGateway serves the upstreams in specs (NAME=URL or NAME=PATH) as one
// server: tools and prompts prefixed NAME_, tools matching deny hidden and
// refused, one child per stdio upstream shared by every client.
func newGateway(specs []string, deny string) (*proxy.Proxy, error) {
	var ups []proxy.Upstream
	for _, spec := range specs {
		name, target, ok := strings.Cut(spec, "=")
		if !ok {
			return nil, fmt.Errorf("upstream %q: want NAME=URL or NAME=PATH", spec)
		}
		dial := proxy.HTTP(target, pmcp.HTTPClientOptions{})
		if !strings.HasPrefix(target, "http") {
			var err error
			if dial, err = proxy.Command(target, nil, proxy.CommandOptions{}); err != nil {
				return nil, err
			}
		}
		ups = append(ups, proxy.Upstream{Name: name, Dial: dial})
	}
	opts := proxy.Options{Upstreams: ups, Shared: true}
	if deny != "" {
		opts.DenyTools = []string{deny}
	}
	return proxy.New(opts)
}

// example:gateway end
