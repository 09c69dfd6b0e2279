//go:build !unix

package command

import (
	"errors"
	"os"
	"os/exec"
)

// ownGroup: no process groups here; only the child itself is signalled.
func ownGroup(*exec.Cmd) bool { return false }

// terminate reports that there is no polite signal here: Close goes
// straight to Kill.
func terminate(*os.Process, bool) error { return errors.ErrUnsupported }

// kill ends the process.
func kill(p *os.Process, _ bool) error { return p.Kill() }

func killGroupRest(*os.Process, bool) {}
