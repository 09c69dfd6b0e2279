package jsonrpc

import (
	"context"
	"errors"
	"io"
)

// Reader reads one decoded message at a time. Read returns io.EOF when the
// peer has closed its side cleanly. A *DecodeError means one message was bad
// but the stream is still usable: the caller may answer it and read on.
type Reader interface {
	Read(ctx context.Context) (Message, error)
}

// Writer writes one message. Implementations must be safe for concurrent use
// and must write each message atomically (no interleaving).
type Writer interface {
	Write(ctx context.Context, m Message) error
}

// Stream is a bidirectional message stream, the seam between the JSON-RPC
// engine and a transport (stdio, in-memory, ...).
type Stream interface {
	Reader
	Writer
	io.Closer
}

// ErrClosed is returned by calls on a connection that is gone: a call
// after the peer closed its side, after a fatal read error or after the
// connection was closed. Errors that carry a cause wrap it, so test with
// errors.Is. The client of package pmcp returns it (possibly wrapped) when
// its session has ended; a Stream may return it from Write after Close.
var ErrClosed = errors.New("jsonrpc: connection closed")
