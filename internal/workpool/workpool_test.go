package workpool

import (
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitIdle waits until n goroutines of p wait for work.
func waitIdle[T any](t *testing.T, p *Pool[T], n int32) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for p.Idle() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d idle, want %d", p.Idle(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// Jobs one after another run on one goroutine; Close ends it.
func TestPoolReusesGoroutines(t *testing.T) {
	var wg sync.WaitGroup
	p := New(func(f func()) { f(); wg.Done() }, Options{Keep: 1, MaxIdle: 1, Linger: time.Hour})
	for range 100 {
		wg.Add(1)
		p.Go(func() {})
		wg.Wait()
		waitIdle(t, p, 1) // idle before the next job, or the next starts a goroutine
	}
	if got := p.Started(); got != 1 {
		t.Fatalf("%d goroutines started for 100 jobs in a row, want 1", got)
	}
	p.Close()
	if p.Idle() != 0 {
		t.Fatalf("%d idle after Close", p.Idle())
	}
}

// A burst runs at once on as many goroutines; afterwards no more than
// MaxIdle stay, and those above Keep leave after Linger.
func TestPoolBoundsIdle(t *testing.T) {
	const burst = 20
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(burst)
	p := New(func(int) { started.Done(); <-release }, Options{Keep: 2, MaxIdle: 8, Linger: 50 * time.Millisecond})
	defer p.Close()
	for i := range burst {
		p.Go(i)
	}
	started.Wait() // all 20 run at once: none waited for another
	if got := p.Started(); got != burst {
		t.Fatalf("%d goroutines for a burst of %d", got, burst)
	}
	close(release)
	// 8 at most stay; the 6 above Keep linger, then leave.
	deadline := time.Now().Add(5 * time.Second)
	for n := p.Idle(); n != 2; n = p.Idle() {
		if n > 8 {
			t.Fatalf("%d idle, MaxIdle 8", n)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d idle, want 2 after Linger", n)
		}
		time.Sleep(time.Millisecond)
	}
}
