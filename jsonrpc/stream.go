package jsonrpc

import (
	"context"
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
