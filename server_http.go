package pmcp

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// listenAndServeGrace bounds ListenAndServe's shutdown: requests in flight
// may finish for this long after ctx is done.
const listenAndServeGrace = 5 * time.Second

// ListenAndServe serves s over Streamable HTTP, both protocol eras, at
// http://addr/mcp with a zero StreamableHTTPOptions (loopback Host/Origin
// checks and every limit on) and a 10 s limit on reading request headers,
// until ctx is done. It then shuts down gracefully: open streams end at
// once, requests in flight get 5 s to finish. It returns nil after such a
// shutdown, the error of the listener otherwise, or the shutdown's error
// when the 5 s expired. Stop it on a signal with signal.NotifyContext.
//
// For other options, paths or muxes, mount NewStreamableHTTPHandler on an
// http.Server and call its Shutdown before the server's.
func (s *Server) ListenAndServe(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return s.serveListener(ctx, ln)
}

func (s *Server) serveListener(ctx context.Context, ln net.Listener) error {
	h := NewStreamableHTTPHandler(s, StreamableHTTPOptions{})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second} // no WriteTimeout: it would cut SSE streams
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		h.Close()
		return err
	case <-ctx.Done():
	}
	// The handler ends its idle streams first, so that the server's wait
	// for idle connections can complete.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), listenAndServeGrace)
	defer cancel()
	hdone := make(chan error, 1)
	go func() { hdone <- h.Shutdown(sctx) }()
	err := hs.Shutdown(sctx)
	err = errors.Join(err, <-hdone)
	if err != nil {
		_ = hs.Close()
	}
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
