// Package jsonrpc implements the JSON-RPC 2.0 layer of MCP: the message
// types (Request, Response, Error, ID), a strict single-pass codec (Decode,
// AppendMessage, Encode) and the Stream interface that transports
// implement.
//
// Decode is deliberately strict, because the bytes come from an untrusted
// peer: it enforces size and nesting limits before parsing, rejects
// duplicate member names at any depth, matches member names
// case-sensitively, requires "jsonrpc":"2.0", accepts only string or
// integer ids, and refuses batches (removed from MCP). Every failure is a
// *DecodeError carrying the JSON-RPC error code to answer with and, when
// it could be read, the id to echo. Unknown top-level members are ignored
// for forward compatibility.
//
// The encoder writes compact, single-line JSON, so its output can be
// framed by newlines (see transport/stdio).
//
// This package is what a transport author needs. A transport implements
// Stream and hands it to pmcp's Server.Serve or Client.Connect; the engine
// that serves a Stream (concurrency, cancellation, matching responses to
// calls) is internal to the pmcp module.
package jsonrpc
