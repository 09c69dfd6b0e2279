package rpcconn

import (
	"context"
	"github.com/gopmcp/pmcp/jsonrpc"
	"sync"
	"sync/atomic"

	"github.com/go-json-experiment/json/jsontext"
)

// Pending tracks the requests this side has sent and routes the peer's
// responses to the goroutines waiting for them. It knows nothing about
// transports: a stream [Conn] uses one, and an HTTP session can use one to
// match responses that arrive on other HTTP requests.
//
// The usual sequence is:
//
//	id, ch := p.Add()
//	if err := write(&Request{ID: id, Method: m, Params: params}); err != nil {
//		p.Forget(id)
//		return nil, err
//	}
//	return p.Await(ctx, id, ch)
//
// and, wherever responses are read, p.Resolve(resp).
//
// A Pending must be created with [NewPending]. All methods are safe for
// concurrent use.
type Pending struct {
	next    atomic.Int64
	dropped atomic.Uint64

	mu      sync.Mutex
	waiters map[jsonrpc.ID]chan *jsonrpc.Response
	err     error // set once by CloseAll
}

// NewPending returns an empty Pending whose first id is 1.
func NewPending() *Pending {
	return &Pending{waiters: make(map[jsonrpc.ID]chan *jsonrpc.Response)}
}

// Add allocates a fresh integer id (1, 2, 3, ...) and registers a waiter for
// it. The returned channel is buffered and receives exactly one value: the
// peer's response, or nothing before being closed when [Pending.CloseAll]
// fails the waiter. A receive that yields ok == false therefore means the
// connection is gone and [Pending.Err] tells why. After CloseAll, Add returns
// a channel that is already closed.
func (p *Pending) Add() (jsonrpc.ID, chan *jsonrpc.Response) {
	id := jsonrpc.Int64ID(p.next.Add(1))
	ch := waiterPool.Get().(chan *jsonrpc.Response)
	p.mu.Lock()
	if p.err != nil {
		p.mu.Unlock()
		close(ch)
		return id, ch
	}
	p.waiters[id] = ch
	p.mu.Unlock()
	return id, ch
}

// waiterPool recycles waiter channels: await returns a channel once it
// received the one value sent on it (nothing can send again: Resolve
// removed the waiter under the lock before sending) or once it forgot a
// waiter nobody had taken, so a call makes no channel (two allocations).
// Closed channels are never returned.
var waiterPool = sync.Pool{New: func() any { return make(chan *jsonrpc.Response, 1) }}

// Resolve delivers r to the waiter registered for r.ID and reports whether
// there was one. A response whose id is unknown, already resolved or
// forgotten is dropped, counted in [Pending.Dropped], and Resolve returns
// false. Resolve never blocks.
func (p *Pending) Resolve(r *jsonrpc.Response) bool {
	if r == nil {
		return false
	}
	p.mu.Lock()
	ch, ok := p.waiters[r.ID]
	if ok {
		delete(p.waiters, r.ID)
	}
	p.mu.Unlock()
	if !ok {
		p.dropped.Add(1)
		return false
	}
	// The entry was removed under the lock, so this is the channel's only
	// send and CloseAll will not close it; the buffer makes it non-blocking.
	ch <- r
	return true
}

// Forget unregisters the waiter for id, typically because its caller gave up
// (timeout or cancellation) or the request could not be written. It reports
// whether the waiter was still registered; false means a response (or the
// CloseAll failure) was already delivered to its channel, or the id was never
// registered. A response that arrives for a forgotten id is dropped.
func (p *Pending) Forget(id jsonrpc.ID) bool {
	p.mu.Lock()
	_, ok := p.waiters[id]
	if ok {
		delete(p.waiters, id)
	}
	p.mu.Unlock()
	return ok
}

// CloseAll fails every registered waiter by closing its channel, and makes
// every later Add return a closed channel. err becomes the value of
// [Pending.Err] and what [Pending.Await] returns; nil means [jsonrpc.ErrClosed].
// Only the first call's error is kept; later calls are no-ops apart from
// failing waiters registered since, of which there are none.
func (p *Pending) CloseAll(err error) {
	if err == nil {
		err = jsonrpc.ErrClosed
	}
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	waiters := p.waiters
	p.waiters = make(map[jsonrpc.ID]chan *jsonrpc.Response)
	p.mu.Unlock()
	for _, ch := range waiters {
		close(ch)
	}
}

// Err returns the error given to CloseAll, or nil while the Pending is open.
func (p *Pending) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Len returns the number of waiters still registered.
func (p *Pending) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.waiters)
}

// Dropped returns how many responses Resolve could not deliver because
// their id was unknown, already resolved or forgotten.
func (p *Pending) Dropped() uint64 { return p.dropped.Load() }

// Await waits on ch, as returned by Add for id, and returns the response's
// raw result, or its *[jsonrpc.Error] when the peer answered with an error, or
// [Pending.Err] when the waiter was failed by CloseAll.
//
// When ctx is done first, Await forgets id and returns ctx.Err(); the
// request is then abandoned and the caller may tell the peer so. If the
// response won the race (it was delivered before Forget), Await returns it
// instead, so a nil-error result is never lost. Await must be called at most
// once per Add, and id must not have been forgotten by anyone else.
// After Await, ch belongs to the Pending again: do not use it.
func (p *Pending) Await(ctx context.Context, id jsonrpc.ID, ch chan *jsonrpc.Response) (jsontext.Value, error) {
	v, err, _ := p.await(ctx, id, ch)
	return v, err
}

// await is Await that also reports whether the request was abandoned: ctx
// ended before any response, and the waiter was forgotten.
func (p *Pending) await(ctx context.Context, id jsonrpc.ID, ch chan *jsonrpc.Response) (_ jsontext.Value, _ error, abandoned bool) {
	select {
	case r, ok := <-ch:
		return p.received(ch, r, ok)
	case <-ctx.Done():
		if p.Forget(id) {
			waiterPool.Put(ch) // nobody took it: nothing will be sent
			return nil, ctx.Err(), true
		}
		// Resolve or CloseAll removed the waiter under the lock and is
		// about to send on or close ch (or already has).
		r, ok := <-ch
		return p.received(ch, r, ok)
	}
}

// received is the outcome of the one receive on ch, which goes back to
// the pool unless CloseAll closed it.
func (p *Pending) received(ch chan *jsonrpc.Response, r *jsonrpc.Response, ok bool) (jsontext.Value, error, bool) {
	if ok {
		waiterPool.Put(ch)
	}
	v, err := p.outcome(r, ok)
	return v, err, false
}

func (p *Pending) outcome(r *jsonrpc.Response, ok bool) (jsontext.Value, error) {
	if !ok {
		return nil, p.Err()
	}
	if r.Error != nil {
		return nil, r.Error
	}
	return r.Result, nil
}
