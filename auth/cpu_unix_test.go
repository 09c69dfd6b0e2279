//go:build unix

package auth

import (
	"syscall"
	"testing"
	"time"
)

// processCPU returns the CPU time (user and system) the process used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuPerOp runs loop and reports the process CPU time per iteration as
// "cpu-ns/op" besides the wall-clock ns/op. On a shared machine the
// wall clock counts the time other processes held the CPU; the process
// CPU time (garbage collection included) does not, which makes A/B
// comparisons of the same code path far less noisy.
func cpuPerOp(b *testing.B, loop func()) {
	b.Helper()
	start := processCPU()
	n := 0
	for b.Loop() {
		loop()
		n++
	}
	if n > 0 {
		b.ReportMetric(float64(processCPU()-start)/float64(n), "cpu-ns/op")
	}
}
