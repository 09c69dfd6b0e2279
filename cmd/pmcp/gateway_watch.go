package main

import (
	"context"
	"crypto/sha256"
	"io"
	"os"
	"time"
)

// minWatchInterval bounds how often --watch polls the file.
const minWatchInterval = 50 * time.Millisecond

// fileStamp is what --watch compares: the file's size and modification
// time (cheap, every poll) and its content's hash (when those moved, so a
// touched but unchanged file reloads nothing).
type fileStamp struct {
	size    int64
	modTime time.Time
	sum     [sha256.Size]byte
	ok      bool // the file could be read
}

// stampFile reads path's stamp; prev is reused when size and time are
// unchanged.
func stampFile(path string, prev fileStamp) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	if prev.ok && fi.Size() == prev.size && fi.ModTime().Equal(prev.modTime) {
		return prev
	}
	f, err := os.Open(path)
	if err != nil {
		return fileStamp{}
	}
	defer f.Close()
	h := sha256.New()
	// The same bound as reading the file (a larger one is refused there).
	if _, err := io.Copy(h, io.LimitReader(f, maxBridgeConfigBytes+1)); err != nil {
		return fileStamp{}
	}
	s := fileStamp{size: fi.Size(), modTime: fi.ModTime(), ok: true}
	h.Sum(s.sum[:0])
	return s
}

// onChange reloads whenever the file's content changes, polling it every
// interval (at least minWatchInterval) until ctx ends or stop is called.
// A file caught half written does not check and is refused like any
// invalid one (the configuration in force stays); the rest of the write
// changes it again, and that is reloaded.
func (r *gatewayReloader) onChange(ctx context.Context, every time.Duration) (stop func()) {
	every = max(every, minWatchInterval)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	last := stampFile(r.path, fileStamp{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			cur := stampFile(r.path, last)
			if !cur.ok || cur.sum == last.sum {
				if cur.ok {
					last = cur
				}
				continue
			}
			last = cur
			_ = r.reload() // logs what it did or refused
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
