package pmcp

import (
	"context"
	"fmt"
	"net/http"
	"runtime/debug"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// MethodHandler serves one incoming request as the middleware chain sees
// it. A nil error sends res; an error is sent as the JSON-RPC error it
// wraps (errors.As finds a *jsonrpc.Error), any other error as -32603.
type MethodHandler func(ctx context.Context, req *Request) (Result, error)

// Middleware wraps the handling of every incoming request, in both eras
// and over every transport (stdio, in-memory, Streamable HTTP). It runs
// after the dispatcher resolved the era and built req.Extra, and before the
// method's handler. It may:
//
//   - read the request (Method, Name, Params, Extra, Transport, Header);
//   - fill req.Extra (Metadata, Extensions, AuthInfo, AuthContext), which
//     the handler then sees;
//   - end the request without calling next, with a result or an error;
//   - look at the outcome of next and add result _meta with
//     req.Extra.SetResultMeta (it reaches every result: typed, verbatim,
//     isError tool results, input_required results).
//
// See ServerOptions.Middleware for the order. A panic in a middleware is
// contained like a handler panic: the request gets -32603 and the server
// keeps serving.
type Middleware func(next MethodHandler) MethodHandler

// Request is an incoming request as middleware sees it. It is valid until
// the request's handler returns; copy what must outlive it.
type Request struct {
	// Method is the JSON-RPC method, for example "tools/call".
	Method string
	// Name is the target of the request: the tool name of tools/call, the
	// prompt name of prompts/get, the URI of resources/read,
	// resources/subscribe and resources/unsubscribe; "" for other methods
	// or when the params do not carry one.
	Name string
	// ID is the JSON-RPC id.
	ID jsonrpc.ID
	// Params is the raw params object, _meta included; a request sent
	// without params has "{}" here, never nil. A middleware may replace
	// it before calling next; the method's params are then decoded from
	// the new value. The era, the _meta-derived
	// members of Extra and Name were resolved before the chain ran and do
	// not change. Do not modify the bytes in place.
	Params jsontext.Value
	// Extra is the handler context the method's handler receives. It
	// describes the request too: Extra.Era() and Extra.ProtocolVersion()
	// (the negotiated version of a legacy session, empty during
	// initialize, or the modern per-request one), Extra.SessionID (the
	// legacy Streamable HTTP session id, "" otherwise), Extra.RequestMeta
	// (the raw _meta object, nil when absent) and Extra.TraceContext().
	Extra *RequestHandlerExtra
	// Transport describes how the request arrived.
	Transport TransportInfo
	// Header is the HTTP request's header on Streamable HTTP, nil on other
	// transports. Read-only: it is the header the HTTP server parsed
	// (bounded by its MaxHeaderBytes) and must not be modified.
	Header http.Header

	srv  *Server
	jreq *jsonrpc.Request
	env  *requestEnv
	rs   *reqState
	rp   *reqParams
}

// CallToolParams returns the params of a tools/call request as the server
// read them before the chain ran, without decoding them again: what
// Unmarshal(Params, &p) gives, its raw members (Arguments, Task,
// InputResponses, Meta) sub-slices of Params under Params' rules. ok is
// false for another method, for a Request the server did not build, when
// a middleware replaced Params, or when a decode would fail: decode Params
// then, which reports why. A middleware that reads every call's params (a
// proxy) saves a decode with it.
func (r *Request) CallToolParams() (p CallToolParams, ok bool) {
	rp := r.rp
	if r.Method != MethodToolsCall || rp == nil || r.jreq == nil || !rp.ok || !rp.callOK || !sameBytes(r.Params, r.jreq.Params) {
		return CallToolParams{}, false
	}
	return rp.call, true
}

// NameRegistered reports whether Name names something registered on the
// server: the tool of tools/call, the prompt of prompts/get, a resource
// of resources/read, resources/subscribe or resources/unsubscribe (or a
// URI one of its resource templates matches). It is false for an empty
// Name, for other methods, and for a Request the server did not build.
//
// Name is chosen by the peer and may name nothing: middleware that puts
// names where they must stay bounded, such as metric attributes, asks
// this first (package otel does). It costs a map lookup (a template match
// for resources); the tool a Streamable HTTP tools/call names was looked
// up by the transport already and is not looked up again. A name the
// server has not registered is registered when ServerOptions.NameKnown
// says so (package proxy answers for the names its upstreams list).
func (r *Request) NameRegistered() bool {
	s := r.srv
	if s == nil || r.Name == "" {
		return false
	}
	var row *methodRow
	if r.rs != nil && r.rs.row != nil && r.rs.row.method == r.Method {
		row = r.rs.row
	} else if row = methodOf(r.Method); row == nil {
		return false
	}
	switch row.registry {
	case TargetTool:
		if r.rs != nil && r.rs.tool != nil && r.rs.tool.tool.Name == r.Name {
			return true
		}
		if _, ok := s.tools.get(r.Name); ok {
			return true
		}
	case TargetPrompt:
		if _, ok := s.prompts.get(r.Name); ok {
			return true
		}
	case TargetResource:
		if h, _, _, _ := s.lookupResource(r.Name); h != nil {
			return true
		}
	default:
		return false
	}
	return s.opts.NameKnown != nil && s.opts.NameKnown(r.Method, r.Name)
}

// Transport names reported in TransportInfo.Name.
const (
	TransportStdio  = "stdio"
	TransportMemory = "memory"
	TransportStream = "stream" // any other jsonrpc.Stream given to Serve
	TransportHTTP   = "http"
)

// TransportInfo describes the transport a request or notification came
// over, with the values OpenTelemetry's network.* attributes use.
type TransportInfo struct {
	// Name is TransportStdio, TransportMemory, TransportStream or
	// TransportHTTP. A jsonrpc.Stream names itself with a method
	// TransportName() string; the stdio and memory transports do.
	Name string
	// Network is the network.transport value: "pipe" for stdio and other
	// streams, "inproc" for the in-memory transport, "tcp" for HTTP.
	Network string
	// Protocol and ProtocolVersion are network.protocol.name and
	// network.protocol.version: "http" and "1.1" or "2"; empty for
	// streams.
	Protocol, ProtocolVersion string
	// RemoteAddr is the client's address as the HTTP server saw it
	// (host:port, the proxy's when behind one); "" for streams.
	RemoteAddr string
}

// streamTransport describes the stream a Serve call serves.
func streamTransport(st any) TransportInfo {
	ti := TransportInfo{Name: TransportStream, Network: "pipe"}
	if n, ok := st.(interface{ TransportName() string }); ok {
		ti.Name = n.TransportName()
	}
	if ti.Name == TransportMemory {
		ti.Network = "inproc"
	}
	return ti
}

// httpTransportInfo describes an HTTP request's transport.
func httpTransportInfo(r *http.Request) TransportInfo {
	v := "1.1"
	switch {
	case r.ProtoMajor == 2:
		v = "2"
	case r.ProtoMajor == 3:
		v = "3"
	case r.ProtoMajor == 1 && r.ProtoMinor == 0:
		v = "1.0"
	}
	network := "tcp"
	if r.ProtoMajor == 3 {
		network = "quic"
	}
	return TransportInfo{Name: TransportHTTP, Network: network, Protocol: "http", ProtocolVersion: v, RemoteAddr: r.RemoteAddr}
}

// transportName is transportInfo().Name, without building the rest.
func (env *requestEnv) transportName() string {
	switch {
	case env.httpReq != nil:
		return TransportHTTP
	case env.transport != nil:
		return env.transport.Name
	}
	return TransportStream
}

// transport returns how the request of env arrived, and its HTTP header.
func (env *requestEnv) transportInfo() (TransportInfo, http.Header) {
	if env.httpReq != nil {
		return httpTransportInfo(env.httpReq), env.httpReq.Header
	}
	if env.transport != nil {
		return *env.transport, nil
	}
	return TransportInfo{Name: TransportStream, Network: "pipe"}, nil
}

// chainOf composes mws around h, the first one outermost.
func chainOf[H any](mws []func(H) H, h H) H {
	for i := len(mws) - 1; i >= 0; i-- {
		if mws[i] != nil {
			h = mws[i](h)
		}
	}
	return h
}

// buildChains composes the middleware of opts once, at NewServer.
func (s *Server) buildChains() {
	if len(s.opts.Middleware) > 0 {
		mws := make([]func(MethodHandler) MethodHandler, len(s.opts.Middleware))
		for i, m := range s.opts.Middleware {
			mws[i] = m
		}
		s.chain = chainOf(mws, s.terminal)
	}
	if len(s.opts.NotificationMiddleware) > 0 {
		mws := make([]func(NotificationHandler) NotificationHandler, len(s.opts.NotificationMiddleware))
		for i, m := range s.opts.NotificationMiddleware {
			mws[i] = m
		}
		s.nchain = chainOf(mws, func(ctx context.Context, n *Notification) error {
			if n.run != nil {
				n.run(ctx)
			}
			return nil
		})
	}
}

// run serves a request whose era, _meta and extra are resolved: through
// the middleware chain when there is one, straight to the row's serve
// otherwise.
// Result _meta set with SetResultMeta is applied to every result here.
func (s *Server) run(ctx context.Context, req *jsonrpc.Request, env *requestEnv, extra *RequestHandlerExtra, rs *reqState, rp *reqParams) (Result, error) {
	if s.chain == nil {
		return rs.row.serve(s, ctx, req, env, extra, rs, rp)
	}
	r := &rs.mreq
	*r = Request{Method: req.Method, Name: rowTargetName(rs.row, req, rp), ID: req.ID, Params: req.Params, Extra: extra, srv: s, jreq: req, env: env, rs: rs, rp: rp}
	r.Transport, r.Header = env.transportInfo()
	res, err := s.chain(ctx, r)
	// An identity set by a middleware is the request's: it makes modern
	// results private to caches and names the access log's principal.
	env.authInfo, env.authCtx = extra.AuthInfo, extra.AuthContext
	if err != nil {
		return nil, err // the dispatcher maps it (sendError)
	}
	if res == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error: middleware returned no result"}
	}
	return res, nil
}

