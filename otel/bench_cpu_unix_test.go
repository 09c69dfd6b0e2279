//go:build unix

package otel_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) the process used so far.
// Benchmarks report it per operation: on a shared machine it is steadier
// than wall time, and it counts the SDK's background goroutines and the
// garbage collector too.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
