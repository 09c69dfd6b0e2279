package pmcp

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/gopmcp/pmcp/internal/rpcconn"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// This file owns the mapping of a Go error to the JSON-RPC error object
// sent for it. The HTTP status of a JSON-RPC code is another fact, owned
// by modernStatus (http_modern.go).

// wireError maps err, returned for a request of era from a client that
// declared caps, to the error object sent for it; it is the only such
// mapping. In order:
//
//   - nil, and errListenEnded (the client closed its subscriptions/listen
//     stream: nothing is sent), map to nil;
//   - the SDK's protocol errors map as protocolError says;
//   - else the *jsonrpc.Error in err's chain is sent as it is, and any
//     other error as -32603 with err's text (rpcconn.ErrorOf).
//
// era is EraUnknown where no request context is known (ErrorCode, the
// stored outcome of a task); see protocolError.
func wireError(err error, era Era, caps *ClientCapabilities) *jsonrpc.Error {
	if err == nil || errors.Is(err, errListenEnded) {
		return nil
	}
	if e := protocolError(err, era, caps); e != nil {
		return e
	}
	return rpcconn.ErrorOf(err)
}

// sendError is what the dispatcher returns for err, the outcome of a
// request's middleware chain and handler: its wire form, for the
// request's era and client (wireError), so that the transports' mapping
// (rpcconn.Resolve) only ever sees a *jsonrpc.Error; or errListenEnded
// itself, which the transports compare by identity (they send nothing).
func sendError(err error, extra *RequestHandlerExtra) error {
	if err == nil {
		return nil
	}
	if e := wireError(err, extra.Era(), extra.ClientCapabilities()); e != nil {
		return e
	}
	return errListenEnded
}

// protocolError maps the errors the SDK defines for handlers, nil for any
// other error:
//
//   - a *URLElicitationRequiredError first takes its era's form
//     (URLElicitationRequiredError.eraForm), and that form is mapped;
//     without an era (EraUnknown) it has none and is no protocol error;
//   - a *MissingCapabilityError is -32021 with data.requiredCapabilities;
//   - a *RateLimitedError is -32029 with data.retryAfterMs;
//   - an *inputRequiredError is -32603: only a modern multi-round-trip
//     request can ask for input, and withInput turns it into an
//     input_required result before it gets here;
//   - the *jsonrpc.Error that eraForm made (-32042, or -32603 for a
//     malformed URLElicitationRequiredError) is returned.
func protocolError(err error, era Era, caps *ClientCapabilities) *jsonrpc.Error {
	if ue := asURLElicitation(err); ue != nil && era != EraUnknown {
		err = ue.eraForm(era, caps)
		if e, ok := err.(*jsonrpc.Error); ok {
			return e
		}
	}
	var mc *MissingCapabilityError
	if errors.As(err, &mc) {
		return mc.rpcError()
	}
	var rl *RateLimitedError
	if errors.As(err, &rl) {
		return rl.rpcError()
	}
	if asInputRequired(err) != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "handler asked for input outside a modern-era multi-round-trip request"}
	}
	return nil
}

// asURLElicitation returns the *URLElicitationRequiredError in err's
// chain, or nil. Like every errors.As target, ue is allocated: call it on
// a non-nil error only (the success path allocates nothing here).
func asURLElicitation(err error) *URLElicitationRequiredError {
	var ue *URLElicitationRequiredError
	if errors.As(err, &ue) {
		return ue
	}
	return nil
}

// asInputRequired returns the *inputRequiredError in err's chain, or nil.
func asInputRequired(err error) *inputRequiredError {
	var ir *inputRequiredError
	if errors.As(err, &ir) {
		return ir
	}
	return nil
}

// RateLimitedError refuses a request because the caller's rate limit is
// spent (package gateway returns it from its middleware). It is sent as
// the JSON-RPC error jsonrpc.CodeRateLimited, "rate limited", whose data
// is {"retryAfterMs": N}; over Streamable HTTP, a 2026-07-28 request
// answered with plain JSON gets status 429 and a Retry-After header too
// (see rateLimitedHeaders).
type RateLimitedError struct {
	// RetryAfter is how long until the call may be admitted.
	RetryAfter time.Duration
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("rate limited: retry after %v", e.RetryAfter)
}

// rpcError is e's wire form; retryAfterMs is rounded up, never below 1.
func (e *RateLimitedError) rpcError() *jsonrpc.Error {
	ms := max(int64(math.Ceil(float64(e.RetryAfter)/float64(time.Millisecond))), 1)
	data, _ := Marshal(rateLimitedData{RetryAfterMs: ms})
	return &jsonrpc.Error{Code: jsonrpc.CodeRateLimited, Message: "rate limited", Data: data}
}

// rateLimitedData is the data of a CodeRateLimited error.
type rateLimitedData struct {
	RetryAfterMs int64 `json:"retryAfterMs"`
}
