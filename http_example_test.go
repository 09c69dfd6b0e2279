package pmcp_test

import (
	"context"
	"log"
	"net/http"
	"time"

	"github.com/gopmcp/pmcp"
)

// Serve both protocol eras over Streamable HTTP at /mcp. The zero options
// keep every limit on (body size, sessions, idle timeout, queues) and
// protect a loopback listener against DNS rebinding.
func ExampleNewStreamableHTTPHandler() {
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "example"})
	if err != nil {
		log.Fatal(err)
	}
	h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	hs := &http.Server{
		Addr:              "127.0.0.1:8080",
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		// No WriteTimeout: it would cut long-lived SSE streams.
	}
	go func() {
		if err := hs.ListenAndServe(); err != http.ErrServerClosed {
			log.Print(err)
		}
	}()

	// On shutdown, end the handler's streams first so that the server's
	// wait for idle connections can complete.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		_ = h.Shutdown(ctx)
		close(done)
	}()
	_ = hs.Shutdown(ctx)
	<-done
}