// terminal is the innermost handler of the chain: the method itself.
func (s *Server) terminal(ctx context.Context, r *Request) (Result, error) {
	req, rp := r.jreq, r.rp
	if !sameBytes(r.Params, req.Params) {
		if len(r.Params) > 0 && r.Params.Kind() != '{' {
			return nil, invalidParams("params must be an object")
		}
		cp := *req
		cp.Params = r.Params
		req = &cp
		rp = new(reqParams)
		rp.scan(req.Params)
	}
	if ctx != r.Extra.ctx {
		// The handler sees the ctx the middleware passed on.
		r.Extra.ctx = ctx
	}
	return r.rs.row.serve(s, ctx, req, r.env, r.Extra, r.rs, rp)
}

func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// targetName returns the tool or prompt name, or the resource URI, of a
// request; "" when it has none. rp is the request's scan, nil when it has
// none yet.
func targetName(req *jsonrpc.Request, rp *reqParams) string {
	return rowTargetName(methodOf(req.Method), req, rp)
}

// rowTargetName is targetName for a request whose row is known.
func rowTargetName(row *methodRow, req *jsonrpc.Request, rp *reqParams) string {
	if row == nil || !row.target.inName() {
		return ""
	}
	if rp == nil {
		rp = new(reqParams)
		rp.scan(req.Params)
	}
	if !rp.ok {
		return ""
	}
	_, name := rp.target(row)
	return name
}

