package pmcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"runtime/debug"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/internal/rpcconn"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// ClientHandler serves one request as the client's middleware chain sees
// it: an outgoing request (the result is the server's raw result) or an
// incoming one the server asked for (sampling, elicitation, roots; the
// result is the client's raw answer).
type ClientHandler func(ctx context.Context, req *ClientRequest) (jsontext.Value, error)

// ClientMiddleware wraps every request a ClientSession sends (connection
// negotiation, calls, lists, retries of input rounds, Listen) and every
// server request for input it answers: legacy server-to-client requests
// and the entries of modern input_required results alike. It may read and
// change the outgoing params (SetMeta injects W3C trace context, for
// example), add HTTP headers (Header), end the request without calling
// next, and see the outcome. The first middleware is the outermost.
type ClientMiddleware func(next ClientHandler) ClientHandler

// ClientRequest is a request as client middleware sees it.
type ClientRequest struct {
	// Method is the JSON-RPC method.
	Method string
	// Name is the tool or prompt name, or the resource URI, of an outgoing
	// tools/call, prompts/get, resources/read, resources/subscribe or
	// resources/unsubscribe; "" otherwise.
	Name string
	// Incoming is true for a request the server sent (sampling/createMessage,
	// elicitation/create, roots/list), false for one the client sends.
	Incoming bool
	// ID is the JSON-RPC id. For an outgoing request the connection assigns
	// it when the request is written: it is set once next has sent it (read
	// it after next returns). For an incoming legacy request it is the
	// server's id; an entry of a modern input_required result has none.
	ID jsonrpc.ID
	// Params is the raw params object (nil when absent). For an outgoing
	// request a middleware may replace it (see SetMeta); changing an
	// incoming request's params changes what the client's handler gets.
	Params jsontext.Value
	// Header holds extra HTTP headers for the POST that carries an
	// outgoing request over Streamable HTTP (W3C traceparent, for example).
	// Headers the transport manages itself (Content-Type, Accept,
	// Mcp-Session-Id, MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Param-*)
	// are not overridden. Ignored on other transports and for incoming
	// requests. Nil until a middleware sets it.
	Header http.Header
	// Session is the session the request belongs to. Its Era and
	// ProtocolVersion are EraUnknown and "" while the era is negotiated.
	Session *ClientSession

	// own is Params as the client encoded them, nil for params of other
	// origin; slot is the request's idSlot (clientTerminal).
	own  *ownParams
	slot idSlot
}

// Meta returns the raw value of the _meta member key of Params.
func (r *ClientRequest) Meta(key string) (jsontext.Value, bool) {
	var p struct {
		Meta map[string]jsontext.Value `json:"_meta"`
	}
	if len(r.Params) == 0 || json.Unmarshal(r.Params, &p) != nil {
		return nil, false
	}
	v, ok := p.Meta[key]
	return v, ok
}

// SetMeta sets the member key of the params' _meta to value (marshaled),
// creating params and _meta as needed, and replaces Params with the
// result. Keys the client manages (io.modelcontextprotocol/* and
// progressToken) may be changed too: do so only knowingly.
func (r *ClientRequest) SetMeta(key string, value any) error {
	v, err := Marshal(value)
	if err != nil {
		return fmt.Errorf("pmcp: SetMeta %q: %w", key, err)
	}
	params := map[string]jsontext.Value{}
	if len(r.Params) > 0 && r.Params.Kind() != 'n' {
		if err := json.Unmarshal(r.Params, &params); err != nil {
			return fmt.Errorf("pmcp: SetMeta: params are not an object: %w", err)
		}
	}
	meta := map[string]jsontext.Value{}
	if m, ok := params["_meta"]; ok && m.Kind() != 'n' {
		if err := json.Unmarshal(m, &meta); err != nil {
			return fmt.Errorf("pmcp: SetMeta: _meta is not an object: %w", err)
		}
	}
	meta[key] = v
	mb, err := json.Marshal(meta, json.Deterministic(true))
	if err != nil {
		return err
	}
	params["_meta"] = mb
	pb, err := json.Marshal(params, json.Deterministic(true))
	if err != nil {
		return err
	}
	r.Params = pb
	return nil
}

// buildChain composes the client middleware once, at NewClient.
func (c *Client) buildChain() {
	if len(c.opts.Middleware) == 0 {
		return
	}
	mws := make([]func(ClientHandler) ClientHandler, len(c.opts.Middleware))
	for i, m := range c.opts.Middleware {
		mws[i] = m
	}
	c.chain = chainOf(mws, clientTerminal)
}

