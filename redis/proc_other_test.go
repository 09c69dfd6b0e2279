//go:build !linux

package redis

import "os/exec"

// dieWithParent: only Linux offers a parent-death signal; elsewhere a
// panicking test can leave its redis-server behind.
func dieWithParent(*exec.Cmd) {}
