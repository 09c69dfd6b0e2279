package pmcp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// heapInUse returns the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// waitFor polls cond for up to d; it is used only where no signal exists
// (a counter maintained by another goroutine).
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestHTTPClientDisconnectCancelsHandler(t *testing.T) {
	t.Run("modern", func(t *testing.T) {
		srv, tt := newHTTPTestServer(t)
		e := newHTTPEnv(t, srv, nil)
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.ts.URL, strings.NewReader(modernBody(1, MethodToolsCall, map[string]any{"name": "slow"}, nil)))
			req.Header = modernHeaders(MethodToolsCall, "slow")
			req.Header.Set("Content-Type", "application/json")
			resp, err := e.ts.Client().Do(req)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			errc <- err
		}()
		<-tt.started
		cancel()
		select {
		case err := <-tt.slowErr:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("handler ctx ended with %v", err)
			}
		case <-time.After(time.Second):
			t.Fatal("handler ctx not cancelled within 1s of the disconnect")
		}
		if err := <-errc; err == nil {
			t.Fatal("the client saw a complete response")
		}
		waitFor(t, time.Second, "the handler to finish", func() bool { return e.h.Stats().InFlight == 0 })
	})
	t.Run("legacy", func(t *testing.T) {
		// In 2025-11-25 a disconnect is not a cancellation: the request
		// runs on, and the session keeps serving.
		srv, tt := newHTTPTestServer(t)
		e := newHTTPEnv(t, srv, nil)
		sid := e.initSession(nil)
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}`))
		req.Header = hdr("Accept", acceptBoth, "Mcp-Session-Id", sid, "Content-Type", "application/json")
		resp, err := e.ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		<-tt.started
		cancel()
		resp.Body.Close()
		r := readJSON(t, e.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"}}}`,
			hdr("Accept", "application/json", "Mcp-Session-Id", sid)))
		if textOf(t, r.Result) != "still here" {
			t.Fatalf("%+v", r)
		}
		close(tt.release)
		if err := <-tt.slowErr; err != nil {
			t.Fatalf("legacy request was cancelled by the disconnect: %v", err)
		}
	})
}

// TestHTTPSlowReaderFlood floods a client that does not read with 1 KiB
// log notifications: memory stays bounded and the drop policy shows in
// Stats.
func TestHTTPSlowReaderFlood(t *testing.T) {
	const n = 50000
	payload := strings.Repeat("x", 1024)
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			srv := newTestServerT(t)
			heap := make(chan uint64, 1)
			release := make(chan struct{})
			if err := AddTool(srv, &Tool{Name: "flood", Description: "floods"}, func(ctx context.Context, extra *RequestHandlerExtra, _ struct{}) (string, error) {
				for i := 0; i < n; i++ {
					_ = extra.Log(LevelError, payload)
				}
				heap <- heapInUse()
				select {
				case <-release:
				case <-ctx.Done():
				}
				return "done", nil
			}); err != nil {
				t.Fatal(err)
			}
			e := newHTTPEnv(t, srv, nil)
			var body string
			var h http.Header
			if era == "modern" {
				body = modernBody(1, MethodToolsCall, map[string]any{"name": "flood"}, nil)
				body = strings.Replace(body, `"_meta":{`, `"_meta":{"io.modelcontextprotocol/logLevel":"debug",`, 1)
				h = modernHeaders(MethodToolsCall, "flood")
			} else {
				sid := e.initSession(nil)
				readJSON(t, e.post(`{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"debug"}}`, hdr("Accept", "application/json", "Mcp-Session-Id", sid)))
				body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"flood"}}`
				h = hdr("Accept", acceptBoth, "Mcp-Session-Id", sid)
			}
			before := heapInUse()
			resp := e.post(body, h) // headers only: the body is never read
			after := <-heap
			growth := int64(after) - int64(before)
			st := e.h.Stats()
			t.Logf("%s: heap growth %d KiB for %d MiB of notifications; dropped %d", era, growth>>10, n*len(payload)>>20, st.DroppedNotifications)
			if st.DroppedNotifications == 0 {
				t.Fatal("no notification was dropped for a client that never reads")
			}
			if growth > 16<<20 {
				t.Fatalf("heap grew by %d MiB", growth>>20)
			}
			resp.Body.Close()
			close(release)
		})
	}
}

// TestHTTPSessionFlood opens 10,000 sessions and never deletes them: the
// cap holds (503 beyond it) and memory stays bounded.
func TestHTTPSessionFlood(t *testing.T) {
	srv := newTestServerT(t)
	h := NewStreamableHTTPHandler(srv, StreamableHTTPOptions{})
	defer h.Close()
	init := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}`)
	before := heapInUse()
	counts := map[int]int{}
	for i := 0; i < 10000; i++ {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080/mcp", bytes.NewReader(init))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		counts[rec.Code]++
	}
	growth := int64(heapInUse()) - int64(before)
	st := h.Stats()
	t.Logf("statuses %v; heap growth %d KiB (%d B per session)", counts, growth>>10, growth/int64(st.Sessions))
	if counts[200] != DefaultMaxSessions || counts[503] != 10000-DefaultMaxSessions || st.Sessions != DefaultMaxSessions {
		t.Fatalf("statuses %v, stats %+v", counts, st)
	}
	if st.Refusals["max_sessions"] != uint64(10000-DefaultMaxSessions) {
		t.Fatalf("Refusals[max_sessions] = %d", st.Refusals["max_sessions"])
	}
	if growth > 16<<20 {
		t.Fatalf("heap grew by %d MiB for %d sessions", growth>>20, st.Sessions)
	}
}

