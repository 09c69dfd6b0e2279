package rpcconn

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// burst serves n requests that all wait for each other, so that n workers
// run at once, and reads the n responses.
func burst(t *testing.T, d driver, arrived *sync.WaitGroup, gate *atomic.Pointer[chan struct{}], n int) {
	t.Helper()
	release := make(chan struct{})
	gate.Store(&release)
	arrived.Add(n)
	for i := range n {
		d.send(&jsonrpc.Request{ID: jsonrpc.Int64ID(int64(i + 1)), Method: "m"})
	}
	arrived.Wait()
	close(release)
	for range n {
		d.recvResponse()
	}
}

// waitIdle waits until the Conn has want idle workers and fails if it
// settles elsewhere.
func waitIdle(t *testing.T, c *Conn, want int32) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for c.workers.Idle() != want {
		if time.Now().After(deadline) {
			t.Fatalf("%d idle workers, want %d", c.workers.Idle(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitParked waits until n worker goroutines are blocked waiting for work.
func waitParked(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		buf := make([]byte, 4<<20)
		buf = buf[:runtime.Stack(buf, true)]
		parked := 0
		for _, g := range strings.Split(string(buf), "\n\n") {
			header, _, _ := strings.Cut(g, "\n")
			if strings.Contains(header, "[select") && strings.Contains(g, "workpool.(*Pool[") {
				parked++
			}
		}
		if parked >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d workers parked, want %d", parked, n)
		}
		runtime.Gosched()
	}
}

// After a burst of as many requests as the Conn serves at once, its workers
// stay for the next burst (a pipelined client at full depth then pays for
// no new goroutines and no stack growth per request), and the ones above
// maxIdleWorkers leave once they have been idle for workerLinger.
func TestConnKeepsWorkersForTheNextBurst(t *testing.T) {
	var arrived sync.WaitGroup
	var gate atomic.Pointer[chan struct{}]
	h := HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		release := *gate.Load() // the burst's, stored before its requests were sent
		arrived.Done()
		<-release
		return "ok", nil
	})
	a, b := newPipe(DefaultMaxConcurrent)
	c := NewConn(a, h, ConnOptions{})
	c.newWorkers(200 * time.Millisecond)
	runConn(t, context.Background(), c)
	d := driver{t: t, pipeEnd: b}

	burst(t, d, &arrived, &gate, DefaultMaxConcurrent)
	waitIdle(t, c, DefaultMaxConcurrent)
	// A worker counts itself idle just before it waits for work: wait
	// until every one is parked, so none of the next burst misses them.
	waitParked(t, DefaultMaxConcurrent)
	burst(t, d, &arrived, &gate, DefaultMaxConcurrent)
	if got := c.workers.Started(); got != DefaultMaxConcurrent {
		t.Fatalf("%d workers started for two bursts of %d, want %d", got, DefaultMaxConcurrent, DefaultMaxConcurrent)
	}
	waitIdle(t, c, maxIdleWorkers) // the extra ones linger, then leave
}
