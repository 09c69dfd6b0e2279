//go:build unix

package command

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// ownGroup puts the child in a process group of its own, unless the
// caller's SysProcAttr already decides; it reports whether the child
// leads a group of its own (then signals go to the whole group, reaching
// what the server spawned: sh -c, npx, uv run ...).
func ownGroup(cmd *exec.Cmd) bool {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		return true
	}
	a := cmd.SysProcAttr
	return a.Setsid || (a.Setpgid && a.Pgid == 0)
}

// terminate asks the process (its group when it leads one) to exit
// (SIGTERM).
func terminate(p *os.Process, group bool) error { return signalProc(p, group, syscall.SIGTERM) }

// kill ends the process (its group when it leads one) with SIGKILL.
func kill(p *os.Process, group bool) error { return signalProc(p, group, syscall.SIGKILL) }

// killGroupRest kills what is left of the group once its leader has been
// reaped (the group id stays reserved while any member lives).
func killGroupRest(p *os.Process, group bool) {
	if group {
		_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	}
}

func signalProc(p *os.Process, group bool, sig syscall.Signal) error {
	if !group {
		return p.Signal(sig)
	}
	err := syscall.Kill(-p.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}