func TestHTTPBodyTooLarge(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, nil)
	// A valid message of exactly DefaultMaxBodyBytes is accepted.
	head := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`
	tail := `"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	exact := head + strings.Repeat("a", DefaultMaxBodyBytes-len(head)-len(tail)) + tail
	h := modernHeaders(MethodToolsCall, "echo", "Accept", "application/json")
	resp := e.post(exact, h)
	wantStatus(t, resp, 200)
	resp.Body.Close()
	over := exact + " "
	resp = e.post(over, h) // Content-Length declared
	wantStatus(t, resp, http.StatusRequestEntityTooLarge)
	resp.Body.Close()
	// Chunked: the length is unknown until the body is read.
	req, _ := http.NewRequest(http.MethodPost, e.ts.URL, io.MultiReader(strings.NewReader(over)))
	req.Header = h.Clone()
	req.Header.Set("Content-Type", "application/json")
	if req.ContentLength != 0 {
		t.Fatal("request is not chunked")
	}
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, resp, http.StatusRequestEntityTooLarge)
	resp.Body.Close()
	// A Content-Length shorter than the body: only the declared bytes are
	// read, and they are not a message.
	conn, err := net.Dial("tcp", e.ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 10\r\nMCP-Protocol-Version: 2026-07-28\r\n\r\n%s", exact[:100])
	raw, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, raw, http.StatusBadRequest)
	raw.Body.Close()
}

func TestHTTPSameIDConcurrentClients(t *testing.T) {
	srv := newTestServerT(t)
	arrived := make(chan struct{}, 4)
	proceed := make(chan struct{})
	if err := AddTool(srv, &Tool{Name: "pair", Description: "waits for its twin"}, func(ctx context.Context, _ *RequestHandlerExtra, in struct {
		Text string `json:"text"`
	}) (string, error) {
		arrived <- struct{}{}
		<-proceed
		return in.Text, nil
	}); err != nil {
		t.Fatal(err)
	}
	e := newHTTPEnv(t, srv, nil)
	s1, s2 := e.initSession(nil), e.initSession(nil)
	type call struct {
		body string
		h    http.Header
		want string
	}
	legacy := func(sid, text string) call {
		return call{`{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"pair","arguments":{"text":"` + text + `"}}}`, hdr("Accept", acceptBoth, "Mcp-Session-Id", sid), text}
	}
	modern := func(text string) call {
		return call{modernBody(0, MethodToolsCall, map[string]any{"name": "pair", "arguments": map[string]any{"text": text}}, nil), modernHeaders(MethodToolsCall, "pair"), text}
	}
	calls := []call{legacy(s1, "one"), legacy(s2, "two"), modern("three"), modern("four")}
	got := make([]string, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := e.post(c.body, c.h)
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			for _, line := range strings.Split(string(b), "\n") {
				line = strings.TrimPrefix(line, "data: ")
				if strings.Contains(line, `"result"`) {
					r := decodeReply(t, []byte(line))
					got[i] = string(r.ID) + ":" + textOf(t, r.Result)
				}
			}
		}()
	}
	for range calls {
		<-arrived
	}
	close(proceed)
	wg.Wait()
	for i, c := range calls {
		if got[i] != "0:"+c.want {
			t.Fatalf("client %d got %q, want %q", i, got[i], "0:"+c.want)
		}
	}
}

