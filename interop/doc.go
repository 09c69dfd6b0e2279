// Package interop holds no code: its tests check pmcp's client against
// the servers of other Go MCP SDKs (see main_test.go), its OAuth client
// against the zitadel/oidc example OpenID provider (oauth_test.go), and
// MCP authorization end to end against a zitadel/oidc provider with a
// storage of the tests' own (as_storage_test.go, as_authcode_test.go):
// the resource server, the client's authorization code flow with step-up
// and refresh (oauth_e2e_test.go) and the pmcp CLI's login
// (cli_login_test.go). The third-party matrix (thirdparty_test.go) runs
// the TypeScript SDK, Inspector CLI, go-sdk, mcp-go and pmcp clients, in
// both eras, against `pmcp serve` and the reference npm servers, directly
// and through `pmcp bridge`, and compares the results.
package interop
