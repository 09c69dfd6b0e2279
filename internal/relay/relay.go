// Package relay carries, in the context of a client call, what a
// forwarder (package proxy) promises the root package's client about the
// result it asks for, so that the client may leave out of its decoding
// what the forwarder drops anyway. It is unexported API: only pmcp's own
// packages can import it.
package relay

import "context"

type dropsServerInfoKey struct{}

// DropsServerInfo returns ctx promising that the caller deletes the
// io.modelcontextprotocol/serverInfo member of the _meta of the
// tools/call result it receives (package proxy's resultMeta): the client
// may then not decode it at all.
func DropsServerInfo(ctx context.Context) context.Context {
	return context.WithValue(ctx, dropsServerInfoKey{}, true)
}

// ServerInfoDropped reports whether ctx carries that promise.
func ServerInfoDropped(ctx context.Context) bool {
	v, _ := ctx.Value(dropsServerInfoKey{}).(bool)
	return v
}
