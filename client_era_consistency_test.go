package pmcp_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// TestClientCallErrorReadsTheSameInEveryEra checks one wrapping rule for a
// failed call: the same server answer reads the same whatever era and
// transport carried it, the *jsonrpc.Error stays reachable, and over
// modern HTTP the status stays inspectable as *HTTPStatusError.
func TestClientCallErrorReadsTheSameInEveryEra(t *testing.T) {
	var want string
	for _, tc := range transportCases {
		if tc.name == "memory" {
			continue
		}
		for _, era := range []pmcp.Era{pmcp.EraLegacy, pmcp.EraModern} {
			t.Run(tc.name+"/"+era.String(), func(t *testing.T) {
				s := tc.connect(t, pmcp.NewClient(pmcp.ClientOptions{Era: era}))
				_, err := s.CallTool(context.Background(), "no_such_tool", nil)
				if err == nil {
					t.Fatal("no error")
				}
				var re *jsonrpc.Error
				if !errors.As(err, &re) || re.Code != jsonrpc.CodeInvalidParams {
					t.Fatalf("errors.As *jsonrpc.Error: %v (%#v)", err, re)
				}
				var se *pmcp.HTTPStatusError
				if tc.name == "http" && era == pmcp.EraModern {
					if !errors.As(err, &se) || se.StatusCode != http.StatusBadRequest {
						t.Fatalf("errors.As *HTTPStatusError: %v", err)
					}
				}
				if want == "" {
					want = err.Error()
				} else if err.Error() != want {
					t.Fatalf("error text\n got %q\nwant %q", err.Error(), want)
				}
			})
		}
	}
}
