package otel

import (
	"fmt"
	"testing"

	"github.com/gopmcp/pmcp"
)

// TestServerOutcomeIsTheWireCode: the server span records the code the
// client receives (pmcp.ErrorCode, the server's one error mapping): a
// handler's *MissingCapabilityError is -32021, the caller's fault, not a
// -32603 server failure.
func TestServerOutcomeIsTheWireCode(t *testing.T) {
	missing := &pmcp.MissingCapabilityError{Required: map[string]any{"sampling": map[string]any{}}}
	for _, err := range []error{missing, fmt.Errorf("cannot sample: %w", missing)} {
		o := serverOutcome(nil, err)
		if o.statusCode != "-32021" || o.errorType != "" {
			t.Errorf("%v: status code %q, error.type %q; want -32021 and no error.type", err, o.statusCode, o.errorType)
		}
	}
}
