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
// same ordered stages: decode (package jsonrpc) → one scan of the params
// → one era decision → the method's row in the method table → the
// middleware chain → the method handler → one mapping of a Go error to a
// JSON-RPC error → result decoration (serverInfo, cache hints, a private
// copy of shared results) → encode → the access log. Absent params are
// replaced by an empty object once, before the middleware.
//
// Over Streamable HTTP, with the file of each step:
//
//  1. StreamableHTTPHandler.ServeHTTP (http.go): Host and Origin checks
//     (http_security.go), Authenticate, then by HTTP method. Every refusal
//     on the way is a named value of the one refusal table, written by its
//     one writer (http_refusals.go).
//  2. servePost (http.go) reads the bounded body (http_body.go), decodes
//     it, scans the params once (reqParams.scanValidated, server_params.go:
//     without validating them again) and
//     decides the era (classify, era.go), stored in the request's state.
//  3. The era's half: legacyPost (http_legacy.go; GET, DELETE and
//     resumption in http_legacy_stream.go) or serveModern (http_modern.go).
//     The method's row (methodOf, method_table.go) says which headers must
//     mirror the params (checkStandardHeaders, http_headers.go) and which
//     scopes the target needs (httpScopeCheck, http_auth.go).
//  4. Server.handle (server_dispatch.go): the row's eras and capability
//     (Server.declares), then handleLegacy or handleModern build the
//     RequestHandlerExtra (extra*.go) and run the middleware chain
//     (Server.run, server_middleware.go), whose last link calls the row's
//     serve function: tools (server_tools.go), prompts, resources,
//     subscriptions, tasks (server_tasks*.go), skills, completion.
//  5. An error becomes its JSON-RPC error once (wireError and sendError,
//     errors_wire.go); a result is finished once (finishResult,
//     server_result.go).
//  6. The response is encoded as JSON or as an event stream (http_sse.go;
//     which one, per request: http_legacy_reply.go, http_modern_stream.go)
//     and logged (Server.logAccess, server_accesslog.go).
//
// Over a stream (stdio, or any io.ReadWriteCloser): Server.Serve
// (server_serve.go) runs the JSON-RPC engine (internal/rpcconn), which
// hands every request to the same Server.handle (step 4 on) and every
// notification to Server.onNotification, the one notification entry of
// both transports.
//
// # Where things are
//
// A file's name says whose code it holds.
//
//   - server*.go: Server — options and defaults (server_options.go), the
//     dispatcher, params scan, middleware, scopes, the registries (tools,
//     prompts, resources, skills, subscriptions), tasks, multi-round-trip
//     input (server_mrtr.go), the legacy back-channel (server_peer.go),
//     notifications and their fan-out (server_notify.go,
//     server_broadcast.go), the access log.
//   - http*.go: StreamableHTTPHandler — one file per era
//     (http_legacy*.go, http_modern*.go), refusals (http_refusals.go),
//     authorization (http_auth.go), body (http_body.go), sessions across
//     replicas (http_sessions_store.go), the event store, SSE writing.
//   - client*.go: Client and ClientSession — options and defaults
//     (client_options.go), the call machinery (client_call.go), the typed
//     MCP calls (client_methods.go), what the client serves
//     (client_handlers.go), the HTTP transport (client_http*.go), tasks.
//   - extra*.go: RequestHandlerExtra, the per-request handler context —
//     metadata, logging, progress, input, tasks, session hooks, printing.
//   - method_table.go: one row per MCP method (eras, capability, target
//     param, scopes, mirrored headers, the server's and the client's
//     handler); era.go: the one era decision; errors_wire.go: the one
//     error mapping; headers_params.go: Mcp-Param-* bindings of both sides.
//   - types_*.go, protocol.go, metadata.go, result_encode.go: the protocol's
//     types, versions and their encoding.
//   - Packages: jsonrpc (the wire), transport/* (stdio, command, memory),
//     tasks and reqstate (task stores, signed request state), oauth (the
//     OAuth protocol both roles share: metadata and discovery, challenges,
//     resource canonicalisation, DPoP; a leaf), auth (the resource
//     server), oauthclient (the OAuth client, through
//     HTTPClientOptions.Authorizer), proxy (the bridge), gateway (per-caller
//     policies, rate limits and audit records as middleware: pmcp gateway),
//     eventstoretest;
//     internal/rpcconn (the engine under stream transports),
//     internal/workpool (the goroutines that serve its requests and the
//     proxy's calls), internal/relay (what the proxy promises the client
//     about the results it forwards), internal/schema (JSON Schema
//     inference and validation), internal/jsonskip (where JSON strings
//     and values end, for the depth pre-scan and for params already
//     validated). Modules of their own: otel,
//     redis, cmd/pmcp, interop, bench.
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
// A refusal is the JSON-RPC error -32600 (see ErrInsufficientScope) naming every scope the
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
