// Package interop holds no code: its tests check pmcp's client against
// the servers of other Go MCP SDKs (see main_test.go), and its OAuth
// client against the zitadel/oidc example OpenID provider (oauth_test.go).
package interop
