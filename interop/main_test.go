// Package interop tests pmcp's client against other Go MCP SDKs' servers
// (github.com/modelcontextprotocol/go-sdk v1.8.0 and
// github.com/mark3labs/mcp-go v1.2.1) in both protocol eras, its OAuth
// client against github.com/zitadel/oidc/v3 (example OP), and its resource
// server (package auth, per-tool scopes), the client's authorization code
// flow and the pmcp CLI's login against a zitadel/oidc OP with a storage of
// its own (as_storage_test.go, as_authcode_test.go). It is a
// separate module so that those SDKs never enter pmcp's own go.mod.
//
//	cd interop && go test -race ./...
package interop

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The test binary doubles as the user's browser for the pmcp CLI (see
	// cli_login_test.go).
	if user := os.Getenv(browserUserEnv); user != "" {
		os.Exit(browse(user, os.Args[len(os.Args)-1]))
	}
	goleak.VerifyTestMain(m,
		// The pmcp binary some tests build once (pmcpBinary).
		goleak.Cleanup(func(code int) {
			removePMCPBinary()
			os.Exit(code)
		}),
		// Idle keep-alive connections of http.DefaultTransport, used by
		// the peers' own machinery, are not ours to close.
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	)
}
