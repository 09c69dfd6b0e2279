package pmcp

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// Allocation budgets of the request hot path. A change that allocates more
// per request fails here; raise a budget only with a reason. The budgets
// are asserted without the race detector, which allocates on its own:
//
//	go test -count=1 -run AllocBudget ./...
//
// Under -race the paths still run (as smoke tests) but are not counted.

func checkAllocs(t *testing.T, name string, budget float64, f func()) {
	t.Helper()
	f() // warm up pools and caches
	got := testing.AllocsPerRun(200, f)
	if raceEnabled {
		return
	}
	t.Logf("%s: %.1f allocations per request (budget %.0f)", name, got, budget)
	if got > budget {
		t.Errorf("%s: %.1f allocations per request, budget %.0f", name, got, budget)
	}
}

func TestAllocBudgetDispatch(t *testing.T) {
	s := newBenchServer(t)
	env := &requestEnv{session: &session{}}
	ctx := context.Background()
	if _, err := s.handle(ctx, mustDecodeRequest(t, benchInitialize), env); err != nil {
		t.Fatal(err)
	}
	for _, era := range []struct {
		name   string
		req    *jsonrpc.Request
		budget float64
	}{
		// Server.handle alone: params scan, era, validation, the typed
		// handler and its result (the per-request state, the handler's
		// input value and result, the tool name; modern: _meta strings and
		// the result _meta map). Modern was 8 while _meta's protocol
		// version and log level were decoded into strings of their own, 7
		// while the client info was decoded for every request, 6 while
		// each result got a map of its own for its serverInfo _meta.
		{"legacy", mustDecodeRequest(t, benchEchoLegacy), 4},
		{"modern", mustDecodeRequest(t, benchEchoModern), 4},
	} {
		var res any
		var err error
		checkAllocs(t, "handle "+era.name+" tools/call", era.budget, func() { res, err = s.handle(ctx, era.req, env) })
		// What was measured must be the successful call, not an error path.
		if err != nil {
			t.Fatalf("%s: handle: %v", era.name, err)
		}
		raw, merr := json.Marshal(res)
		if merr != nil || !isEchoResult(raw) {
			t.Fatalf("%s: handle returned %s (%v), want the echo of \"hello\"", era.name, raw, merr)
		}
	}
}

// isEchoResult reports whether raw (a tools/call result or a whole
// response) is the successful echo of "hello".
func isEchoResult(raw []byte) bool {
	return bytes.Contains(raw, []byte(`"content":[{"type":"text","text":"hello"}]`)) &&
		!bytes.Contains(raw, []byte(`"isError":true`)) && !bytes.Contains(raw, []byte(`"error":`))
}

func TestAllocBudgetServe(t *testing.T) {
	d, stop := startLegacyDriver(t)
	defer stop()
	// A whole tools/call through Server.Serve and rpcconn.Conn: decode,
	// dispatch, result encoding, the Conn's request context.
	for _, era := range []struct {
		name   string
		line   []byte
		budget float64
	}{{"legacy", []byte(benchEchoLegacy), 10}, {"modern", []byte(benchEchoModern), 10}} {
		checkAllocs(t, "Serve "+era.name+" tools/call", era.budget, func() { d.roundTrip(era.line) })
		// What was measured must be the successful call, not an error path.
		got := d.last()
		if era.name == "legacy" && string(got) != benchEchoLegacyResult {
			t.Fatalf("legacy response %s, want %s", got, benchEchoLegacyResult)
		}
		if !isEchoResult(got) || !bytes.Contains(got, []byte(`"id":1,"result":`)) {
			t.Fatalf("%s response %s, want the successful echo of \"hello\"", era.name, got)
		}
	}
}

func TestAllocBudgetHTTP(t *testing.T) {
	// ServeHTTP with JSON responses, as bench/ serves: the body buffer,
	// the request's contexts and headers on top of the dispatch. (The Host
	// check parses r.Host in place; it no longer formats and re-parses the
	// connection's local address.) The modern path reads the tool name
	// and arguments from the dispatcher's scan and looks the tool up once;
	// it no longer decodes the name into a heap-moved string of its own.
	checkHTTPAllocs(t, "HTTP", newBenchHTTP, 14, 15)
}

