// Package interop holds no code: its tests check pmcp's client against
// the servers of other Go MCP SDKs (see main_test.go).
package interop
