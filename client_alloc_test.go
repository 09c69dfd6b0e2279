package pmcp

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/jsonrpc"
	"github.com/gopmcp/pmcp/transport/memory"
)

// The client's call path measured on its own: a scripted peer answers
// initialize, server/discover and tools/call with prebuilt results, so the
// budgets and benchmarks below count the client (and the transport's
// encode/decode), not a real server.

const (
	fakeInitResult     = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1.0.0"}}`
	fakeDiscoverResult = `{"supportedVersions":["2026-07-28","2025-11-25"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"fake","version":"1.0.0"}}}`
	fakeEchoResult     = `{"content":[{"type":"text","text":"hello"}]}`
)

func fakeResult(method string) jsontext.Value {
	switch method {
	case MethodInitialize:
		return jsontext.Value(fakeInitResult)
	case MethodDiscover:
		return jsontext.Value(fakeDiscoverResult)
	case MethodToolsCall:
		return jsontext.Value(fakeEchoResult)
	}
	return jsontext.Value(`{}`)
}

// fakePeer answers every request read from st until it ends.
func fakePeer(st jsonrpc.Stream) {
	ctx := context.Background()
	for {
		m, err := st.Read(ctx)
		if err != nil {
			return
		}
		req, ok := m.(*jsonrpc.Request)
		if !ok || !req.ID.IsValid() {
			continue
		}
		if st.Write(ctx, &jsonrpc.Response{ID: req.ID, Result: fakeResult(req.Method)}) != nil {
			return
		}
	}
}

// connectFakePipe connects a client in era over a memory pipe to fakePeer.
func connectFakePipe(tb testing.TB, era Era) *ClientSession {
	tb.Helper()
	a, b := memory.NewPipe()
	done := make(chan struct{})
	go func() { defer close(done); fakePeer(b) }()
	s, err := NewClient(ClientOptions{Era: era}).Connect(context.Background(), a)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = s.Close()
		_ = b.Close()
		<-done
	})
	return s
}

// fakeRoundTripper is a Streamable HTTP server in the client's process:
// it answers each POST with one application/json response, without a
// socket, so the HTTP client path is counted alone.
type fakeRoundTripper struct{}

func (fakeRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body == nil { // the DELETE that ends the session
		return &http.Response{StatusCode: http.StatusNoContent, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
	}
	body, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		return nil, err
	}
	m, err := jsonrpc.Decode(body, jsonrpc.Limits{})
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	resp := &http.Response{StatusCode: http.StatusAccepted, Header: h, Body: http.NoBody, Request: r}
	req, ok := m.(*jsonrpc.Request)
	if !ok || !req.ID.IsValid() {
		return resp, nil
	}
	if req.Method == MethodInitialize {
		h.Set("Mcp-Session-Id", "fake-session")
	}
	out, err := jsonrpc.Encode(&jsonrpc.Response{ID: req.ID, Result: fakeResult(req.Method)})
	if err != nil {
		return nil, err
	}
	h.Set("Content-Type", "application/json")
	resp.StatusCode = http.StatusOK
	resp.ContentLength = int64(len(out))
	resp.Body = io.NopCloser(bytes.NewReader(out))
	return resp, nil
}

