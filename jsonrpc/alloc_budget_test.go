package jsonrpc

import (
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// Allocation budgets of the codec (see the pmcp package's
// alloc_budget_test.go): go test -count=1 -run AllocBudget ./...

func TestAllocBudgetCodec(t *testing.T) {
	check := func(name string, budget float64, f func()) {
		t.Helper()
		f()
		got := testing.AllocsPerRun(500, f)
		if !raceEnabled && got > budget {
			t.Errorf("%s: %.1f allocations, budget %.0f", name, got, budget)
		}
	}
	// Decoding a request allocates the *Request only (the method name of
	// MCP methods is interned, the params alias the input).
	check("Decode request", 1, func() {
		if _, err := Decode(benchRequest, Limits{}); err != nil {
			t.Fatal(err)
		}
	})
	resp := &Response{ID: Int64ID(42), Result: jsontext.Value(`{"content":[{"type":"text","text":"hello"}]}`)}
	buf := make([]byte, 0, 256)
	check("AppendMessage response", 0, func() {
		if _, err := AppendMessage(buf[:0], resp); err != nil {
			t.Fatal(err)
		}
	})
}
