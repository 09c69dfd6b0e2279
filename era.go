package pmcp

import "net/http"

// This file owns the era decision: which protocol generation a request is
// served under. classify is the only function that derives an Era from
// the facts of a request; the transports and the dispatcher collect the
// facts (eraInput) and store the answer once, in reqState.era, which is
// read from then on (routing, the dispatcher, the access log).
//
// The negotiated version of a legacy session is a different fact (a
// version, not an era): the session holds it (session.protocol).

// eraInput holds the facts of one request that the era decision reads.
type eraInput struct {
	// method is the JSON-RPC method; "" for a GET or DELETE, and for a
	// POSTed JSON-RPC response.
	method string
	// metaVersion and metaCaps: params._meta has
	// io.modelcontextprotocol/protocolVersion, respectively
	// io.modelcontextprotocol/clientCapabilities (null counts as absent).
	metaVersion, metaCaps bool
	// httpMethod is the HTTP request method on Streamable HTTP, "" on
	// stream transports (stdio, in-memory, any jsonrpc.Stream).
	httpMethod string
	// header is the MCP-Protocol-Version header, trimmed, of its first
	// field line when hasHeader (a repeated header is refused later, by
	// the era it is routed to).
	header    string
	hasHeader bool
}

// httpEraInput adds the HTTP facts of r, its method and its
// MCP-Protocol-Version header, to body, the facts of the JSON-RPC request
// it carries (none for a GET, a DELETE or a POSTed response).
func httpEraInput(r *http.Request, body eraInput) eraInput {
	body.httpMethod = r.Method
	body.header, body.hasHeader = headerValue(r.Header, headerProtocolVersion)
	return body
}

// classify is the one era decision. Its cases, in order:
//
//  1. GET and DELETE (Streamable HTTP) have no body: an
//     MCP-Protocol-Version header naming a modern version makes them
//     modern (which refuses them with 405: the 2026-07-28 protocol only
//     POSTs); anything else, no header included, is legacy.
//  2. server/discover, or a protocol version or client capabilities in
//     _meta, make a request modern, over every transport and whatever the
//     header says.
//  3. A POST whose MCP-Protocol-Version header names a modern version is
//     modern even when its body does not say so, except initialize: a
//     legacy client may send initialize with the header of the version it
//     hopes for, and it gets a legacy session (kept as it was; pinned by
//     TestEraDecision). Such a request lacks the modern _meta and is
//     refused with -32602 (handleModern words it as the dispatcher always
//     did: "send initialize to open a legacy session"). A POSTed JSON-RPC
//     response (method "") under a modern header is modern too, and
//     refused: modern clients send none.
//  4. Anything else is legacy.
//
// A request that fails before the dispatcher decided its era (an unknown
// method, params that are not an object, a _meta that does not decode)
// keeps the era its transport decided: modern on a modern Streamable HTTP
// POST, legacy on a legacy session's; on a stream transport nothing
// decided it and the access log classifies the facts the dispatcher got
// to (see accessEra): so an unknown method reads as modern over a
// modern POST and as legacy over stdio (kept; pinned by TestEraDecision).
func classify(in eraInput) Era {
	headerModern := in.hasHeader && EraOf(in.header) == EraModern
	switch in.httpMethod {
	case http.MethodGet, http.MethodDelete: // case 1
		if headerModern {
			return EraModern
		}
		return EraLegacy
	}
	if in.metaVersion || in.metaCaps || in.method == MethodDiscover { // case 2
		return EraModern
	}
	if in.httpMethod == http.MethodPost && headerModern && in.method != MethodInitialize { // case 3
		return EraModern
	}
	return EraLegacy // case 4
}
