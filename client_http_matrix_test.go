package pmcp_test

import (
	"context"
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/internal/everything"
	"github.com/gopmcp/pmcp/jsonrpc"
	"github.com/gopmcp/pmcp/transport/memory"
	"github.com/gopmcp/pmcp/transport/stdio"
)

// transportCase connects a client to a fresh everything server over one
// transport and returns the session.
type transportCase struct {
	name    string
	connect func(t *testing.T, c *pmcp.Client) *pmcp.ClientSession
}

func newEverything(t *testing.T) *pmcp.Server {
	t.Helper()
	srv, err := everything.New(everything.Options{Step: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// serveStreamPair serves srv on one end of a stream pair and connects c
// on the other.
func serveStreamPair(t *testing.T, c *pmcp.Client, srvEnd, cliEnd jsonrpc.Stream) *pmcp.ClientSession {
	t.Helper()
	return serveStreamPairWith(t, newEverything(t), c, srvEnd, cliEnd)
}

// serveStreamPairWith is serveStreamPair with a given server.
func serveStreamPairWith(t *testing.T, srv *pmcp.Server, c *pmcp.Client, srvEnd, cliEnd jsonrpc.Stream) *pmcp.ClientSession {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(context.Background(), srvEnd)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := c.Connect(ctx, cliEnd)
	if err != nil {
		_ = srvEnd.Close()
		<-done
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.Close()
		_ = srvEnd.Close()
		<-done
	})
	return s
}

// serveHTTP serves a fresh everything server over Streamable HTTP and
// returns the endpoint URL.
func serveHTTP(t *testing.T) string {
	t.Helper()
	return serveHTTPWith(t, newEverything(t))
}

// serveHTTPWith is serveHTTP with a given server.
func serveHTTPWith(t *testing.T, srv *pmcp.Server) string {
	t.Helper()
	h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{})
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		_ = h.Close()
		ts.Close()
	})
	return ts.URL + "/mcp"
}

func connectHTTP(t *testing.T, c *pmcp.Client, url string) *pmcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := c.ConnectHTTP(ctx, url, pmcp.HTTPClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

var transportCases = []transportCase{
	{"memory", func(t *testing.T, c *pmcp.Client) *pmcp.ClientSession {
		a, b := memory.NewPipe()
		return serveStreamPair(t, c, a, b)
	}},
	{"stdio", func(t *testing.T, c *pmcp.Client) *pmcp.ClientSession {
		// Two OS-independent pipes carry newline-delimited JSON exactly as
		// a process's stdin and stdout would.
		toSrvR, toSrvW := io.Pipe()
		toCliR, toCliW := io.Pipe()
		srvEnd := stdio.NewStream(toSrvR, toCliW, stdio.Options{})
		cliEnd := stdio.NewStream(toCliR, toSrvW, stdio.Options{})
		return serveStreamPair(t, c, srvEnd, cliEnd)
	}},
	{"http", func(t *testing.T, c *pmcp.Client) *pmcp.ClientSession {
		return connectHTTP(t, c, serveHTTP(t))
	}},
}

// TestClientTransportMatrix runs the everything-server contract through
// one client code path over memory, stdio and Streamable HTTP, in both
// eras.
func TestClientTransportMatrix(t *testing.T) {
	for _, tc := range transportCases {
		for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
			t.Run(tc.name+"/"+era.String(), func(t *testing.T) {
				logs := make(chan string, 64)
				s := tc.connect(t, pmcp.NewClient(everythingClientOptions(era, logs)))
				exerciseEverything(t, s, era, logs)
			})
		}
	}
}

// TestClientTransportMatrixNegotiates checks that without a forced era
// every transport lands on the modern era against the dual-era server.
func TestClientTransportMatrixNegotiates(t *testing.T) {
	for _, tc := range transportCases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.connect(t, pmcp.NewClient(pmcp.ClientOptions{}))
			if s.Era() != pmcp.EraModern || s.ProtocolVersion() != pmcp.Version20260728 {
				t.Fatalf("era %v version %q", s.Era(), s.ProtocolVersion())
			}
		})
	}
}
