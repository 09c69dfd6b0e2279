//go:build race

package auth

// raceEnabled: the race detector changes allocation counts, so they are
// only asserted without it.
const raceEnabled = true