// clientTerminal sends an outgoing request, or answers an incoming one
// through the client's handlers.
func clientTerminal(ctx context.Context, r *ClientRequest) (jsontext.Value, error) {
	s := r.Session
	if r.Incoming {
		res, err := s.serveInput(ctx, r.Method, r.Params)
		if err != nil {
			return nil, err
		}
		if raw, ok := res.(jsontext.Value); ok {
			return raw, nil
		}
		b, err := Marshal(res)
		return jsontext.Value(b), err
	}
	if len(r.Header) > 0 {
		ctx = context.WithValue(ctx, outgoingHeaderKey{}, r.Header)
	}
	// Learn the id the connection gives the request (chaining a slot the
	// caller set, as Listen does); the slot also shows the transport the
	// request (ownParamsOf).
	prev, _ := ctx.Value(idSlotKey{}).(*idSlot)
	r.slot = idSlot{req: r, prev: prev}
	ctx = context.WithValue(ctx, idSlotKey{}, &r.slot)
	var params any
	switch {
	case r.own != nil && sameBytes(r.Params, r.own.raw):
		params = rpcconn.Encoded(r.Params) // as the client encoded them
	case len(r.Params) > 0:
		params = r.Params
	}
	return s.conn.Call(ctx, r.Method, params)
}

// outgoingHeaderKey carries ClientRequest.Header to the HTTP transport.
type outgoingHeaderKey struct{}

// outgoingHeader returns the middleware's extra headers of ctx's request.
func outgoingHeader(ctx context.Context) http.Header {
	h, _ := ctx.Value(outgoingHeaderKey{}).(http.Header)
	return h
}

// send sends an outgoing request through the client middleware.
func (s *ClientSession) send(ctx context.Context, method string, params any) (jsontext.Value, error) {
	chain := s.c.chain
	if chain == nil {
		return s.conn.Call(ctx, method, sendParams(params))
	}
	if op, ok := params.(*ownParams); ok {
		return s.runClientChain(ctx, chain, &ClientRequest{Method: method, Name: op.name, Params: op.raw, Session: s, own: op})
	}
	raw, err := marshalParams(method, params)
	if err != nil {
		return nil, err
	}
	r := &ClientRequest{Method: method, Params: raw, Session: s}
	r.Name = outgoingName(method, params, raw)
	return s.runClientChain(ctx, chain, r)
}

// outgoingName is targetName of an outgoing request whose params raw were
// marshaled from params: read from the typed params when they are the
// method's own (the same string: Marshal refuses invalid UTF-8, and the
// scan decodes what it wrote), which spares every call through a client
// middleware a second pass over its params; else scanned from raw.
func outgoingName(method string, params any, raw jsontext.Value) string {
	row := methodOf(method)
	if row == nil || !row.target.inName() {
		return ""
	}
	switch p := params.(type) {
	case *CallToolParams:
		if row.target == paramName {
			return p.Name
		}
	case *GetPromptParams:
		if row.target == paramName {
			return p.Name
		}
	case *ReadResourceParams:
		if row.target == paramURI {
			return p.URI
		}
	}
	return rowTargetName(row, &jsonrpc.Request{Method: method, Params: raw}, nil)
}

// input answers a server's request for input through the client
// middleware.
func (s *ClientSession) input(ctx context.Context, id jsonrpc.ID, method string, params jsontext.Value) (any, error) {
	chain := s.c.chain
	if chain == nil {
		return s.serveInput(ctx, method, params)
	}
	raw, err := s.runClientChain(ctx, chain, &ClientRequest{Method: method, ID: id, Params: params, Incoming: true, Session: s})
	if err != nil {
		return nil, err
	}
	return raw, nil
}

// runClientChain runs the chain, containing a middleware panic.
func (s *ClientSession) runClientChain(ctx context.Context, chain ClientHandler, r *ClientRequest) (raw jsontext.Value, err error) {
	defer func() {
		if v := recover(); v != nil {
			s.c.log.Error("pmcp: client middleware panicked", "method", r.Method, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			raw, err = nil, fmt.Errorf("pmcp: %s: client middleware panicked", r.Method)
		}
	}()
	raw, err = chain(ctx, r)
	if err == nil && raw == nil {
		return nil, errors.New("pmcp: client middleware returned no result")
	}
	return raw, err
}

// Transport describes the session's connection: TransportHTTP with the
// endpoint's host:port as RemoteAddr (OpenTelemetry's server.address and
// server.port), or the stream's name ("stdio" for a command or stdio
// transport that names itself, "memory", else "stream").
func (s *ClientSession) Transport() TransportInfo { return s.transport }

func clientTransport(st any, h *httpTransport) TransportInfo {
	if h == nil {
		return streamTransport(st)
	}
	ti := TransportInfo{Name: TransportHTTP, Network: "tcp", Protocol: "http"}
	if u, err := url.Parse(h.endpoint); err == nil {
		ti.RemoteAddr = u.Host
	}
	return ti
}
