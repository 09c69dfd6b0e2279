package redis

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the child redis-server die with the test binary,
// even when a test panics and deferred stops never run.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
