package pmcp

import (
	"context"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/internal/rpcconn"
)

// The params of the commonest request, tools/call, encoded without
// reflection. Encoding them with Marshal validated and copied again the
// raw members the client had just encoded itself (the arguments, the
// _meta), and the connection validated the whole once more; a client
// middleware's ClientRequest.Name was read back by a scan of the params.
// ownParams carry the encoded params with their target name instead; the
// connection sends them as they are (rpcconn.Encoded), unless a
// middleware replaced them (clientTerminal), and then checks them as
// before.

// ownParams are params the client encoded itself: valid JSON by
// construction, in the form Marshal writes, with what they were encoded
// of that the transport needs (ownHeaders): the name of their target, the
// arguments, and the protocol version their _meta carries ("" for none).
type ownParams struct {
	raw     jsontext.Value
	name    string
	args    jsontext.Value
	version string
}

// ownParamsOf returns the own params of the request ctx is the call of,
// when the client encoded params as they are (the client middleware left
// them), or nil.
func ownParamsOf(ctx context.Context, params jsontext.Value) *ownParams {
	slot, _ := ctx.Value(idSlotKey{}).(*idSlot)
	if slot == nil || slot.req == nil {
		return nil
	}
	if op := slot.req.own; op != nil && sameBytes(op.raw, params) {
		return op
	}
	return nil
}

// encodeCallTool returns the params of a tools/call as Marshal would
// encode the CallToolParams with these members, when every raw member is
// what Marshal wrote (the client's own encoding of the arguments, _meta
// and input responses: Marshal's output is the form it writes again).
// ok is false when the name cannot be encoded as it is (invalid UTF-8):
// Marshal then reports it. version is the protocol version meta carries
// (metaVersion's reading of it), "" for none.
func encodeCallTool(name string, args, responses jsontext.Value, state *string, meta jsontext.Value, version string) (*ownParams, bool) {
	n := len(name) + len(args) + len(responses) + len(meta) + 64
	if state != nil {
		n += len(*state)
	}
	b := make([]byte, 0, n)
	b = append(b, `{"name":`...)
	b, err := jsontext.AppendQuote(b, name)
	if err != nil {
		return nil, false
	}
	b = appendOmitEmpty(b, `,"arguments":`, args)
	b = appendOmitEmpty(b, `,"inputResponses":`, responses)
	if state != nil && *state != "" {
		b = append(b, `,"requestState":`...)
		if b, err = jsontext.AppendQuote(b, *state); err != nil {
			return nil, false
		}
	}
	b = appendOmitEmpty(b, `,"_meta":`, meta)
	return &ownParams{raw: append(b, '}'), name: name, args: args, version: version}, true
}

// appendOmitEmpty appends the member key: v, unless omitempty leaves it
// out: v absent, or an empty JSON value (v is in Marshal's compact form).
func appendOmitEmpty(b []byte, key string, v jsontext.Value) []byte {
	switch string(v) {
	case "", "null", "{}", "[]", `""`:
		return b
	}
	return append(append(b, key...), v...)
}

// sendParams is what the connection sends for params: own params as they
// are (the connection does not check them again), anything else as given
// (encoded and checked by the connection).
func sendParams(params any) any {
	if op, ok := params.(*ownParams); ok {
		return rpcconn.Encoded(op.raw)
	}
	return params
}
