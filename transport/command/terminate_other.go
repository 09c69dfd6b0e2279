//go:build !unix

package command

import (
	"errors"
	"os"
)

// terminate reports that there is no polite signal here: Close goes
// straight to Kill.
func terminate(p *os.Process) error { return errors.ErrUnsupported }
