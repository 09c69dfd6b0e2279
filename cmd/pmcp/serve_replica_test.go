package main

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
)

// Replica flags are checked before anything starts: a replica without
// the shared requestState key ring, or with replica flags but no Redis,
// is a usage error, not a server that seals states its peers reject.
func TestServeReplicaFlagErrors(t *testing.T) {
	key := "k1:" + base64.StdEncoding.EncodeToString(make([]byte, 32))
	t.Setenv(stateKeysEnv, "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--redis", "redis://127.0.0.1:1"}, "key ring"},
		{[]string{"serve", "--replica-id", "a"}, "need --redis"},
		{[]string{"serve", "--task-lease", "2s"}, "need --redis"},
		{[]string{"serve", "--redis", "redis://127.0.0.1:1", "--state-key", key, "--task-lease", "-1s"}, "--task-lease"},
		{[]string{"serve", "--redis", "redis://127.0.0.1:1", "--state-key", "nocolon"}, "ID:BASE64"},
		{[]string{"serve", "--redis", "redis://127.0.0.1:1", "--state-key", key, "--http", "0.0.0.0:8080"}, "--advertise"},
		{[]string{"serve", "--redis", "::bad", "--state-key", key, "--advertise", "127.0.0.1:8080"}, "--redis"},
	} {
		var stderr bytes.Buffer
		if code := run(tc.args, strings.NewReader(""), &bytes.Buffer{}, &stderr); code != exitUsage || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", tc.args, code, stderr.String(), exitUsage, tc.want)
		}
	}
}
