package pmcp

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/internal/benchkit"
	"github.com/gopmcp/pmcp/internal/rpcconn"
	"github.com/gopmcp/pmcp/jsonrpc"
	"github.com/gopmcp/pmcp/transport/memory"
)

// The benchmarks of this file measure the request hot path in process: a
// tools/call served through Server.Serve and rpcconn.Conn (both eras), the
// dispatcher alone, a full client/server round trip over the in-memory
// pipe, and the Streamable HTTP handler called directly. The servers
// expose the two tools of bench/: echo {text} and add {a,b}. Allocation
// budgets for the same paths are asserted in alloc_budget_test.go.

type benchEchoIn struct {
	Text string `json:"text"`
}

type benchAddIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

// newBenchServer returns a server with the echo and add tools, registered
// the way an application registers typed tools.
func newBenchServer(tb testing.TB) *Server {
	tb.Helper()
	return newBenchServerWith(tb, ServerOptions{})
}

// newBenchServerWith is newBenchServer with opts (its name and version are
// set here).
func newBenchServerWith(tb testing.TB, opts ServerOptions) *Server {
	tb.Helper()
	opts.Name, opts.Version = "bench", "1.0.0"
	s, err := NewServer(opts)
	if err != nil {
		tb.Fatal(err)
	}
	if err := AddTool(s, &Tool{Name: "echo", Description: "Echoes text."},
		func(_ context.Context, _ *RequestHandlerExtra, in benchEchoIn) (string, error) { return in.Text, nil }); err != nil {
		tb.Fatal(err)
	}
	if err := AddTool(s, &Tool{Name: "add", Description: "Adds two numbers."},
		func(_ context.Context, _ *RequestHandlerExtra, in benchAddIn) (string, error) {
			return strconv.FormatFloat(in.A+in.B, 'g', -1, 64), nil
		}); err != nil {
		tb.Fatal(err)
	}
	return s
}

const (
	benchInitialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`
	benchEchoLegacy = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`
	benchEchoModern = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}}}`
	benchEchoLegacyResult = `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}]}}`
)

// driverStream is a jsonrpc.Stream fed by the benchmark: Read decodes the
// lines it is given (as the real transports do), Write encodes responses
// into a reused buffer and signals them.
type driverStream struct {
	in     chan []byte
	resp   chan struct{}
	done   chan struct{}
	once   sync.Once
	mu     sync.Mutex
	out    []byte
	copyTo []byte
}

func newDriverStream() *driverStream {
	return &driverStream{in: make(chan []byte, 64), resp: make(chan struct{}, 64), done: make(chan struct{})}
}

func (d *driverStream) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case line := <-d.in:
		return jsonrpc.Decode(line, jsonrpc.Limits{})
	case <-d.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (d *driverStream) Write(_ context.Context, m jsonrpc.Message) error {
	if _, ok := m.(*jsonrpc.Response); !ok {
		return nil
	}
	d.mu.Lock()
	var err error
	d.out, err = jsonrpc.AppendMessage(d.out[:0], m)
	d.mu.Unlock()
	if err != nil {
		return err
	}
	d.resp <- struct{}{}
	return nil
}

func (d *driverStream) Close() error {
	d.once.Do(func() { close(d.done) })
	return nil
}

// last returns a copy of the last response written.
func (d *driverStream) last() []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	return bytes.Clone(d.out)
}

// serveDriver runs Server.Serve over a driver stream until the returned
// stop function is called.
func serveDriver(tb testing.TB, s *Server) (*driverStream, func()) {
	tb.Helper()
	d := newDriverStream()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, d) }()
	return d, func() {
		_ = d.Close()
		<-done
		cancel()
	}
}

// roundTrip sends one line and waits for its response.
func (d *driverStream) roundTrip(line []byte) {
	d.in <- line
	<-d.resp
}

func startLegacyDriver(tb testing.TB) (*driverStream, func()) {
	d, stop := serveDriver(tb, newBenchServer(tb))
	d.roundTrip([]byte(benchInitialize))
	d.in <- []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return d, stop
}

// BenchmarkServeToolsCall is one tools/call at a time through Server.Serve
// and rpcconn.Conn: decode, dispatch, argument validation, the typed
// handler, result marshaling and response encoding.
func BenchmarkServeToolsCall(b *testing.B) {
	for _, era := range []struct {
		name string
		req  string
	}{{"legacy", benchEchoLegacy}, {"modern", benchEchoModern}} {
		b.Run(era.name, func(b *testing.B) {
			d, stop := startLegacyDriver(b)
			defer stop()
			line := []byte(era.req)
			d.roundTrip(line)
			if got := d.last(); !bytes.Contains(got, []byte(`"text":"hello"`)) {
				b.Fatalf("unexpected response %s", got)
			}
			b.ReportAllocs()
			for b.Loop() {
				d.roundTrip(line)
			}
		})
	}
}

// BenchmarkServeToolsCallPipelined keeps 16 legacy tools/call requests in
// flight, as the stdio load generator does.
func BenchmarkServeToolsCallPipelined(b *testing.B) {
	const depth = 16
	d, stop := startLegacyDriver(b)
	defer stop()
	// Ids cycle through 1,024 values: with 16 in flight, an id comes back
	// only long after its response was written.
	lines := make([][]byte, 1024)
	for i := range lines {
		lines[i] = []byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i+1) + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`)
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if n >= depth {
			<-d.resp
		}
		d.in <- lines[n%len(lines)]
		n++
	}
	for range min(n, depth) {
		<-d.resp
	}
}

