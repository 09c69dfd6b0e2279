package pmcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// These tests attack the HTTP handler over real loopback sockets and
// measure the heap the server keeps (after GC) where the defect is memory.

// liveHeap returns the live heap bytes after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// heapGrowth is after-before, or 0 when the heap shrank.
func heapGrowth(before, after uint64) uint64 {
	if after < before {
		return 0
	}
	return after - before
}

// listenURIs returns n distinct URIs of exactly size bytes each.
func listenURIs(n, size int) []string {
	out := make([]string, n)
	for i := range out {
		u := fmt.Sprintf("test://r/%d/", i)
		out[i] = u + strings.Repeat("x", size-len(u))
	}
	return out
}

// TestHTTPListenFilterLimits: a subscriptions/listen whose resource list
// is over a limit (count, one URI's length, total bytes) is refused with
// -32602 before any stream is opened.
func TestHTTPListenFilterLimits(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, nil)
	cases := map[string][]string{
		"count":     listenURIs(defaultMaxResourceSubscriptions+1, 16),
		"uri bytes": {"test://r/" + strings.Repeat("x", defaultMaxResourceURIBytes)},
		"total":     listenURIs(defaultMaxResourceSubscriptionBytes/1024+1, 1024),
		"125k URIs": listenURIs(125_000, 28), // a 3.7 MiB body
	}
	for name, uris := range cases {
		body := modernBody("sub-"+name, MethodSubscriptionsListen, map[string]any{"notifications": map[string]any{"resourceSubscriptions": uris}}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp := e.do(ctx, http.MethodPost, body, modernHeaders(MethodSubscriptionsListen, ""))
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != "application/json" {
			resp.Body.Close()
			cancel()
			t.Fatalf("%s: status %d (%s), want 400 with a JSON-RPC error", name, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		r := readJSON(t, resp)
		cancel()
		if r.Error == nil || r.Error.Code != jsonrpc.CodeInvalidParams || !strings.Contains(r.Error.Message, "resourceSubscriptions") {
			t.Fatalf("%s: error %+v", name, r.Error)
		}
	}
	if n := e.h.Stats().ListenStreams; n != 0 {
		t.Fatalf("ListenStreams = %d after refusals", n)
	}
}

// TestHTTPListenStreamHeapBounded: streams whose filter is at the limits,
// and whose request carried a large body, each keep a bounded amount of
// heap: the request body is not pinned for the stream's life.
func TestHTTPListenStreamHeapBounded(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, nil)
	const streams = 16
	n := defaultMaxResourceSubscriptionBytes / 128
	uris := listenURIs(n, 128)
	// ~1 MiB of padding in _meta, which the server never keeps.
	params := map[string]any{"notifications": map[string]any{"resourceSubscriptions": uris}}
	body := modernBody("sub", MethodSubscriptionsListen, params, nil)
	body = strings.Replace(body, `"_meta":{`, `"_meta":{"x.example/pad":"`+strings.Repeat("p", 1<<20)+`",`, 1)
	headers := modernHeaders(MethodSubscriptionsListen, "")

	open := func() *http.Response {
		resp := e.do(nil, http.MethodPost, body, headers)
		wantStatus(t, resp, 200)
		rd := newSSEReader(t, resp.Body)
		if ack, _, ok := rd.nextMessage(); !ok || ack.Method != NotificationSubscriptionsAck {
			t.Fatalf("first frame %+v", ack)
		}
		return resp
	}
	warm := open() // pools and connection buffers
	defer warm.Body.Close()
	before := liveHeap()
	var resps []*http.Response
	for range streams {
		resps = append(resps, open())
	}
	after := liveHeap()
	defer func() {
		for _, r := range resps {
			r.Body.Close()
		}
	}()
	per := heapGrowth(before, after) / streams
	// The filter itself (64 KiB of URIs in a set) plus the goroutines and
	// buffers of an open HTTP stream, client side included.
	limit := uint64(3*defaultMaxResourceSubscriptionBytes + 96<<10)
	t.Logf("heap per listen stream: %d KiB (limit %d KiB)", per>>10, limit>>10)
	if per > limit {
		t.Fatalf("each listen stream keeps %d KiB of heap, want at most %d KiB", per>>10, limit>>10)
	}
	// Events still match the filter.
	srv.NotifyResourceUpdated(uris[n-1])
	rd := newSSEReader(t, resps[0].Body)
	if m, _, ok := rd.nextMessage(); !ok || m.Method != NotificationResourceUpdated || !strings.Contains(string(m.Params), uris[n-1]) {
		t.Fatalf("want the update, got %+v", m)
	}
}

// subscribeBody is a legacy resources/subscribe request.
func subscribeBody(id int, uri string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/subscribe","params":{"uri":%q}}`, id, uri)
}

// TestHTTPLegacySubscribeLimits: resources/subscribe refuses URIs that
// name no resource, URIs over the length limit, and subscriptions beyond
// the per-session count; a flood of long URIs keeps no memory.
func TestHTTPLegacySubscribeLimits(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	if err := srv.AddResourceTemplate(&ResourceTemplate{URITemplate: "test://t/{id}", Name: "t"}, func(ctx context.Context, _ *RequestHandlerExtra, req *ResourceRequest) (*ReadResourceResult, error) {
		return &ReadResourceResult{Contents: []*ResourceContents{{URI: req.URI, Text: "t"}}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	e := newHTTPEnv(t, srv, nil)
	sid := e.initSession(nil)
	h := hdr("Accept", "application/json", "Mcp-Session-Id", sid)
	call := func(id int, uri string) *rpcReply {
		t.Helper()
		return readJSON(t, e.post(subscribeBody(id, uri), h))
	}
	if r := call(2, "test://r"); r.Error != nil {
		t.Fatalf("subscribe to a resource: %+v", r.Error)
	}
	if r := call(3, "test://t/7"); r.Error != nil {
		t.Fatalf("subscribe to a template match: %+v", r.Error)
	}
	if r := call(4, "test://nowhere"); r.Error == nil || r.Error.Code != jsonrpc.CodeResourceNotFound {
		t.Fatalf("unknown resource: %+v", r.Error)
	}
	long := "test://t/" + strings.Repeat("x", defaultMaxResourceURIBytes)
	if r := call(5, long); r.Error == nil || r.Error.Code != jsonrpc.CodeInvalidParams || !strings.Contains(r.Error.Message, "bytes") {
		t.Fatalf("over-long URI: %+v", r.Error)
	}

	// A flood of 64 KiB URIs on one session keeps nothing.
	big := "test://t/" + strings.Repeat("y", 64<<10)
	before := liveHeap()
	for i := range 200 {
		call(100+i, fmt.Sprintf("%s%d", big, i))
	}
	grew := heapGrowth(before, liveHeap())
	t.Logf("heap after 200 subscribes of 64 KiB URIs: +%d KiB", grew>>10)
	if grew > 2<<20 {
		t.Fatalf("200 refused subscriptions pinned %d KiB", grew>>10)
	}

	// The count limit (two subscriptions are already held).
	var last *rpcReply
	for i := range defaultMaxResourceSubscriptions - 1 {
		last = call(10_000+i, fmt.Sprintf("test://t/n%d", i))
		if i < defaultMaxResourceSubscriptions-2 && last.Error != nil {
			t.Fatalf("subscription %d refused: %+v", i, last.Error)
		}
	}
	if last.Error == nil || last.Error.Code != jsonrpc.CodeInvalidParams || !strings.Contains(last.Error.Message, "subscriptions") {
		t.Fatalf("over the count: %+v", last.Error)
	}
	// Re-subscribing to a held URI and unsubscribing still work.
	if r := call(20_000, "test://t/n0"); r.Error != nil {
		t.Fatalf("re-subscribe: %+v", r.Error)
	}
	unsub := readJSON(t, e.post(`{"jsonrpc":"2.0","id":20001,"method":"resources/unsubscribe","params":{"uri":"test://t/n0"}}`, h))
	if unsub.Error != nil {
		t.Fatal(unsub.Error)
	}
	if r := call(20_002, "test://t/new"); r.Error != nil {
		t.Fatalf("after unsubscribe: %+v", r.Error)
	}
}

// sseCall posts a legacy tools/call and returns the stream's last event id
// after reading it to its end. It accepts SSE only, so that even a quick
// reply comes as a stream (a client accepting JSON too would get JSON).
func sseCall(t *testing.T, e *httpEnv, sid string, id int, tool, args string) (lastID string, result *rpcReply) {
	t.Helper()
	resp := e.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args),
		hdr("Accept", "text/event-stream", "Mcp-Session-Id", sid))
	defer resp.Body.Close()
	wantStatus(t, resp, 200)
	rd := newSSEReader(t, resp.Body)
	for {
		ev, ok := rd.next()
		if !ok {
			return lastID, result
		}
		if ev.id != "" {
			lastID = ev.id
		}
		if ev.data != "" {
			result = decodeReply(t, []byte(ev.data))
		}
	}
}

// resumeGet sends a resumption GET.
func resumeGet(ctx context.Context, e *httpEnv, sid, last string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.ts.URL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Last-Event-ID", last)
	return e.ts.Client().Do(req)
}

// TestHTTPResumeFinishedAndUnknown: resumption GETs of a finished stream
// replay what is left and end; an unknown stream is answered at once with
// 400; many of them on one session hold nothing open.
func TestHTTPResumeFinishedAndUnknown(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, &StreamableHTTPOptions{KeepAliveInterval: -1})
	sid := e.initSession(nil)
	last, res := sseCall(t, e, sid, 2, "echo", `{"text":"hi"}`)
	if res == nil || textOf(t, res.Result) != "hi" {
		t.Fatalf("result %+v", res)
	}
	streamID, _, _ := strings.Cut(last, "-")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// From the priming id: the result is replayed, then the stream ends.
	resp, err := resumeGet(ctx, e, sid, streamID+"-0")
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, resp, 200)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !strings.Contains(string(b), `"hi"`) {
		t.Fatalf("replay of a finished stream: %q, %v (held open instead of ending?)", b, err)
	}

	// Many resumptions of the finished stream, at once: all end.
	const gets = 200
	var wg sync.WaitGroup
	errs := make(chan error, gets)
	for range gets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := resumeGet(ctx, e, sid, last)
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				errs <- fmt.Errorf("status %d: %w", resp.StatusCode, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a resumption GET of a finished stream did not end: %v", err)
	}

	// An unknown stream: an immediate 400, no stream.
	for _, id := range []string{"999-0", "0-5"} {
		resp, err := resumeGet(ctx, e, sid, id)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") == "text/event-stream" {
			resp.Body.Close()
			t.Fatalf("Last-Event-ID %s: status %d %s, want 400", id, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		resp.Body.Close()
	}
}

// TestHTTPResumeLiveStreamTakesOver: resumption GETs of a live stream
// replace each other, so one session never holds more than one writer per
// stream.
func TestHTTPResumeLiveStreamTakesOver(t *testing.T) {
	srv, tt := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, &StreamableHTTPOptions{KeepAliveInterval: -1})
	sid := e.initSession(nil)
	post := e.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}`, hdr("Accept", acceptBoth, "Mcp-Session-Id", sid))
	defer post.Body.Close()
	rd := newSSEReader(t, post.Body)
	prime, ok := rd.next()
	if !ok || prime.id == "" {
		t.Fatalf("priming %+v", prime)
	}
	<-tt.started
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var prev *http.Response
	for i := range 50 {
		resp, err := resumeGet(ctx, e, sid, prime.id)
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, resp, 200)
		if prev != nil {
			// The previous writer was replaced: its body ends.
			if _, err := io.Copy(io.Discard, prev.Body); err != nil {
				t.Fatalf("GET %d: the replaced stream did not end: %v", i, err)
			}
			prev.Body.Close()
		}
		prev = resp
	}
	close(tt.release)
	rd = newSSEReader(t, prev.Body)
	if m, _, ok := rd.nextMessage(); !ok || textOf(t, m.Result) != "released" {
		t.Fatalf("result on the last writer: %+v", m)
	}
	prev.Body.Close()
}

// addChatty registers a tool that logs n tiny messages, each one event
// of its stream.
func addChatty(t *testing.T, srv *Server) {
	t.Helper()
	type in struct {
		N int `json:"n"`
	}
	if err := AddTool(srv, &Tool{Name: "chatty", Description: "logs n tiny messages"}, func(ctx context.Context, extra *RequestHandlerExtra, p in) (string, error) {
		for range p.N {
			_ = extra.Log(LevelInfo, "x")
		}
		return "done", nil
	}); err != nil {
		t.Fatal(err)
	}
}

// debugSession opens a legacy session with logging/setLevel debug.
func debugSession(t *testing.T, e *httpEnv) string {
	t.Helper()
	sid := e.initSession(nil)
	readJSON(t, e.post(`{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"debug"}}`, hdr("Accept", "application/json", "Mcp-Session-Id", sid)))
	return sid
}

// TestHTTPEventStoreSessionShare: one session's flood of ordinary replies
// and notifications cannot evict another session's stored result.
func TestHTTPEventStoreSessionShare(t *testing.T) {
	srv, tt := newHTTPTestServer(t)
	addChatty(t, srv)
	const maxBytes = 4 << 20
	store := newMemoryEventStore(MemoryEventStoreOptions{MaxBytes: maxBytes, MaxStreamEvents: -1})
	e := newHTTPEnv(t, srv, &StreamableHTTPOptions{EventStore: store, KeepAliveInterval: -1, NotificationBuffer: 1 << 20})
	sidB := e.initSession(nil)
	sidA := debugSession(t, e)

	// B's tool closes its stream; its result is stored, undelivered.
	resp := e.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"closer","arguments":{}}}`, hdr("Accept", acceptBoth, "Mcp-Session-Id", sidB))
	rd := newSSEReader(t, resp.Body)
	last := ""
	for {
		ev, ok := rd.next()
		if !ok {
			break
		}
		if ev.id != "" {
			last = ev.id
		}
	}
	resp.Body.Close()
	<-tt.started
	close(tt.release)
	streamB, _, _ := strings.Cut(last, "-")
	for { // until B's result is stored
		evs, _ := store.After(context.Background(), sidB, streamB, 0)
		if len(evs) > 0 && strings.Contains(string(evs[len(evs)-1].Data), "reconnected") {
			break
		}
		runtime.Gosched()
	}

	// A floods: ~4× the cap in replies and notifications.
	text := strings.Repeat("a", 8<<10)
	for i := range maxBytes / len(text) {
		sseCall(t, e, sidA, 1000+i, "echo", fmt.Sprintf(`{"text":%q}`, text))
	}
	for i := range 2 {
		sseCall(t, e, sidA, 5000+i, "chatty", `{"n":20000}`)
	}
	events, charged := store.size()
	t.Logf("after A's flood: %d events, %d KiB charged", events, charged>>10)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	get, err := resumeGet(ctx, e, sidB, last)
	if err != nil {
		t.Fatal(err)
	}
	defer get.Body.Close()
	if get.StatusCode != 200 {
		t.Fatalf("B's resumption: status %d, its result was evicted by A's flood", get.StatusCode)
	}
	rd = newSSEReader(t, get.Body)
	m, _, ok := rd.nextMessage()
	for ok && m.Method != "" {
		m, _, ok = rd.nextMessage()
	}
	if !ok || textOf(t, m.Result) != "reconnected" {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Fatal("B's resumption idled: its result was evicted by A's flood")
		}
		t.Fatalf("B's result: %+v", m)
	}
}

