//go:build unix

package benchkit

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system) the process used.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