func TestAllocBudgetHTTPSSE(t *testing.T) {
	// ServeHTTP when the client accepts SSE (pmcp serve's default): the
	// legacy handler runs on a pooled goroutine while ServeHTTP waits to
	// decide the reply, which is one JSON body for this quick echo (a
	// stream only when the handler sends something first or is slow); the
	// modern handler runs in ServeHTTP's goroutine and the reply stays
	// plain JSON (no writer goroutine, no queue, unless it notifies).
	// Legacy 29 before that decision (a primed event stream through the
	// event store for every reply); 38 and 25 before the event writer held its ResponseController by
	// value and sized its buffer once instead of growing it event by event
	// (and the in-memory event store kept no pointer per event: legacy 4
	// fewer), the modern figure before the server shared its decoded
	// _meta values and its results' serverInfo map.
	checkHTTPAllocs(t, "HTTP SSE", newBenchHTTPSSE, 25, 20)
}

// checkHTTPAllocs checks the budgets of an echo tools/call in both eras on
// the handler newHTTP makes, and that each call succeeded.
func checkHTTPAllocs(t *testing.T, name string, newHTTP func(testing.TB) (*StreamableHTTPHandler, *httpBench, *httpBench), legacyBudget, modernBudget float64) {
	t.Helper()
	h, legacy, modern := newHTTP(t)
	defer h.Close()
	checkAllocs(t, name+" legacy tools/call", legacyBudget, legacy.serve)
	checkAllocs(t, name+" modern tools/call", modernBudget, modern.serve)
	for _, hb := range []*httpBench{legacy, modern} {
		if hb.w.Status != http.StatusOK || !bytes.Contains(hb.w.Body, []byte(`"text":"hello"`)) {
			t.Fatalf("%s: status %d: %s", name, hb.w.Status, hb.w.Body)
		}
	}
}

func TestAllocBudgetResultEncoding(t *testing.T) {
	res := textResult("hello")
	buf := make([]byte, 0, 256)
	checkAllocs(t, "direct result encoding", 0, func() {
		if _, ok := appendResult(buf[:0], res); !ok {
			t.Fatal("not encoded")
		}
	})
}

func TestAllocBudgetAccessLog(t *testing.T) {
	// The access record alone: its attributes are typed values in a
	// fixed-size array; the one allocation is the slog.Record's storage
	// for the attributes beyond the five it holds inline.
	_, record := accessLogFixture(t, discardJSONLogger())
	checkAllocs(t, "access record", 1, record)
	// A whole HTTP tools/call with the access log on: the record only.
	h, legacy, modern := newBenchHTTPWith(t, ServerOptions{Logger: discardJSONLogger()}, StreamableHTTPOptions{}, nil)
	defer h.Close()
	checkAllocs(t, "HTTP legacy tools/call, access log", 14+1, legacy.serve)
	checkAllocs(t, "HTTP modern tools/call, access log", 15+1, modern.serve)
	for _, hb := range []*httpBench{legacy, modern} {
		if hb.w.Status != http.StatusOK || !isEchoResult(hb.w.Body) {
			t.Fatalf("status %d: %s", hb.w.Status, hb.w.Body)
		}
	}
}

func TestAllocBudgetBearer(t *testing.T) {
	// A whole HTTP tools/call authenticated by a hook that allocates its
	// AuthInfo, AuthContext and scopes (3): pmcp adds nothing, the
	// session's principal check included (principalMatches).
	h, legacy, modern := newBenchHTTPWith(t, ServerOptions{}, StreamableHTTPOptions{Authenticate: benchAuthenticate},
		http.Header{"Authorization": {"Bearer " + benchBearer}})
	defer h.Close()
	checkAllocs(t, "HTTP legacy tools/call, bearer", 14+3, legacy.serve)
	checkAllocs(t, "HTTP modern tools/call, bearer", 15+3, modern.serve)
	for _, hb := range []*httpBench{legacy, modern} {
		if hb.w.Status != http.StatusOK || !isEchoResult(hb.w.Body) {
			t.Fatalf("status %d: %s", hb.w.Status, hb.w.Body)
		}
	}
}