func connectFakeHTTP(tb testing.TB, era Era) *ClientSession {
	tb.Helper()
	s, err := NewClient(ClientOptions{Era: era}).ConnectHTTP(context.Background(), "http://127.0.0.1:1/mcp",
		HTTPClientOptions{HTTPClient: &http.Client{Transport: fakeRoundTripper{}}, NoStandaloneStream: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

type echoArgs struct {
	Text string `json:"text"`
}

// callEcho calls echo and fails unless the result is the echo of "hello".
func callEcho(tb testing.TB, s *ClientSession) {
	res, err := s.CallTool(context.Background(), "echo", echoArgs{Text: "hello"})
	if err != nil {
		tb.Fatal(err)
	}
	if len(res.Content) != 1 {
		tb.Fatalf("echo result %+v", res)
	}
	if tc, ok := res.Content[0].(*TextContent); !ok || tc.Text != "hello" {
		tb.Fatalf("echo result %+v", res.Content[0])
	}
}

var clientEras = []struct {
	name string
	era  Era
}{{"legacy", EraLegacy}, {"modern", EraModern}}

func TestAllocBudgetClientPipe(t *testing.T) {
	// CallTool over a memory pipe, the fake peer included (its Read decodes
	// the request, its Write encodes the response): the call options, the
	// arguments' and params' encoding, the pending call and its context,
	// the response decode and the typed result with its content. Modern
	// was 44 before its _meta was pre-encoded at negotiation (issue 14);
	// legacy 27 / modern 26 before the waiter channel was pooled (2), the
	// resultType probe skipped when no member can be named so (2, it ran
	// twice) and a call without options made no config (1); 22 / 21
	// before calls made with the same ctx shared their timeout context
	// (5: the timer context, its timer, channel and cancel func); legacy
	// 17 before tools/call params were encoded without reflection.
	budgets := map[string]float64{"legacy": 16, "modern": 16}
	for _, e := range clientEras {
		s := connectFakePipe(t, e.era)
		checkAllocs(t, "client pipe "+e.name+" CallTool", budgets[e.name], func() { callEcho(t, s) })
	}
}

func TestAllocBudgetClientHTTP(t *testing.T) {
	// CallTool over Streamable HTTP (the in-process round tripper
	// included: its body read, decode, encode and response): the request
	// body, the http.Request and its headers (modern: the mirrored
	// Mcp-Method and Mcp-Name), the reply's decode and delivery. Before
	// issue 14: legacy 65, modern 93 (_meta re-encoded and re-parsed into
	// maps per call, header values built per request, the body read
	// through a growing buffer); 59 and 68 before the pooled waiter, the
	// skipped resultType probes and the nil call config (5 fewer); 54 and
	// 63 before the shared call timeout (7 fewer: the request's own
	// cancel context no longer registers in a fresh timer context); 47 and
	// 56 before the mirrored headers were read with the server's params
	// scan instead of a json.Unmarshal of the params; modern 51 before the
	// server shared the decoded client info of byte-identical requests;
	// legacy 45 before tools/call params were encoded without reflection;
	// 44 and 49 before a response read from the POST's own JSON body went
	// to the waiting call directly instead of through the read loop.
	budgets := map[string]float64{"legacy": 43, "modern": 48}
	for _, e := range clientEras {
		s := connectFakeHTTP(t, e.era)
		checkAllocs(t, "client HTTP "+e.name+" CallTool", budgets[e.name], func() { callEcho(t, s) })
	}
}

func BenchmarkClientCallTool(b *testing.B) {
	for _, tr := range []struct {
		name    string
		connect func(testing.TB, Era) *ClientSession
	}{{"pipe", connectFakePipe}, {"http", connectFakeHTTP}} {
		for _, e := range clientEras {
			b.Run(tr.name+"-"+e.name, func(b *testing.B) {
				s := tr.connect(b, e.era)
				b.ReportAllocs()
				for b.Loop() {
					callEcho(b, s)
				}
			})
		}
	}
}

// The _meta fast path (static members encoded at negotiation, plus the
// progress token) must write exactly what encodeMeta writes.
func TestRequestMetaFastPathMatchesEncodeMeta(t *testing.T) {
	s := connectFakePipe(t, EraModern)
	n := s.negotiation()
	if len(n.metaJSON) == 0 {
		t.Fatal("modern negotiation without a pre-encoded _meta")
	}
	for _, token := range []jsontext.Value{nil, jsontext.Value(`7`), jsontext.Value(`"tok"`)} {
		got, err := s.requestMeta(nil, token)
		if err != nil {
			t.Fatal(err)
		}
		want, err := encodeMeta(n.meta, nil, token)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("token %s: fast path %s, encodeMeta %s", token, got, want)
		}
	}
	// Appending to the shared _meta must not write into the next request's.
	m1, _ := s.requestMeta(nil, nil)
	_ = append(m1, 'x')
	if m2, _ := s.requestMeta(nil, nil); !jsontext.Value(m2).IsValid() {
		t.Fatalf("shared _meta corrupted: %s", m2)
	}
}
