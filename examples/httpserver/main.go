// Command httpserver serves the quick start's add tool over Streamable HTTP:
// both protocol eras at one endpoint, every limit at its default. It prints
// the endpoint's URL and runs until SIGINT or SIGTERM, then shuts down.
package main

import (
	"context"
	"errors"
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
)

type AddIn struct {
	A int `json:"a" jsonschema:"first addend"`
	B int `json:"b" jsonschema:"second addend"`
}

type AddOut struct {
	Sum int `json:"sum"`
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address (port 0 picks a free port)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *addr)
	stop()
	if err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, addr string) error {
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "demo-http", Version: "1.0.0"})
	if err != nil {
		return err
	}
	err = pmcp.AddTool(srv, &pmcp.Tool{Name: "add", Description: "Adds two integers."},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, in AddIn) (AddOut, error) {
			sum := in.A + in.B
			if (sum > in.A) != (in.B > 0) {
				return AddOut{}, errors.New("the sum overflows int")
			}
			return AddOut{Sum: sum}, nil
		})
	if err != nil {
		return err
	}

	// zero options: loopback Host/Origin checks, body, session and queue
	// limits all on.
	h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	hs := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		// No WriteTimeout: it would cut long-lived SSE streams.
	}
	fmt.Printf("listening on http://%s/mcp\n", ln.Addr())
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	// End the handler's streams first so that the HTTP server's wait for
	// idle connections can complete.
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hdone := make(chan error, 1)
	go func() { hdone <- h.Shutdown(sctx) }()
	err = hs.Shutdown(sctx)
	if herr := <-hdone; err == nil {
		err = herr
	}
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
