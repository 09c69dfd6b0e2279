package interop

import "testing"

// TestThirdPartyTasksThroughBridge: the task probes (a task-augmented
// tools/call, tasks/get to the end, tasks/result; a failing task; a
// cancelled one) of the clients that have a task API — the TypeScript SDK
// (its experimental tasks) and pmcp's own in both eras — against `pmcp
// serve` directly and through every bridge (issue 18 item 2).
func TestThirdPartyTasksThroughBridge(t *testing.T) {
	runMatrix(t, true)
}
