// Package workpool runs jobs on goroutines that stay for the next job.
//
// A job on a new goroutine pays for the goroutine and for growing its
// 2 KiB stack (each growth copies the stack): several per cent of a
// request's CPU when a request does JSON work. A Pool hands a job to a
// goroutine waiting idle when there is one, and starts one otherwise, so
// there are never more goroutines than jobs in flight plus idle ones.
// Idle goroutines are bounded (Options) and end at Close.
//
// The JSON-RPC engine (internal/rpcconn) serves incoming requests on one,
// the proxy runs its forwarded calls on another.
package workpool

import (
	"sync"
	"sync/atomic"
	"time"
)

// Options bound a Pool's idle goroutines.
type Options struct {
	// Keep idle goroutines wait for work for as long as the pool lives.
	Keep int32
	// MaxIdle idle goroutines at most (at least Keep): one that ends a job
	// with MaxIdle others idle leaves at once; those above Keep leave
	// after Linger without work.
	MaxIdle int32
	Linger  time.Duration
}

// Pool runs serve(v) for every v given to Go.
type Pool[T any] struct {
	serve func(T)
	opts  Options
	// hand is unbuffered: a send succeeds only when a goroutine waits.
	hand    chan T
	stop    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
	idle    atomic.Int32
	started atomic.Int64
}

// New returns a pool that runs serve.
func New[T any](serve func(T), opts Options) *Pool[T] {
	opts.MaxIdle = max(opts.MaxIdle, opts.Keep)
	return &Pool[T]{serve: serve, opts: opts, hand: make(chan T), stop: make(chan struct{})}
}

// Go runs serve(v) on an idle goroutine, or on a new one when none is
// idle. It does not block. It must not be called after Close.
func (p *Pool[T]) Go(v T) {
	select {
	case p.hand <- v:
	default:
		p.wg.Add(1)
		p.started.Add(1)
		go p.loop(v)
	}
}

func (p *Pool[T]) loop(v T) {
	defer p.wg.Done()
	var linger *time.Timer
	defer func() {
		if linger != nil {
			linger.Stop()
		}
	}()
	for {
		p.serve(v)
		n := p.idle.Add(1)
		if n > p.opts.MaxIdle {
			p.idle.Add(-1)
			return
		}
		var expired <-chan time.Time
		if n > p.opts.Keep {
			if linger == nil {
				linger = time.NewTimer(p.opts.Linger)
			} else {
				linger.Reset(p.opts.Linger)
			}
			expired = linger.C
		}
		select {
		case v = <-p.hand:
			p.idle.Add(-1)
		case <-p.stop:
			p.idle.Add(-1)
			return
		case <-expired:
			p.idle.Add(-1)
			return
		}
	}
}

// Close ends the idle goroutines and waits until every goroutine has
// ended (those running a job end after it: stopping the jobs is the
// caller's part). Close is idempotent.
func (p *Pool[T]) Close() {
	p.once.Do(func() { close(p.stop) })
	p.wg.Wait()
}

// Idle is how many goroutines wait for work now.
func (p *Pool[T]) Idle() int32 { return p.idle.Load() }

// Started is how many goroutines the pool has started so far.
func (p *Pool[T]) Started() int64 { return p.started.Load() }
