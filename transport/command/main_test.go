package command

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// helperEnv selects a helper behaviour when the test binary is re-executed
// as a child process (see helper_test.go).
const helperEnv = "PMCP_COMMAND_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	goleak.VerifyTestMain(m)
}