// TestHTTPEventStoreHeapWithinCap: when sessions fill the store with small
// events, the heap it holds stays within 1.5× its documented byte cap.
func TestHTTPEventStoreHeapWithinCap(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	addChatty(t, srv)
	const maxBytes = 2 << 20
	store := newMemoryEventStore(MemoryEventStoreOptions{MaxBytes: maxBytes, MaxStreamEvents: -1})
	e := newHTTPEnv(t, srv, &StreamableHTTPOptions{EventStore: store, KeepAliveInterval: -1, NotificationBuffer: 1 << 20})
	sids := make([]string, 4)
	for i := range sids {
		sids[i] = debugSession(t, e)
	}
	sseCall(t, e, sids[0], 1, "chatty", `{"n":10}`) // warm up
	before := liveHeap()
	for i, sid := range sids {
		sseCall(t, e, sid, 10+i, "chatty", `{"n":15000}`)
		sseCall(t, e, sid, 100+i, "echo", fmt.Sprintf(`{"text":%q}`, strings.Repeat("b", 100<<10)))
	}
	grew := heapGrowth(before, liveHeap())
	events, charged := store.size()
	t.Logf("store full: %d events, %d KiB charged, heap +%d KiB (cap %d KiB)", events, charged>>10, grew>>10, maxBytes>>10)
	if charged > maxBytes {
		t.Fatalf("store charges %d bytes, over its cap", charged)
	}
	if grew > maxBytes*3/2 {
		t.Fatalf("the full store holds %d KiB of heap, want at most 1.5× its %d KiB cap", grew>>10, maxBytes>>10)
	}
}
