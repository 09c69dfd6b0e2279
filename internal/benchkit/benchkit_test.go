package benchkit

import (
	"runtime"
	"testing"
)

// PerOp runs the loop once per iteration and, where getrusage exists,
// reports a positive CPU time per iteration.
func TestPerOpReportsCPU(t *testing.T) {
	calls := 0
	sink := 0
	r := testing.Benchmark(func(b *testing.B) {
		PerOp(b, func() {
			calls++
			for i := range 20000 {
				sink += i
			}
		})
	})
	_ = sink
	if r.N == 0 || calls < r.N {
		t.Fatalf("loop ran %d times for %d iterations", calls, r.N)
	}
	got, ok := r.Extra["cpu-ns/op"]
	if _, unix := processCPU(); !unix {
		if ok {
			t.Fatalf("cpu-ns/op reported (%v) where the platform cannot measure it", got)
		}
		return
	}
	if !ok || got <= 0 {
		t.Fatalf("cpu-ns/op = %v (reported %v), want a positive figure on %s", got, ok, runtime.GOOS)
	}
}