// isToolError reports whether res is a tool result with isError set: a
// tool that failed (OpenTelemetry's error.type "tool_error").
func isToolError(res Result) bool {
	r, ok := res.(*CallToolResult)
	return ok && r != nil && r.IsError
}

// ErrorCode returns the JSON-RPC error code err is sent with, by the
// server's one mapping of errors: -32021 for a *MissingCapabilityError,
// -32603 for an error matching ErrInputRequired (outside a modern multi-round-trip
// request), the code of the *jsonrpc.Error in its chain, else -32603
// (internal error). The code of a *URLElicitationRequiredError depends on
// the request's era and client, which err does not carry: it is -32603
// here, while the dispatcher sends its era's form (-32042 in the legacy
// era). ErrorCode is 0 for nil and for the error a subscriptions/listen
// request ends with when the client closed its stream (no response is
// sent then).
func ErrorCode(err error) int64 {
	if e := wireError(err, EraUnknown, nil); e != nil {
		return e.Code
	}
	return 0
}

// NotificationHandler handles one incoming client notification. Nothing
// is ever sent back; a returned error is only logged (at Debug).
type NotificationHandler func(ctx context.Context, n *Notification) error

// NotificationMiddleware wraps the handling of every incoming client
// notification (notifications/cancelled, notifications/initialized,
// notifications/roots/list_changed, ...) on every transport. Not calling
// next drops the notification: for notifications/cancelled the request
// then keeps running. Notifications are handled on the connection's read
// loop: a middleware must return quickly. Panics are contained and logged.
type NotificationMiddleware func(next NotificationHandler) NotificationHandler

// Notification is an incoming client notification as notification
// middleware sees it.
type Notification struct {
	Method string
	// Params is the raw params object (nil when absent), _meta included.
	Params jsontext.Value
	// SessionID is the legacy Streamable HTTP session id, "" otherwise.
	SessionID string
	// AuthInfo and AuthContext are what the HTTP transport's Authenticate
	// returned, nil otherwise.
	AuthInfo    *AuthInfo
	AuthContext *AuthContext
	Transport   TransportInfo
	// Header is the HTTP request's header (read-only), nil on streams.
	Header http.Header

	run func(ctx context.Context)
}

// notification runs the server's own handling of n (builtin) through the
// notification middleware. Without middleware it calls builtin at once.
func (s *Server) notification(ctx context.Context, n *Notification, builtin func(ctx context.Context)) {
	if s.nchain == nil {
		builtin(ctx)
		return
	}
	n.run = builtin
	defer func() {
		if v := recover(); v != nil {
			s.logger.Error("pmcp: notification middleware panicked", "method", n.Method, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		}
	}()
	if err := s.nchain(ctx, n); err != nil {
		s.logger.DebugContext(ctx, "pmcp: notification middleware failed", "method", n.Method, "error", err)
	}
}