// BenchmarkHandle is the dispatcher alone (Server.handle), without a
// transport: params decode, era decision, validation, the handler and the
// result, but no JSON-RPC framing or result marshaling.
func BenchmarkHandle(b *testing.B) {
	s := newBenchServer(b)
	ss := &session{}
	env := &requestEnv{session: ss}
	init := mustDecodeRequest(b, benchInitialize)
	if _, err := s.handle(context.Background(), init, env); err != nil {
		b.Fatal(err)
	}
	for _, era := range []struct {
		name string
		req  string
	}{{"legacy", benchEchoLegacy}, {"modern", benchEchoModern}} {
		b.Run(era.name, func(b *testing.B) {
			req := mustDecodeRequest(b, era.req)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.handle(ctx, req, env); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func mustDecodeRequest(tb testing.TB, s string) *jsonrpc.Request {
	tb.Helper()
	m, err := jsonrpc.Decode([]byte(s), jsonrpc.Limits{})
	if err != nil {
		tb.Fatal(err)
	}
	return m.(*jsonrpc.Request)
}

// BenchmarkMemoryPipeToolsCall is a whole round trip in process: a
// rpcconn.Conn client calls tools/call over the in-memory pipe (which
// encodes and decodes every message) and decodes nothing more.
func BenchmarkMemoryPipeToolsCall(b *testing.B) {
	s := newBenchServer(b)
	a, c := memory.NewPipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srvDone := make(chan error, 1)
	go func() { srvDone <- s.Serve(ctx, a) }()
	conn := rpcconn.NewConn(c, nil, rpcconn.ConnOptions{})
	cliDone := make(chan error, 1)
	go func() { cliDone <- conn.Run(ctx) }()
	defer func() {
		_ = conn.Close()
		cancel()
		<-srvDone
		<-cliDone
	}()
	initParams := jsonrpcRaw(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`)
	if _, err := conn.Call(ctx, MethodInitialize, initParams); err != nil {
		b.Fatal(err)
	}
	params := jsonrpcRaw(`{"name":"echo","arguments":{"text":"hello"}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := conn.Call(ctx, MethodToolsCall, params); err != nil {
			b.Fatal(err)
		}
	}
}

// ---- HTTP --------------------------------------------------------------

// httpBench holds a request that is replayed against a handler: the
// request, its header and body are built once, as a server's connection
// would reuse its buffers.
type httpBench struct {
	h    *StreamableHTTPHandler
	req  *http.Request
	body *benchkit.Body
	data []byte
	w    *benchkit.ResponseWriter
}

func newHTTPBench(tb testing.TB, h *StreamableHTTPHandler, data string, hdr http.Header) *httpBench {
	tb.Helper()
	// The request arrives on a loopback connection, as in production
	// behind a local listener, so the DNS-rebinding check runs.
	ctx := context.WithValue(context.Background(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:8080/mcp", nil)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header = hdr
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	hb := &httpBench{h: h, req: req, body: new(benchkit.Body), data: []byte(data), w: benchkit.NewResponseWriter()}
	req.Body = hb.body
	return hb
}

func (hb *httpBench) serve() {
	hb.w.Reset()
	hb.body.Reset(hb.data)
	hb.req.ContentLength = int64(len(hb.data))
	hb.h.ServeHTTP(hb.w, hb.req)
}

// newBenchHTTP returns a handler of the bench server configured as the
// bench/ server is (JSON responses), and requests for both eras: a legacy
// tools/call on an initialized session and a modern one with its headers.
func newBenchHTTP(tb testing.TB) (h *StreamableHTTPHandler, legacy, modern *httpBench) {
	tb.Helper()
	return newBenchHTTPWith(tb, ServerOptions{}, StreamableHTTPOptions{}, nil)
}

// newBenchHTTPWith is newBenchHTTP with the server options sopts, the
// handler options hopts (JSONResponse is set here) and hdr added to every
// request (initialize included), such as an Authorization header.
func newBenchHTTPWith(tb testing.TB, sopts ServerOptions, hopts StreamableHTTPOptions, hdr http.Header) (h *StreamableHTTPHandler, legacy, modern *httpBench) {
	tb.Helper()
	hopts.JSONResponse = true
	h = NewStreamableHTTPHandler(newBenchServerWith(tb, sopts), hopts)
	with := func(m http.Header) http.Header {
		for k, v := range hdr {
			m[k] = v
		}
		return m
	}
	init := newHTTPBench(tb, h, benchInitialize, with(http.Header{}))
	init.serve()
	sid := init.w.H.Get(headerSessionID)
	if init.w.Status != http.StatusOK || sid == "" {
		tb.Fatalf("initialize: status %d, body %s", init.w.Status, init.w.Body)
	}
	legacy = newHTTPBench(tb, h, benchEchoLegacy, with(http.Header{
		"Mcp-Session-Id":       {sid},
		"Mcp-Protocol-Version": {Version20251125},
	}))
	modern = newHTTPBench(tb, h, benchEchoModern, with(http.Header{
		"Mcp-Protocol-Version": {Version20260728},
		"Mcp-Method":           {MethodToolsCall},
		"Mcp-Name":             {"echo"},
	}))
	for _, hb := range []*httpBench{legacy, modern} {
		hb.serve()
		if hb.w.Status != http.StatusOK || !bytes.Contains(hb.w.Body, []byte(`"text":"hello"`)) {
			tb.Fatalf("status %d, body %s", hb.w.Status, hb.w.Body)
		}
	}
	return h, legacy, modern
}

// BenchmarkHTTPToolsCall calls the Streamable HTTP handler directly with a
// reused request and response writer, so that only the handler's own work
// is measured (no sockets, no net/http connection handling).
func BenchmarkHTTPToolsCall(b *testing.B) {
	h, legacy, modern := newBenchHTTP(b)
	defer h.Close()
	for _, c := range []struct {
		name string
		hb   *httpBench
	}{{"legacy", legacy}, {"modern", modern}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.hb.serve()
			}
			if c.hb.w.Status != http.StatusOK {
				b.Fatalf("status %d", c.hb.w.Status)
			}
		})
	}
}

// newBenchHTTPSSE is newBenchHTTP with the default options: the client
// accepts SSE, so legacy requests get a primed event stream (through the
// event store) and modern ones a stream that stays plain JSON unless the
// handler notifies.
func newBenchHTTPSSE(tb testing.TB) (h *StreamableHTTPHandler, legacy, modern *httpBench) {
	tb.Helper()
	h = NewStreamableHTTPHandler(newBenchServer(tb), StreamableHTTPOptions{})
	init := newHTTPBench(tb, h, benchInitialize, http.Header{})
	init.serve()
	sid := init.w.H.Get(headerSessionID)
	if init.w.Status != http.StatusOK || sid == "" {
		tb.Fatalf("initialize: status %d, body %s", init.w.Status, init.w.Body)
	}
	legacy = newHTTPBench(tb, h, benchEchoLegacy, http.Header{
		"Mcp-Session-Id":       {sid},
		"Mcp-Protocol-Version": {Version20251125},
	})
	modern = newHTTPBench(tb, h, benchEchoModern, http.Header{
		"Mcp-Protocol-Version": {Version20260728},
		"Mcp-Method":           {MethodToolsCall},
		"Mcp-Name":             {"echo"},
	})
	return h, legacy, modern
}

// BenchmarkHTTPToolsCallSSE is BenchmarkHTTPToolsCall with the default
// options: the client accepts SSE, so legacy requests get a primed event
// stream (through the event store) and modern ones a stream goroutine.
func BenchmarkHTTPToolsCallSSE(b *testing.B) {
	h, legacy, modern := newBenchHTTPSSE(b)
	defer h.Close()
	for _, c := range []struct {
		name string
		hb   *httpBench
	}{{"legacy", legacy}, {"modern", modern}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.hb.serve()
			}
			if c.hb.w.Status != http.StatusOK || !bytes.Contains(c.hb.w.Body, []byte(`"text":"hello"`)) {
				b.Fatalf("status %d: %s", c.hb.w.Status, c.hb.w.Body)
			}
		})
	}
}

// BenchmarkHTTPInitialize opens one legacy session per iteration; sessions
// are ended every 1,000 so the cap is never reached.
func BenchmarkHTTPInitialize(b *testing.B) {
	h := NewStreamableHTTPHandler(newBenchServer(b), StreamableHTTPOptions{JSONResponse: true, MaxSessions: -1})
	defer h.Close()
	init := newHTTPBench(b, h, benchInitialize, http.Header{})
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		init.serve()
		if n++; n%1000 == 0 {
			b.StopTimer()
			h.endAllSessions()
			b.StartTimer()
		}
	}
}

func jsonrpcRaw(s string) any { return jsontext.Value(s) }
