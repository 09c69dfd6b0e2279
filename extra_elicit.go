package pmcp

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// URLElicitationRequiredError ends a request because the user must first
// finish one or more URL-mode elicitations out of band (sign in to a third
// party, approve a payment, ...). Return it from a tools/call, prompts/get
// or resources/read handler; the dispatcher turns it into the era's wire
// form:
//
//   - 2025-11-25: JSON-RPC error -32042 (URLElicitationRequiredError) with
//     data.elicitations. The client runs each flow and retries the request,
//     typically once notifications/elicitation/complete arrives (see
//     RequestHandlerExtra.NotifyElicitationComplete).
//   - 2026-07-28: -32042 is reserved there and must not be emitted, and the
//     protocol's one way to ask the client for input is an input_required
//     result. The elicitations become its inputRequests, keyed by their
//     ElicitationID (a member 2026-07-28 no longer has, so it is not sent).
//     The client asks the user, opens the URLs and retries with the
//     answers: on that retry InputResponses().Elicit(id) holds the user's
//     answer, and the handler decides whether the out-of-band step is done
//     (an "accept" only means consent to open the URL). Returning the error
//     again asks again, up to MaxInputRounds.
//
// Mapping to input_required rather than to an error keeps one handler
// working in both eras: an error would end a modern call with nothing the
// client can act on, whereas the input round carries the URLs and brings
// the request back, bound to its requestState, when the user is done.
//
// In both eras a client that did not declare elicitation.url gets -32021
// (MissingCapabilityError) instead. Each elicitation must be URL mode (Mode
// "url" or empty), with a Message, a URL and an ElicitationID unique within
// the error and not starting with the SDK's reserved "pmcp-" prefix; a
// malformed one fails the request with -32603 (it is a server bug).
type URLElicitationRequiredError struct {
	Elicitations []*ElicitParams
}

func (e *URLElicitationRequiredError) Error() string {
	return "pmcp: the user must complete " + strconv.Itoa(len(e.Elicitations)) + " URL elicitation(s) first"
}

// ErrLegacyOnly is returned by features that exist only in the legacy
// (2025-11-25) protocol when they are used in a modern-era request.
var ErrLegacyOnly = errors.New("pmcp: not part of the 2026-07-28 protocol (legacy era only)")

// reservedKeyPrefix starts the inputRequests keys the SDK mints itself.
const reservedKeyPrefix = "pmcp-"

// eraForm converts e for a request of era from a client with caps: a
// *MissingCapabilityError, an *inputRequiredError (modern) or the -32042
// *jsonrpc.Error (legacy); -32603 when e is malformed. withInput and
// protocolError (errors_wire.go) call it.
func (e *URLElicitationRequiredError) eraForm(era Era, caps *ClientCapabilities) error {
	if len(e.Elicitations) == 0 {
		return urlElicitationBug("no elicitations")
	}
	list := make([]*ElicitParams, len(e.Elicitations))
	seen := make(map[string]bool, len(e.Elicitations))
	for i, el := range e.Elicitations {
		switch {
		case el == nil:
			return urlElicitationBug("elicitation %d is nil", i)
		case el.Mode != "" && el.Mode != "url":
			return urlElicitationBug("elicitation %d has mode %q, want url", i, el.Mode)
		case el.URL == "" || el.Message == "" || el.ElicitationID == "":
			return urlElicitationBug("elicitation %d needs a URL, a Message and an ElicitationID", i)
		case strings.HasPrefix(el.ElicitationID, reservedKeyPrefix):
			return urlElicitationBug("elicitation id %q uses the reserved prefix %q", el.ElicitationID, reservedKeyPrefix)
		case seen[el.ElicitationID]:
			return urlElicitationBug("elicitation id %q is repeated", el.ElicitationID)
		}
		seen[el.ElicitationID] = true
		cp := *el
		cp.Mode, cp.RequestedSchema = "url", nil
		if err := checkInputCapability(caps, &InputRequest{Method: MethodElicitationCreate, Params: &cp}); err != nil {
			return err
		}
		list[i] = &cp
	}
	if era == EraModern {
		reqs := make(map[string]*InputRequest, len(list))
		for _, el := range list {
			reqs[el.ElicitationID] = modernInput(&InputRequest{Method: MethodElicitationCreate, Params: el})
		}
		return &inputRequiredError{Requests: reqs}
	}
	data, err := Marshal(&struct {
		Elicitations []*ElicitParams `json:"elicitations"`
	}{list})
	if err != nil {
		return urlElicitationBug("%v", err)
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeURLElicitationRequired, Message: "URL elicitation required", Data: data}
}

func urlElicitationBug(format string, args ...any) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "invalid URLElicitationRequiredError: " + fmt.Sprintf(format, args...)}
}

// NotifyElicitationComplete tells the client that the out-of-band step of
// the URL-mode elicitation elicitationID is finished
// (notifications/elicitation/complete, 2025-11-25), so that it may retry
// the request it was refused with URLElicitationRequiredError, or stop
// waiting.
//
// The method value (extra.NotifyElicitationComplete) may be kept and called
// after the handler returned, for example from the HTTP handler of an OAuth
// callback, for as long as the legacy session lives. While the request
// runs the notification goes on the request's back-channel; afterwards on
// the session's: the connection on stdio, the standalone GET stream on
// Streamable HTTP (without one it fails with ErrNoPeer).
//
// Nothing is sent, and the error says why, when elicitationID is empty,
// when the client did not declare elicitation.url (*MissingCapabilityError)
// and in the modern era (ErrLegacyOnly): 2026-07-28 has no such
// notification; there the client retries with its requestState and the
// handler judges on that retry whether the step is done.
func (e *RequestHandlerExtra) NotifyElicitationComplete(ctx context.Context, elicitationID string) error {
	if e.Era() == EraModern {
		return fmt.Errorf("%w: notifications/elicitation/complete", ErrLegacyOnly)
	}
	if elicitationID == "" {
		return errors.New("pmcp: notifications/elicitation/complete needs an elicitation id")
	}
	if caps := e.ClientCapabilities(); caps == nil || !caps.Elicitation.SupportsURL() {
		return missingCap("elicitation", "url")
	}
	send := e.notify
	if send == nil || e.ctx == nil || e.ctx.Err() != nil {
		send = nil
		if e.session != nil {
			send = e.session.notify
		}
	}
	if send == nil {
		return ErrNoPeer
	}
	return send(ctx, NotificationElicitationComplete, &ElicitationCompleteParams{ElicitationID: elicitationID})
}
