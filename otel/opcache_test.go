package otel

import (
	"strconv"
	"testing"

	"github.com/gopmcp/pmcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// setOf returns the attribute set the options record with.
func setOf(t *testing.T, opts []metric.RecordOption) *attribute.Set {
	t.Helper()
	set := metric.NewRecordConfig(opts).Attributes()
	return &set
}

// The cache holds at most its size; every entry, cached or not, has the
// span name and attributes of its own operation.
func TestOpCacheBound(t *testing.T) {
	const size = 4
	c := newOpCache(size, 0)
	ti := pmcp.TransportInfo{Network: "tcp", Protocol: "http", ProtocolVersion: "1.1"}
	for round := range 2 {
		for i := range 3 * size {
			name := "tool" + strconv.Itoa(i)
			e := c.get(serverOpKey(pmcp.MethodToolsCall, name, "2026-07-28", ti))
			if e.spanName != "tools/call "+name {
				t.Fatalf("round %d: span name %q, want %q", round, e.spanName, "tools/call "+name)
			}
			set := setOf(t, e.ok)
			if v, _ := set.Value(KeyToolName); v.AsString() != name {
				t.Fatalf("round %d: histogram %s = %q, want %q", round, KeyToolName, v.AsString(), name)
			}
			if _, ok := set.Value(KeyErrorType); ok {
				t.Fatalf("success set has %s", KeyErrorType)
			}
			if v, _ := setOf(t, e.toolError).Value(KeyErrorType); v.AsString() != ErrorTypeToolError {
				t.Fatalf("tool error set %s = %q", KeyErrorType, v.AsString())
			}
			if n := len(*c.m.Load()); n > size {
				t.Fatalf("round %d: %d entries cached, want at most %d", round, n, size)
			}
		}
	}
	k := serverOpKey(pmcp.MethodToolsCall, "again", "", ti)
	if c.get(k) != c.get(k) {
		t.Error("a cached operation is computed again")
	}
	off := newOpCache(-1, 0)
	if off.get(k) == off.get(k) || off.m.Load() != nil {
		t.Error("OperationCacheSize < 0 still caches")
	}
}

// Failure outcomes are cached per operation up to a bound, and each set
// carries its own codes; beyond the bound the codes are "_OTHER".
func TestOpEntryOutcomes(t *testing.T) {
	e := newOpEntry(serverOpKey(pmcp.MethodToolsCall, "x", "2025-11-25", pmcp.TransportInfo{Network: "pipe"}), newTargetSet(0))
	for round := range 2 {
		for i := range 2 * maxOutcomesPerOperation {
			code := strconv.Itoa(-32000 - i)
			o := outcome{errorType: code, statusCode: code}
			if i%2 == 1 {
				o.errorType = "" // a caller fault: status code only
			}
			set := setOf(t, e.record(o))
			et, hasET := set.Value(KeyErrorType)
			sc, _ := set.Value(KeyResponseStatusCode)
			wantET, wantSC := o.errorType, code
			if i >= maxOutcomesPerOperation { // beyond the bound: one series each
				wantSC = ErrorTypeOther
				if wantET != "" {
					wantET = ErrorTypeOther
				}
			}
			if sc.AsString() != wantSC || hasET != (o.errorType != "") || et.AsString() != wantET {
				t.Fatalf("round %d, outcome %+v: set %v", round, o, set.ToSlice())
			}
			if v, _ := set.Value(KeyToolName); v.AsString() != "x" {
				t.Fatalf("outcome set lost %s: %v", KeyToolName, set.ToSlice())
			}
		}
	}
	if n := len(*e.outcomes.Load()); n != maxOutcomesPerOperation+2 {
		t.Errorf("%d outcomes cached, want %d", n, maxOutcomesPerOperation+2)
	}
	if _, ok := setOf(t, e.record(outcome{})).Value(KeyErrorType); ok {
		t.Error("success records error.type")
	}
}

func TestMentionsAny(t *testing.T) {
	fields := []string{"traceparent", "tracestate", "baggage"}
	for meta, want := range map[string]bool{
		`{}`: false,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"x"}}`: false,
		`{"traceparent":"00-x"}`:                     true,
		`{"a":"traceparent-like","baggage":"k=v"}`:   true,
		`{"a":"traceparentx","b":"xtraceparent"}`:    false,
		`{"progressToken":1,"tracestate":"a=b"}`:     true,
		`{"x":"y","traceparent`:                      false,
		`"traceparent"`:                              true,
		`{"note":"mentions \"baggage\" in a value"}`: false, // escaped quotes: not a match
	} {
		if got := mentionsAny([]byte(meta), fields); got != want {
			t.Errorf("mentionsAny(%s) = %v, want %v", meta, got, want)
		}
	}
}

// A client operation's attributes name the server it calls; a server
// operation's never do.
func TestOpEntryServerAddress(t *testing.T) {
	ti := pmcp.TransportInfo{Network: "tcp", Protocol: "http", ProtocolVersion: "1.1", RemoteAddr: "127.0.0.1:8080"}
	c := newOpCache(0, 0)
	cli := setOf(t, c.get(clientOpKey(pmcp.MethodToolsCall, "x", "2026-07-28", ti)).ok)
	if v, _ := cli.Value(KeyServerAddress); v.AsString() != "127.0.0.1" {
		t.Errorf("client %s = %q", KeyServerAddress, v.AsString())
	}
	if v, _ := cli.Value(KeyServerPort); v.AsInt64() != 8080 {
		t.Errorf("client %s = %d", KeyServerPort, v.AsInt64())
	}
	srv := setOf(t, c.get(serverOpKey(pmcp.MethodToolsCall, "x", "2026-07-28", ti)).ok)
	if _, ok := srv.Value(KeyServerAddress); ok {
		t.Errorf("server operation has %s: %v", KeyServerAddress, srv.ToSlice())
	}
}
