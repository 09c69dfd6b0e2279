package proxy

import (
	"strings"
	"testing"

	"github.com/gopmcp/pmcp"
)

// TestAllocBudgetForward: one tools/call forwarded HTTP → HTTP on
// loopback (forwardRig: the downstream request, the proxy, its upstream
// client session and the upstream pmcp server, all in this process).
// The budget counts the whole round, net/http included (measured: legacy
// 287, modern 289, the same on every run), plus one for a connection
// net/http may re-dial within the 300 runs. The legacy figure was 289
// before a legacy call ran upstream on its own request's goroutine
// (runLegacy: no job channels), 290 before the upstream client took a response from its POST's JSON body
// directly (rpcconn.ReplySink), 297 before a quick legacy reply became
// one JSON body instead of an SSE stream (the upstream pmcp server's
// reply here); 306 and 298 before
// the upstream client left out of its decoding the serverInfo of the
// upstream's results that the proxy deletes (client_result_decode.go's
// lean decoding, internal/relay); 313 and 305 before the
// upstream client stopped declaring Apps support itself, encoded
// tools/call params directly and decoded text results in one pass
// (d25-up); 317 (legacy) before
// the in-memory event store kept no pointer per event; 319 and 309 before
// modern results shared one serverInfo _meta map; 323 and 314 before the
// servers shared the decoded client info of byte-identical requests;
// 325 and 317 before the
// servers kept _meta's protocol version and log level in their request
// state; 331 and 319 before the
// SSE writer sized its buffer once; 343 and 331 before the
// upstream server kept the decoded client capabilities of the proxy's
// requests (the same bytes every time) instead of decoding them again;
// 346 and 334 before
// the call's params and first round shared an allocation and the health
// record and the slot lookup stopped allocating on success; 348 and 336 before the
// client read resultType with the params scanner; 351 and 339 before a
// job became its own context and the pool's argument; 353 and 341 before
// resultMeta stopped copying the upstream result's _meta; 356 and 344 before the
// upstream client stopped scanning its own params for their target name
// (ClientSession.send); 442 and 439 before the
// proxy stopped re-encoding the upstream requests' _meta (apps.go,
// meta_splice.go) and computing bindings and forwarded _meta it did not
// need; 360 and 348 before the jobs ran on the work pool and the client's
// mirrored headers were read with the params scan; 355 and 343 before the
// upstream clients stopped declaring Apps support themselves (apps.go);
// 353 and 341 before the client encoded tools/call params without
// reflection and sent them unchecked (client_params.go); 349 and 337
// before a text-block result was decoded once, its resultType with it
// (client_result_decode.go); 347 and 335 before the upstream client's
// mirrored headers were built from what it encoded the params of instead
// of read back, and its middleware requests' id slots were allocated with
// them (client_params.go); 342 and 330 before a result's _meta was
// decoded with the result (client_result_decode.go):
// a change that brings such work back fails here. Lower a budget
// when a change saves allocations; never raise one. Asserted without the
// race detector:
//
//	go test -count=1 -run AllocBudget ./proxy
func TestAllocBudgetForward(t *testing.T) {
	for _, c := range []struct {
		era    pmcp.Era
		budget float64
	}{
		{pmcp.EraLegacy, 288},
		{pmcp.EraModern, 290},
	} {
		r := newForwardRig(t, c.era)
		var out string
		f := func() { out = r.call(t) }
		f()
		got := testing.AllocsPerRun(300, f)
		if !strings.Contains(out, `"text":"hello"`) || strings.Contains(out, `"error"`) {
			t.Fatalf("%v: the forwarded call answered %s", c.era, out)
		}
		if raceEnabled {
			continue
		}
		t.Logf("%v tools/call through the proxy: %.1f allocations (budget %.0f)", c.era, got, c.budget)
		if got > c.budget {
			t.Errorf("%v tools/call through the proxy: %.1f allocations, budget %.0f", c.era, got, c.budget)
		}
	}
}
