//go:build !race

package gateway

// raceEnabled: the race detector changes allocation counts, so the
// allocation budgets are only asserted without it.
const raceEnabled = false
