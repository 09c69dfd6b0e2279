// Package benchcpu reports the process CPU time per benchmark iteration,
// for the benchmarks of several packages of this module.
package benchcpu

import "testing"

// PerOp runs loop under b.Loop and, where the platform can tell, reports
// the process CPU time (user and system) per iteration as "cpu-ns/op"
// besides the wall-clock ns/op. On a shared machine the wall clock counts
// the time other processes held the CPU; the process CPU time (garbage
// collection included) does not, which makes A/B comparisons of the same
// code path far less noisy.
func PerOp(b *testing.B, loop func()) {
	b.Helper()
	start, ok := processCPU()
	n := 0
	for b.Loop() {
		loop()
		n++
	}
	if end, _ := processCPU(); ok && n > 0 {
		b.ReportMetric(float64(end-start)/float64(n), "cpu-ns/op")
	}
}
