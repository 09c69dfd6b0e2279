package main

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
)

// TestGatewayWatch: with --watch the gateway reloads when the file's
// content changes, without a signal: a file caught half written (written
// in place, cut mid-way) is refused and the configuration in force kept;
// the finished write is applied (a new upstream listed), while a legacy
// session stays; touching the file without changing it reloads nothing.
func TestGatewayWatch(t *testing.T) {
	path := gatewayConfig(t, "", "") // upstreams a and b
	g := startListening(t, "gateway", "--listen", "127.0.0.1:0", "--config", path, "--watch", "50ms")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := connectAs(t, ctx, g.url, pmcp.EraLegacy, "")
	sid := cs.SessionID()
	if names := toolNames(t, ctx, cs); !hasPrefixed(names, "a") || hasPrefixed(names, "c") {
		t.Fatalf("before: %v", names)
	}

	// Half a file, in place (as an editor without atomic saves leaves it).
	full, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	skip := len(g.logs.String())
	if err := os.WriteFile(path, full[:len(full)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	waitLog(t, g, skip, "gateway configuration refused")
	if names := toolNames(t, ctx, cs); !hasPrefixed(names, "b") {
		t.Fatalf("after a half-written file: %v, want the configuration in force", names)
	}

	// The write finished: applied.
	skip = len(g.logs.String())
	writeGatewayServers(t, path, []string{"a", "c"}, "")
	waitLog(t, g, skip, "gateway configuration reloaded")
	names := toolNames(t, ctx, cs)
	if !hasPrefixed(names, "c") || hasPrefixed(names, "b") {
		t.Fatalf("after the change: %v, want a_ and c_", names)
	}
	if cs.SessionID() != sid {
		t.Fatal("the session changed")
	}
	// The same content again (a new modification time): no reload; the
	// next real change is the proof the watcher looked.
	skip = len(g.logs.String())
	writeGatewayServers(t, path, []string{"a", "c"}, "")
	writeGatewayServers(t, path, []string{"a", "c"}, `, "policies": [{"match": {}, "allowTools": ["c_*"]}]`)
	waitLog(t, g, skip, "gateway configuration reloaded")
	if n := strings.Count(g.logs.String()[skip:], "gateway configuration reloaded"); n != 1 {
		t.Errorf("%d reloads for one change of content:\n%s", n, g.logs.String()[skip:])
	}
	if names := toolNames(t, ctx, cs); len(names) == 0 || slices.ContainsFunc(names, func(n string) bool { return !strings.HasPrefix(n, "c_") }) {
		t.Errorf("after the policy: %v, want c_ only", names)
	}
}