func TestHTTPSessionBoundToPrincipal(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, &StreamableHTTPOptions{Authenticate: func(r *http.Request) (*AuthInfo, *AuthContext, error) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || tok == "" {
			return nil, nil, errors.New("no token")
		}
		return &AuthInfo{Token: Secret(tok)}, &AuthContext{Subject: tok}, nil
	}})
	sid := e.initSession(hdr("Authorization", "Bearer alice"))
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	body := func(resp *http.Response) string {
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	stolen := e.post(list, hdr("Accept", "application/json", "Mcp-Session-Id", sid, "Authorization", "Bearer bob"))
	unknown := e.post(list, hdr("Accept", "application/json", "Mcp-Session-Id", "unknown-id", "Authorization", "Bearer bob"))
	if stolen.StatusCode != 404 || unknown.StatusCode != 404 || body(stolen) != body(unknown) {
		t.Fatalf("hijack %d vs unknown %d: the answers must be identical 404s", stolen.StatusCode, unknown.StatusCode)
	}
	del := e.do(nil, http.MethodDelete, nil, hdr("Mcp-Session-Id", sid, "Authorization", "Bearer bob"))
	wantStatus(t, del, 404)
	del.Body.Close()
	noauth := e.post(list, hdr("Accept", "application/json", "Mcp-Session-Id", sid))
	wantStatus(t, noauth, http.StatusUnauthorized)
	if noauth.Header.Get("WWW-Authenticate") == "" {
		t.Fatal("401 without WWW-Authenticate")
	}
	noauth.Body.Close()
	ok := e.post(list, hdr("Accept", "application/json", "Mcp-Session-Id", sid, "Authorization", "Bearer alice"))
	if r := readJSON(t, ok); r.Error != nil || ok.StatusCode != 200 {
		t.Fatalf("owner refused: %d %+v", ok.StatusCode, r.Error)
	}
}

func TestHTTPRebinding(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	discover := modernBody(1, MethodDiscover, nil, nil)
	cases := []struct {
		name string
		opts *StreamableHTTPOptions
		h    []string
		want int
	}{
		{"evil host", nil, []string{"Host", "evil.example.com"}, 403},
		{"evil host and origin", nil, []string{"Host", "evil.example.com", "Origin", "http://evil.example.com"}, 403},
		{"evil origin", nil, []string{"Origin", "http://evil.example.com"}, 403},
		{"null origin", nil, []string{"Origin", "null"}, 403},
		{"localhost", nil, []string{"Host", "localhost:8080", "Origin", "http://localhost:8080"}, 200},
		{"ipv6 loopback", nil, []string{"Host", "[::1]:9", "Origin", "https://[::1]"}, 200},
		{"allowed host", &StreamableHTTPOptions{AllowedHosts: []string{"mcp.example.com"}}, []string{"Host", "mcp.example.com:443"}, 200},
		{"allowed origin", &StreamableHTTPOptions{AllowedOrigins: []string{"https://app.example"}}, []string{"Origin", "https://APP.example"}, 200},
		{"check disabled", &StreamableHTTPOptions{DisableHostCheck: true}, []string{"Host", "evil.example.com"}, 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newHTTPEnv(t, srv, c.opts)
			for _, m := range []struct {
				body string
				h    http.Header
			}{
				{init, hdr("Accept", "application/json")},
				{discover, modernHeaders(MethodDiscover, "", "Accept", "application/json")},
			} {
				for i := 0; i+1 < len(c.h); i += 2 {
					m.h.Set(c.h[i], c.h[i+1])
				}
				resp := e.post(m.body, m.h)
				wantStatus(t, resp, c.want)
				resp.Body.Close()
			}
		})
	}
}

