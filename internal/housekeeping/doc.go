// Package housekeeping holds no code: its tests measure the shape of the
// root package pmcp with go/ast (exported identifiers, where each type's
// methods live, the switches and maps keyed on MCP method names, the
// exported Default*/Max* constants, inline HTTP error writes, the OAuth
// well-known path spellings) so that a redesign can state its targets as
// numbers and a test can keep them. Run
//
//	go test -v -run TestHouseMeasures ./internal/housekeeping
//
// to print today's numbers. A limit switched on (On) in the limits table
// of measures_test.go fails the test when its measure exceeds Max.
//
// TestPublicAPI keeps docs/api/*.txt, the listing of every exported
// identifier of the module's importable packages; see publicapi_test.go.
//
// The tests only read source files of this repository; they type-check
// nothing and start no process, so they stay cheap and hermetic.
package housekeeping
