package pmcp

import (
	"context"
	"net/http"
	"testing"
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
	legacy, modern := mustDecodeRequest(t, benchEchoLegacy), mustDecodeRequest(t, benchEchoModern)
	// Server.handle alone: params scan, era, validation, the typed
	// handler and its result (the per-request state, the handler's input
	// value and result, the tool name; modern: _meta strings and the
	// result _meta map).
	checkAllocs(t, "handle legacy tools/call", 4, func() { _, _ = s.handle(ctx, legacy, env) })
	checkAllocs(t, "handle modern tools/call", 8, func() { _, _ = s.handle(ctx, modern, env) })
}

func TestAllocBudgetServe(t *testing.T) {
	d, stop := startLegacyDriver(t)
	defer stop()
	legacy, modern := []byte(benchEchoLegacy), []byte(benchEchoModern)
	// A whole tools/call through Server.Serve and rpcconn.Conn: decode,
	// dispatch, result encoding, the Conn's request context.
	checkAllocs(t, "Serve legacy tools/call", 10, func() { d.roundTrip(legacy) })
	checkAllocs(t, "Serve modern tools/call", 14, func() { d.roundTrip(modern) })
	if got := d.last(); string(got) != benchEchoLegacyResult && !raceEnabled {
		// The last round trip was modern: just check it is a result.
		if len(got) == 0 || got[len(got)-1] != '}' {
			t.Errorf("unexpected response %s", got)
		}
	}
}

func TestAllocBudgetHTTP(t *testing.T) {
	h, legacy, modern := newBenchHTTP(t)
	defer h.Close()
	// ServeHTTP with JSON responses, as bench/ serves: the body buffer,
	// the request's contexts and headers on top of the dispatch. (The Host
	// check parses r.Host in place; it no longer formats and re-parses the
	// connection's local address.) The modern path reads the tool name
	// and arguments from the dispatcher's scan and looks the tool up once;
	// it no longer decodes the name into a heap-moved string of its own.
	checkAllocs(t, "HTTP legacy tools/call", 14, legacy.serve)
	checkAllocs(t, "HTTP modern tools/call", 19, modern.serve)
	for _, hb := range []*httpBench{legacy, modern} {
		if hb.w.status != http.StatusOK {
			t.Fatalf("status %d: %s", hb.w.status, hb.w.body)
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
