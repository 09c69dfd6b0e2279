package pmcp

import (
	"errors"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"
)

// InputResponses returns the client's answers to the previous round's
// inputRequests. Nil on a first call, in the legacy era, and when an
// unknown-key or expired requestState made the server re-run the request as
// a first call.
func (e *RequestHandlerExtra) InputResponses() InputResponses {
	if e.mrtr == nil || e.mrtr.responses == nil {
		return nil
	}
	return e.mrtr.responses
}

// MRTRContinuation returns the handler-defined state sealed on the previous
// round, after the server verified the requestState against this request's
// principal, method and params. Server-minted, so trusted. Nil on a first
// call, in the legacy era, and inside a re-run.
func (e *RequestHandlerExtra) MRTRContinuation() jsontext.Value {
	if e.mrtr == nil || !e.mrtr.verified {
		return nil
	}
	return e.mrtr.continuation
}

// MRTRRound returns the round counter of the verified requestState: 0 for
// the round the first continuation was minted in. False on a first call, in
// the legacy era and inside a re-run.
func (e *RequestHandlerExtra) MRTRRound() (uint8, bool) {
	if e.mrtr == nil || !e.mrtr.verified {
		return 0, false
	}
	return e.mrtr.round, true
}

// RequireInput ends this call with an input_required result asking the
// client for reqs (keys are chosen by the handler and unique within the
// request). continuation, if not nil, is marshaled, sealed into the
// requestState and handed back by MRTRContinuation on the retry. Each
// request must be of a kind the client declared (elicitation, sampling,
// roots); otherwise a *MissingCapabilityError is returned instead. Only
// tools/call, prompts/get and resources/read may ask for input, and only in
// the modern era.
func (e *RequestHandlerExtra) RequireInput(reqs map[string]*InputRequest, continuation any) error {
	if e.Era() != EraModern || e.mrtr == nil {
		return errors.New("pmcp: RequireInput is only available to modern-era tools/call, prompts/get and resources/read")
	}
	caps := e.ClientCapabilities()
	out := make(map[string]*InputRequest, len(reqs))
	for k, r := range reqs {
		if r == nil {
			return fmt.Errorf("pmcp: input request %q is nil", k)
		}
		if err := checkInputCapability(caps, r); err != nil {
			return err
		}
		out[k] = modernInput(r)
	}
	var cont jsontext.Value
	if continuation != nil {
		b, err := Marshal(continuation)
		if err != nil {
			return fmt.Errorf("pmcp: marshal continuation: %w", err)
		}
		cont = b
	}
	return &inputRequiredError{Requests: out, Continuation: cont}
}
