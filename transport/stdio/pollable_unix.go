//go:build unix

package stdio

import (
	"os"
	"syscall"
)

// pollable returns f as a file the Go runtime polls, when f is a pipe or
// a socket: it is switched to non-blocking mode and reopened, so a read
// or write that has to wait parks the goroutine instead of blocking a
// thread (and, with it, a processor until the runtime takes it back). A
// terminal or regular file is returned unchanged: its file description
// may be shared with other processes, which must not see it change mode.
func pollable(f *os.File) *os.File {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return f
	}
	fd := int(f.Fd()) // Fd puts f in blocking mode; NewFile below undoes it
	if err := syscall.SetNonblock(fd, true); err != nil {
		return f
	}
	return os.NewFile(uintptr(fd), f.Name())
}
