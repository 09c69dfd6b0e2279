//go:build !unix

package auth

import "testing"

// cpuPerOp runs loop; without getrusage it reports no CPU time.
func cpuPerOp(b *testing.B, loop func()) {
	b.Helper()
	for b.Loop() {
		loop()
	}
}
