//go:build !unix

package stdio

import "os"

func pollable(f *os.File) *os.File { return f }
