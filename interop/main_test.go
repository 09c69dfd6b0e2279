// Package interop tests pmcp's client against other Go MCP SDKs' servers
// (github.com/modelcontextprotocol/go-sdk v1.8.0 and
// github.com/mark3labs/mcp-go v1.2.1) in both protocol eras, its OAuth
// client against github.com/zitadel/oidc/v3 (example OP), and its resource
// server (package auth, per-tool scopes) against a zitadel/oidc OP with a
// client-credentials storage of its own (as_storage_test.go). It is a
// separate module so that those SDKs never enter pmcp's own go.mod.
//
//	cd interop && go test -race ./...
package interop

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Idle keep-alive connections of http.DefaultTransport, used by
		// the peers' own machinery, are not ours to close.
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	)
}
