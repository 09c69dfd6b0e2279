package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
)

// TestCallServerDiesMidCall: `pmcp call` against a legacy HTTP server
// that dies during the call fails at the first refused reconnection (one
// retry delay, 1 s), naming the URL, not after MaxReconnects attempts.
func TestCallServerDiesMidCall(t *testing.T) {
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "dying", Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{}, 1)
	if err := pmcp.AddTool(srv, &pmcp.Tool{Name: "hang"}, func(ctx context.Context, _ *pmcp.RequestHandlerExtra, _ struct{}) (string, error) {
		started <- struct{}{}
		<-ctx.Done()
		return "", ctx.Err()
	}); err != nil {
		t.Fatal(err)
	}
	h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{})
	defer h.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	kill := serveOn(t, ln, h)
	url := "http://" + ln.Addr().String() + "/mcp"

	cmd := hostCmd("call", "hang", "--era", "legacy", "--url", url)
	go func() {
		<-started
		kill() // the server dies mid-call
	}()
	began := time.Now()
	code, _, errs := runHost(t, cmd)
	if took := time.Since(began); took > 4*time.Second {
		t.Errorf("took %v", took)
	}
	if code != exitConn || !strings.Contains(errs, url) || !strings.Contains(errs, "connection refused") || strings.Contains(errs, "closed response body") {
		t.Errorf("exit %d: %s", code, errs)
	}
	oneLine(t, "dead server", errs)
}
