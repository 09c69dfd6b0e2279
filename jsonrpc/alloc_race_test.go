//go:build race

package jsonrpc

// raceEnabled: the race detector changes allocation counts, so the budgets
// of alloc_budget_test.go are only asserted without it.
const raceEnabled = true
