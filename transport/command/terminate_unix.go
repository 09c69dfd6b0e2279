//go:build unix

package command

import (
	"os"
	"syscall"
)

// terminate asks the process to exit (SIGTERM).
func terminate(p *os.Process) error { return p.Signal(syscall.SIGTERM) }
