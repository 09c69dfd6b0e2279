package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
)

// writeGatewayServers writes a configuration whose mcpServers are the
// named `pmcp serve --stdio` children, with rest after them.
func writeGatewayServers(t *testing.T, path string, names []string, rest string) {
	t.Helper()
	child := fmt.Sprintf(`{"command": %q, "args": ["serve", "--stdio", "--log-level", "off"], "env": {"PMCP_TEST_RUN_MAIN": "1", "GORACE": "atexit_sleep_ms=0"}}`, os.Args[0])
	var servers []string
	for _, n := range names {
		servers = append(servers, fmt.Sprintf("%q: %s", n, child))
	}
	body := fmt.Sprintf(`{"mcpServers": {%s}%s}`, strings.Join(servers, ", "), rest)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// hasPrefixed reports whether names has a name with the upstream's prefix.
func hasPrefixed(names []string, upstream string) bool {
	return slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, upstream+"_") })
}

// TestGatewayReloadUpstreams: SIGHUP applies changed mcpServers live —
// an upstream removed, one added — while a caller keeps calling the
// unchanged one (no call fails) and a legacy session stays; a file whose
// new upstream cannot be made is refused and the upstreams in force kept.
func TestGatewayReloadUpstreams(t *testing.T) {
	as := newFakeIssuer(t)
	policies := `, "policies": [{"match": {}, "allowTools": ["*"]}]`
	config := filepath.Join(t.TempDir(), "gateway.json")
	writeGatewayServers(t, config, []string{"a", "b"}, policies)
	g := startGateway(t, config, as)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	alice := connectAs(t, ctx, g.url, pmcp.EraLegacy, as.mintFor(t, gatewayAudience, "alice", "mcp"))
	sid := alice.SessionID()
	load := connectAs(t, ctx, g.url, pmcp.EraModern, as.mintFor(t, gatewayAudience, "loader", "mcp"))
	stop, loaded := make(chan struct{}), make(chan error, 1)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				if n == 0 {
					loaded <- errors.New("no call made")
					return
				}
				loaded <- nil
				return
			default:
			}
			if res, err := load.CallTool(ctx, "a_echo", map[string]any{"text": "x"}); err != nil || res.IsError {
				loaded <- fmt.Errorf("call %d of the unchanged upstream during the reload: %+v %v", n, res, err)
				return
			}
			n++
		}
	}()
	defer func() {
		close(stop)
		if err := <-loaded; err != nil {
			t.Error(err)
		}
	}()
	names := toolNames(t, ctx, alice)
	if !hasPrefixed(names, "a") || !hasPrefixed(names, "b") || hasPrefixed(names, "c") {
		t.Fatalf("before: %v", names)
	}
	hup := func(want string) {
		t.Helper()
		n := len(g.logs.String())
		if err := g.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		waitLog(t, g, n, want)
	}

	writeGatewayServers(t, config, []string{"a", "c"}, policies)
	hup("gateway configuration reloaded")
	names = toolNames(t, ctx, alice)
	if !hasPrefixed(names, "a") || hasPrefixed(names, "b") || !hasPrefixed(names, "c") || alice.SessionID() != sid {
		t.Fatalf("after the reload: %v (session %q, was %q)", names, alice.SessionID(), sid)
	}
	if res, err := alice.CallTool(ctx, "c_echo", map[string]any{"text": "hi"}); err != nil || res.IsError {
		t.Fatalf("c_echo after the reload: %+v %v", res, err)
	}
	if _, err := alice.CallTool(ctx, "b_echo", map[string]any{"text": "hi"}); err == nil {
		t.Fatal("b_echo answered after b was removed")
	}

	// "a_b" would make the prefixes ambiguous with "a": refused, a and c stay.
	writeGatewayServers(t, config, []string{"a", "a_b", "c"}, policies)
	hup("configuration refused")
	names = toolNames(t, ctx, alice)
	if !hasPrefixed(names, "a") || !hasPrefixed(names, "c") || hasPrefixed(names, "a_b") {
		t.Fatalf("after a refused reload: %v", names)
	}
}
