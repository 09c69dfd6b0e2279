// Package memory provides an in-process transport: a connected pair of
// jsonrpc.Streams, for tests and for embedding a client and a server in
// one program.
//
// Messages are encoded on Write and decoded on Read with the same codec
// the real transports use, so the codec's strictness and limits apply and
// the two ends never share mutable state. No goroutines are started.
package memory

import (
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// DefaultCapacity is the default number of messages buffered in each
// direction.
const DefaultCapacity = 64

// ErrClosed is returned by Write once either end of the pipe is closed, and
// by Read on an end that was closed locally. It is net.ErrClosed, so
// errors.Is(err, net.ErrClosed) works the same for every transport.
var ErrClosed = net.ErrClosed

// Options configures a pipe. The zero value is ready to use.
type Options struct {
	// Capacity is the number of messages buffered in each direction before
	// Write blocks. Zero means DefaultCapacity; a negative value makes the
	// pipe unbuffered (each Write waits for a Read).
	Capacity int
	// Limits is passed to jsonrpc.Decode for every message read.
	Limits jsonrpc.Limits
}

// NewPipe returns two connected streams: what is written to a is read from
// b, and vice versa. At most one Options may be given; passing more panics.
//
// Read and Write honour ctx, including while blocked. Closing either end
// closes the pipe: Writes on both ends then return ErrClosed, Read on the
// closed end returns ErrClosed, and Read on the other end returns the
// messages already written to it and then io.EOF.
func NewPipe(opts ...Options) (a, b jsonrpc.Stream) {
	var o Options
	switch len(opts) {
	case 0:
	case 1:
		o = opts[0]
	default:
		panic("memory: NewPipe takes at most one Options")
	}
	n := o.Capacity
	switch {
	case n == 0:
		n = DefaultCapacity
	case n < 0:
		n = 0
	}
	p := &pipe{done: make(chan struct{})}
	ab := make(chan []byte, n)
	ba := make(chan []byte, n)
	a = &end{pipe: p, in: ba, out: ab, limits: o.Limits}
	b = &end{pipe: p, in: ab, out: ba, limits: o.Limits}
	return a, b
}

// pipe is the state shared by both ends.
type pipe struct {
	once sync.Once
	done chan struct{} // closed when either end is closed
}

// end is one side of a pipe.
type end struct {
	*pipe
	in     <-chan []byte
	out    chan<- []byte
	limits jsonrpc.Limits
	closed atomic.Bool // this end was closed
}

// Read returns the next message written by the other end. It returns
// io.EOF once the pipe is closed and the messages written before that have
// been read, ErrClosed if this end was closed, and ctx.Err() if ctx ends
// first. A message that fails to decode is returned as a
// *jsonrpc.DecodeError; the pipe stays usable.
func (e *end) Read(ctx context.Context) (jsonrpc.Message, error) {
	if e.closed.Load() {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case data := <-e.in:
		return jsonrpc.Decode(data, e.limits)
	case <-e.done:
		if e.closed.Load() {
			return nil, ErrClosed
		}
		select { // drain what was written before the close
		case data := <-e.in:
			return jsonrpc.Decode(data, e.limits)
		default:
			return nil, io.EOF
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write encodes m and queues it for the other end, blocking while the
// buffer is full. It returns ErrClosed once either end is closed, and
// ctx.Err() if ctx ends first; an encoding error is returned as is and
// nothing is queued.
func (e *end) Write(ctx context.Context, m jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-e.done:
		return ErrClosed
	default:
	}
	data, err := jsonrpc.Encode(m) // a fresh slice: Decode may alias it
	if err != nil {
		return err
	}
	select {
	case e.out <- data:
		return nil
	case <-e.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close closes this end and the pipe. It is idempotent and always returns
// nil.
func (e *end) Close() error {
	e.closed.Store(true)
	e.once.Do(func() { close(e.done) })
	return nil
}

// TransportName reports "memory" (what pmcp's middleware and access log
// show as the transport).
func (e *end) TransportName() string { return "memory" }