func TestHTTPHandlerPanic(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, nil)
	sid := e.initSession(nil)
	for _, m := range []struct {
		body string
		h    http.Header
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"boom"}}`, hdr("Accept", "application/json", "Mcp-Session-Id", sid)},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"boom"}}`, hdr("Accept", acceptBoth, "Mcp-Session-Id", sid)},
		{modernBody(1, MethodToolsCall, map[string]any{"name": "boom"}, nil), modernHeaders(MethodToolsCall, "boom")},
	} {
		resp := e.post(m.body, m.h)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"code":-32603`)) || !bytes.Contains(b, []byte(`"id":1`)) {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
	}
	r := readJSON(t, e.post(modernBody(2, MethodToolsCall, map[string]any{"name": "echo", "arguments": map[string]any{"text": "alive"}}, nil), modernHeaders(MethodToolsCall, "echo", "Accept", "application/json")))
	if textOf(t, r.Result) != "alive" {
		t.Fatalf("%+v", r)
	}
}

func TestHTTPRequestShape(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, nil)
	discover := modernBody(1, MethodDiscover, nil, nil)
	do := func(method, ct, body string, h http.Header) (*http.Response, *rpcReply) {
		req, _ := http.NewRequest(method, e.ts.URL, strings.NewReader(body))
		req.Header = h
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		resp, err := e.ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var r *rpcReply
		if len(b) > 0 {
			r = decodeReply(t, b)
		}
		return resp, r
	}
	cases := []struct {
		name, method, ct, body string
		h                      http.Header
		status                 int
		code                   int64
	}{
		{"text/plain", "POST", "text/plain", discover, modernHeaders(MethodDiscover, ""), 415, -32600},
		{"no content type", "POST", "", discover, modernHeaders(MethodDiscover, ""), 415, -32600},
		{"charset param", "POST", "application/json; charset=utf-8", discover, modernHeaders(MethodDiscover, ""), 200, 0},
		{"batch", "POST", "application/json", "[" + discover + "]", modernHeaders(MethodDiscover, ""), 400, -32600},
		{"parse error", "POST", "application/json", "{", modernHeaders(MethodDiscover, ""), 400, -32700},
		{"duplicate member", "POST", "application/json", `{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}`, modernHeaders("x", ""), 400, -32600},
		{"put", "PUT", "application/json", discover, hdr(), 405, -32600},
		{"get without session", "GET", "", "", hdr("Accept", "text/event-stream"), 400, -32600},
		{"legacy request without session", "POST", "application/json", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, hdr("Accept", "application/json"), 400, -32600},
		{"unacceptable", "POST", "application/json", discover, modernHeaders(MethodDiscover, "", "Accept", "text/html"), 406, -32600},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, r := do(c.method, c.ct, c.body, c.h)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, c.status)
			}
			if c.code != 0 && (r == nil || r.Error == nil || r.Error.Code != c.code) {
				t.Fatalf("body %+v, want code %d", r, c.code)
			}
		})
	}
	sid := e.initSession(nil)
	resp, _ := do("GET", "", "", hdr("Accept", "application/json", "Mcp-Session-Id", sid))
	if resp.StatusCode != http.StatusNotAcceptable {
		t.Fatalf("GET without SSE accept: %d", resp.StatusCode)
	}
}

// Notifications keep their order and precede the response.
func TestHTTPNotificationOrderUnderLoad(t *testing.T) {
	srv := newTestServerT(t)
	if err := AddTool(srv, &Tool{Name: "count", Description: "logs 0..49"}, func(ctx context.Context, extra *RequestHandlerExtra, _ struct{}) (string, error) {
		for i := 0; i < 50; i++ {
			_ = extra.Log(LevelError, fmt.Sprint(i))
		}
		return "end", nil
	}); err != nil {
		t.Fatal(err)
	}
	e := newHTTPEnv(t, srv, &StreamableHTTPOptions{NotificationBuffer: 100})
	body := strings.Replace(modernBody(1, MethodToolsCall, map[string]any{"name": "count"}, nil), `"_meta":{`, `"_meta":{"io.modelcontextprotocol/logLevel":"debug",`, 1)
	resp := e.post(body, modernHeaders(MethodToolsCall, "count"))
	defer resp.Body.Close()
	rd := newSSEReader(t, resp.Body)
	for i := 0; i < 50; i++ {
		m, _, ok := rd.nextMessage()
		if !ok || m.Method != NotificationMessage || !bytes.Contains(m.Params, []byte(`"data":"`+fmt.Sprint(i)+`"`)) {
			t.Fatalf("frame %d: %+v", i, m)
		}
	}
	if m, _, ok := rd.nextMessage(); !ok || textOf(t, m.Result) != "end" {
		t.Fatalf("%+v", m)
	}
}

// A client response is matched only within its own session: another
// session answering the same id cannot complete the call.
func TestHTTPResponseInjectionAcrossSessions(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, nil)
	victim, attacker := e.initSession(nil), e.initSession(nil)
	resp := e.post(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"sample"}}`, hdr("Accept", acceptBoth, "Mcp-Session-Id", victim))
	defer resp.Body.Close()
	rd := newSSEReader(t, resp.Body)
	req, _, ok := rd.nextMessage()
	if !ok || req.Method != MethodSamplingCreateMessage {
		t.Fatalf("%+v", req)
	}
	answer := func(text string) string {
		return `{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"role":"assistant","content":{"type":"text","text":"` + text + `"},"model":"m"}}`
	}
	forged := e.post(answer("forged"), hdr("Mcp-Session-Id", attacker))
	wantStatus(t, forged, http.StatusAccepted)
	forged.Body.Close()
	real := e.post(answer("genuine"), hdr("Mcp-Session-Id", victim))
	wantStatus(t, real, http.StatusAccepted)
	real.Body.Close()
	if m, _, ok := rd.nextMessage(); !ok || textOf(t, m.Result) != "model said: genuine" {
		t.Fatalf("%+v", m)
	}
}
