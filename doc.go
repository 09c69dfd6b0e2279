// Package pmcp is a Model Context Protocol (MCP) SDK for Go that serves both
// protocol eras from one server: the legacy handshake era (2025-11-25,
// 2025-06-18, 2025-03-26, 2024-11-05) and the modern stateless era
// (2026-07-28). The era is decided per request: a request whose params
// carry the modern _meta is served statelessly, anything else belongs to a
// legacy session opened by initialize.
//
// # Quick start
//
//	srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "demo", Version: "1.0.0"})
//	if err != nil { ... }
//	type AddIn struct {
//		A int `json:"a" jsonschema:"first addend"`
//		B int `json:"b" jsonschema:"second addend"`
//	}
//	type AddOut struct {
//		Sum int `json:"sum"`
//	}
//	err = pmcp.AddTool(srv, &pmcp.Tool{Name: "add", Description: "Adds two integers."},
//		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, in AddIn) (AddOut, error) {
//			_ = extra.Log(pmcp.LevelInfo, "adding")
//			return AddOut{Sum: in.A + in.B}, nil
//		})
//	// Serve over stdio (import "github.com/gopmcp/pmcp/transport/stdio"):
//	err = srv.Serve(ctx, stdio.Stdio(stdio.Options{}))
//
// The input schema of a typed tool is inferred from its Go type once, at
// registration; arguments are validated against it before the handler
// runs, and validation or handler errors come back to the model as a result
// with isError set. The output value becomes structuredContent.
//
// # The handler context
//
// Every handler receives a ctx (the cancellation token) and a
// *RequestHandlerExtra: request and session ids, auth, redacted metadata,
// progress and logging sinks, the protocol context (era, version, client
// identity and capabilities), typed extensions, the raw _meta with its W3C
// trace context, and a Peer for sampling, roots and elicitation.
//
// Peer calls are written once for both eras: in the legacy era they are
// real server-to-client requests; in the modern era the first call ends the
// request with an input_required result and the handler is re-run when the
// client retries with the answers, under a sealed requestState (see
// package reqstate).
//
// # Options
//
// Every configurable type of this module (ServerOptions, ClientOptions,
// StreamableHTTPOptions, HTTPClientOptions, MemoryEventStoreOptions and
// the Options of packages auth, reqstate and the transports) follows one
// convention:
//
//   - An options struct is passed by value, and its zero value is ready to
//     use: it means every default. (memory.NewPipe takes it as an optional
//     trailing argument; omitting it is the zero value.)
//   - A numeric or duration field's zero value is its default, which the
//     field's documentation states; bounds that other packages or
//     operators must agree with are also exported Default* constants
//     (DefaultMaxBodyBytes, DefaultClientCallTimeout, ...). A bound that is
//     off by default says so (transport/command's MaxStderrBytes).
//   - A negative value switches a bound or timeout off where the field
//     says so ("negative disables"); where a field gives it no meaning, a
//     negative value is the same as zero, never an error.
//   - A nil func, interface, logger or client means the documented
//     default behavior, usually "none" or a package-provided one.
//
// The same convention holds for the engine underneath the stream
// transports, which is internal to the module.
//
// # The request pipeline
//
// Every request, over any transport and in either era, goes through the
// same ordered stages: decode (package jsonrpc) → one scan of the params,
// which decides the era and reads _meta → the middleware chain → the
// method handler → result decoration (serverInfo, cache hints, a private
// copy of shared results) → one mapping of the outcome to a JSON-RPC
// response → encode.
//
// # Scopes
//
// Tool.Scopes, Prompt.Scopes, Resource.Scopes and ResourceTemplate.Scopes
// name the OAuth scopes a caller needs for tools/call, prompts/get and
// resources/read of that entry, and for subscribing to the resource
// (resources/subscribe, or a subscriptions/listen filter naming it, which
// needs the scopes of every resource it names): an update tells when a
// resource changes. Unsubscribing needs none: it only stops what the
// caller receives, also once its scopes are gone. The caller's scopes are
// AuthContext.Scopes
// (AuthInfo.Scopes when AuthContext is nil); a caller with neither has
// none, so scoped entries are refused to unauthenticated callers. Scopes
// are compared exactly: to honour a hierarchy (a broad scope implying
// narrow ones), expand the granted scopes where the identity is built.
// A refusal is the JSON-RPC error ScopeErrorCode naming every scope the
// operation needs. Over Streamable HTTP the transport checks after its
// header and session checks and before dispatch (middleware does not see
// the request; the refusal is logged like every authorization refusal)
// and sends that error with 403 and the step-up challenge
// (StreamableHTTPOptions.InsufficientScope; package auth builds it); the
// dispatcher checks again, with the identity middleware may have set.
// Scoped entries stay visible in the list results: a
// client must discover an operation to step up for it, and list results
// are the same for every caller of an era. Use DenyTools or DenyPrompts
// to hide entries instead. completion/complete is not checked.
package pmcp
