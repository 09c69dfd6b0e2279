package main

import (
	"syscall"
	"testing"
	"time"
)

// TestServeStdioSignalWhileReading: `pmcp serve --stdio` spawned with a
// pipe as its standard input (as every MCP client spawns it) reads it
// through the runtime's poller, as stdio.Stdio does: a SIGTERM while it
// waits for the next line ends it at once, not after the grace period a
// blocking read needs (and a waiting read parks a goroutine, not a thread
// and, for a server pinned to one core, its processor).
func TestServeStdioSignalWhileReading(t *testing.T) {
	p := startStdio(t, "--log-level", "off")
	p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if _, f := p.until("1"); f.Result == nil {
		t.Fatalf("initialize: %s", f.raw)
	}
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for range p.lines { // stdout closes when the process exits
	}
	if d := time.Since(start); d >= stdioShutdownGrace {
		t.Fatalf("pmcp serve --stdio took %v to end after SIGTERM while reading a pipe: the read was not interrupted (grace %v)", d.Round(time.Millisecond), stdioShutdownGrace)
	}
}
