// Command revproxy is the gateway leg's yardstick: the standard library's
// net/http/httputil.ReverseProxy in front of an MCP server, nothing else.
// It shows what any HTTP hop costs, so the gateway's cost can be read as
// a multiple of it. It follows the bench servers' flags (-addr,
// -cpuprofile; no -stdio) plus -upstream, the URL /mcp is forwarded to.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"

	"github.com/gopmcp/pmcp/bench/internal/harness"
)

var upstream = flag.String("upstream", "", "the MCP endpoint to forward to (http://127.0.0.1:PORT/mcp)")

func newHTTP() http.Handler {
	u, err := url.Parse(*upstream)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		fmt.Fprintf(os.Stderr, "revproxy: -upstream must be an http URL, got %q\n", *upstream)
		os.Exit(2)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// One idle connection per client connection at the highest
	// concurrency, as the gateway keeps: the default of 2 would make the
	// yardstick pay for new connections the gateway never opens.
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 2048, 1024
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.URL.Path = u.Path
			pr.Out.Host = u.Host
		},
		Transport: tr, // SSE answers are flushed as they come (ReverseProxy does that for text/event-stream)
		ErrorLog:  log.New(io.Discard, "", 0),
	}
}

func main() {
	harness.Main(newHTTP, func(context.Context) error { return errors.New("revproxy has no -stdio") })
}
