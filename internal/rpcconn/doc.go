// Package rpcconn is the JSON-RPC 2.0 engine of pmcp's stream transports:
// [Conn] serves a peer's requests and notifications over a jsonrpc.Stream
// and lets this side call and notify the peer; [Pending] matches the
// responses of calls to their callers and is also used by the legacy HTTP
// sessions. [Outcome] is the one place where a handler's outcome becomes
// the result or error of a JSON-RPC response, for these streams and for
// Streamable HTTP alike.
//
// It is internal because only package pmcp drives it: a user-written
// transport implements jsonrpc.Stream and hands it to pmcp.
package rpcconn
