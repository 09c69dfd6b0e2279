package pmcp

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"
)

// legacyPeer sends real server-to-client requests on a legacy connection,
// each bounded by ServerOptions.PeerRequestTimeout and by the handler's ctx
// (cancelling it cancels the outstanding request).
type legacyPeer struct {
	s      *Server
	call   func(ctx context.Context, method string, params any) (jsontext.Value, error)
	notify func(ctx context.Context, method string, params any) error
	caps   *ClientCapabilities
}

func (p *legacyPeer) roundTrip(ctx context.Context, method string, params, out any) error {
	if d := p.s.peerTimeout(); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	raw, err := p.call(ctx, method, params)
	if err != nil {
		return fmt.Errorf("pmcp: %s: %w", method, err)
	}
	if err := Unmarshal(raw, out); err != nil {
		return fmt.Errorf("pmcp: %s: malformed result from client: %w", method, err)
	}
	return nil
}

func (p *legacyPeer) Sample(ctx context.Context, params *CreateMessageParams) (*CreateMessageResult, error) {
	if err := checkInputCapability(p.caps, &InputRequest{Method: MethodSamplingCreateMessage, Params: params}); err != nil {
		return nil, err
	}
	var out CreateMessageResult
	if err := p.roundTrip(ctx, MethodSamplingCreateMessage, params, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (p *legacyPeer) ListRoots(ctx context.Context) (*ListRootsResult, error) {
	if err := checkInputCapability(p.caps, &InputRequest{Method: MethodRootsList}); err != nil {
		return nil, err
	}
	var out ListRootsResult
	if err := p.roundTrip(ctx, MethodRootsList, &ListRootsParams{}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (p *legacyPeer) Elicit(ctx context.Context, params *ElicitParams) (*ElicitResult, error) {
	params = normalizeElicit(params)
	if err := checkInputCapability(p.caps, &InputRequest{Method: MethodElicitationCreate, Params: params}); err != nil {
		return nil, err
	}
	if params.Mode == "url" && params.ElicitationID == "" {
		return nil, errors.New("pmcp: elicitation/create: a URL-mode elicitation needs an ElicitationID in the legacy era")
	}
	var out ElicitResult
	if err := p.roundTrip(ctx, MethodElicitationCreate, params, &out); err != nil {
		return nil, err
	}
	if !validAction(out.Action) {
		return nil, fmt.Errorf("pmcp: elicitation/create: client answered with unknown action %q", out.Action)
	}
	return &out, nil
}

func (p *legacyPeer) NotifyProgress(ctx context.Context, params *ProgressParams) error {
	if p.notify == nil {
		return nil
	}
	return p.notify(ctx, NotificationProgress, params)
}
