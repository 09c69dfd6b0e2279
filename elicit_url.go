package pmcp

import (
	"context"
	"errors"
)

// URLElicitationRequiredError (stub).
type URLElicitationRequiredError struct {
	Elicitations []*ElicitParams
}

func (e *URLElicitationRequiredError) Error() string { return "pmcp: URL elicitation required" }

// NotifyElicitationComplete (stub).
func (e *RequestHandlerExtra) NotifyElicitationComplete(ctx context.Context, elicitationID string) error {
	return nil
}

// ErrLegacyOnly (stub).
var ErrLegacyOnly = errors.New("pmcp: legacy only")
