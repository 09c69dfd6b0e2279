package pmcp

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// serverKeepAlive is the keep-alive timeout of the commonest MCP servers
// over HTTP: Node's http.Server (the TypeScript SDK's servers,
// server-everything) and uvicorn (the Python SDK's) close a connection
// idle for 5 s.
const serverKeepAlive = 5 * time.Second

// TestClientHTTPCallsSpacedAtServerKeepAlive: a session's calls spaced
// by a server's keep-alive timeout succeed. The server here closes a
// connection once it has been idle for serverKeepAlive, and it does so in
// the only order that loses a call: its timer fires just as the next
// request arrives on the connection, so it reads the request and closes
// without answering (what Node does when the client's POST crosses its
// keep-alive close). The client cannot tell that from a server that ran
// the request and died, so it must not retry: the session's own transport
// must stop reusing a connection before the server's keep-alive ends it
// (CI saw `Post "http://127.0.0.1:…/mcp": EOF` from server-everything).
func TestClientHTTPCallsSpacedAtServerKeepAlive(t *testing.T) {
	t.Parallel()
	for name, era := range map[string]Era{"modern": EraModern, "legacy": EraLegacy} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv, err := NewServer(ServerOptions{Name: "keepalive", Version: "1"})
			if err != nil {
				t.Fatal(err)
			}
			if err := AddTool(srv, &Tool{Name: "echo"}, func(_ context.Context, _ *RequestHandlerExtra, in struct {
				Text string `json:"text"`
			}) (string, error) {
				return in.Text, nil
			}); err != nil {
				t.Fatal(err)
			}
			h := NewStreamableHTTPHandler(srv, StreamableHTTPOptions{})
			defer h.Close()
			ka := startKeepAliveServer(t, h, serverKeepAlive)

			s, err := NewClient(ClientOptions{Era: era}).ConnectHTTP(t.Context(), ka.url, HTTPClientOptions{NoStandaloneStream: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, err := s.CallTool(t.Context(), "echo", map[string]any{"text": "first"}); err != nil {
				t.Fatal(err)
			}
			// Until every idle connection is either closed by the client
			// or past the server's keep-alive.
			ka.settle(t.Context())
			res, err := s.CallTool(t.Context(), "echo", map[string]any{"text": "second"})
			if err != nil {
				t.Fatalf("a call %v after the previous one failed: %v", serverKeepAlive, err)
			}
			if len(res.Content) == 0 || res.Content[0].(*TextContent).Text != "second" {
				t.Fatalf("second call answered %+v", res.Content)
			}
			if n := ka.droppedRequests(); n != 0 {
				t.Fatalf("the client sent %d request(s) on a connection idle past the server's keep-alive", n)
			}
		})
	}
}

// keepAliveServer serves h over HTTP/1.1 and models a server-side
// keep-alive timeout whose timer fires exactly when the next request
// arrives: a request that arrives on a connection idle for keepAlive or
// longer is read, then the connection is closed without an answer.
type keepAliveServer struct {
	url       string
	keepAlive time.Duration

	mu      sync.Mutex
	conns   map[*keepAliveConn]struct{} // open connections
	changed chan struct{}               // closed (and replaced) on every change
	dropped int
}

type keepAliveConn struct {
	net.Conn
	s         *keepAliveServer
	idleSince time.Time // zero while a request is in progress
}

func startKeepAliveServer(t *testing.T, h http.Handler, keepAlive time.Duration) *keepAliveServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ka := &keepAliveServer{
		url:       "http://" + ln.Addr().String() + "/mcp",
		keepAlive: keepAlive,
		conns:     map[*keepAliveConn]struct{}{},
		changed:   make(chan struct{}),
	}
	hs := &http.Server{
		Handler: h,
		// The idle close is the model's; the real timer is off.
		IdleTimeout: time.Hour,
		ConnState: func(c net.Conn, st http.ConnState) {
			kc := c.(*keepAliveConn)
			ka.mu.Lock()
			defer ka.mu.Unlock()
			switch st {
			case http.StateIdle:
				kc.idleSince = time.Now()
			case http.StateActive:
				kc.idleSince = time.Time{}
			case http.StateClosed, http.StateHijacked:
				delete(ka.conns, kc)
			}
			ka.changedLocked()
		},
	}
	served := make(chan struct{})
	go func() { defer close(served); _ = hs.Serve(keepAliveListener{ln, ka}) }()
	t.Cleanup(func() { _ = hs.Close(); <-served })
	return ka
}

func (ka *keepAliveServer) changedLocked() {
	close(ka.changed)
	ka.changed = make(chan struct{})
}

// settle returns once every open connection has been idle for keepAlive
// or longer (connections the client closes leave the set). The session
// keeps no stream open (NoStandaloneStream), so every connection goes
// idle once its reply is written.
func (ka *keepAliveServer) settle(ctx context.Context) {
	for {
		ka.mu.Lock()
		wait, busy := time.Duration(0), false
		for c := range ka.conns {
			if c.idleSince.IsZero() {
				busy = true // the server has not finished its reply yet
				continue
			}
			if left := ka.keepAlive - time.Since(c.idleSince); left > wait {
				wait = left
			}
		}
		changed := ka.changed
		ka.mu.Unlock()
		if wait <= 0 && !busy {
			return
		}
		if busy {
			wait = time.Hour // until the next change
		}
		timer := time.NewTimer(wait)
		select {
		case <-changed:
		case <-timer.C:
		case <-ctx.Done():
		}
		timer.Stop()
		if ctx.Err() != nil {
			return
		}
	}
}

func (ka *keepAliveServer) droppedRequests() int {
	ka.mu.Lock()
	defer ka.mu.Unlock()
	return ka.dropped
}

type keepAliveListener struct {
	net.Listener
	s *keepAliveServer
}

func (l keepAliveListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	kc := &keepAliveConn{Conn: c, s: l.s}
	l.s.mu.Lock()
	l.s.conns[kc] = struct{}{}
	l.s.changedLocked()
	l.s.mu.Unlock()
	return kc, nil
}

func (c *keepAliveConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	s := c.s
	s.mu.Lock()
	if n > 0 && !c.idleSince.IsZero() && time.Since(c.idleSince) >= s.keepAlive {
		// The keep-alive timer fired as this request came in: the
		// request has been read, the connection closes unanswered.
		s.dropped++
		delete(s.conns, c)
		s.changedLocked()
		s.mu.Unlock()
		_ = c.Conn.Close()
		return 0, io.EOF
	}
	// A connection the client closes leaves conns at StateClosed.
	s.mu.Unlock()
	return n, err
}
