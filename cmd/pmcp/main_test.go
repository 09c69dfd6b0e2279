package main

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain doubles as the pmcp binary: with PMCP_TEST_RUN_MAIN=1 the test
// executable behaves exactly like `pmcp`, so scripted sessions can drive a
// real process over real pipes without a separate build step.
func TestMain(m *testing.M) {
	if os.Getenv("PMCP_TEST_RUN_MAIN") == "1" {
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(removeBuilt))
}
