package pmcp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/gopmcp/pmcp/transport/stdio"
)

// stdioPeer drives Server.Serve over the real stdio transport (newline-
// delimited JSON over io.Pipe), line by line.
type stdioPeer struct {
	t     *testing.T
	w     *io.PipeWriter
	lines chan string
}

func startStdioServer(t *testing.T, s *Server) *stdioPeer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, stdio.NewStream(inR, outW, stdio.Options{})) }()
	p := &stdioPeer{t: t, w: inW, lines: make(chan string, 64)}
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer close(p.lines)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = inW.Close() // EOF: Serve drains and returns
		if t.Failed() {
			cancel() // a handler may still be blocked
		}
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		cancel()
		_ = outR.Close()
		<-readerDone
	})
	return p
}

func (p *stdioPeer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.w, line+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

// next returns the next line the server wrote, decoded.
func (p *stdioPeer) next() (map[string]any, string) {
	p.t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			p.t.Fatal("server closed its output")
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			p.t.Fatalf("bad line %q: %v", line, err)
		}
		return m, line
	case <-time.After(10 * time.Second):
		p.t.Fatal("no line from the server")
	}
	return nil, ""
}

func recvSignal[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

// TestStdioCancelledNotificationCancelsHandler: over the real stdio
// transport, in both eras, notifications/cancelled for a running tools/call
// cancels the handler's ctx (the handler signals it), and the cancelled
// request is never answered.
func TestStdioCancelledNotificationCancelsHandler(t *testing.T) {
	const modernMeta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}`
	for _, era := range []struct{ name, meta string }{{"legacy", ""}, {"modern", modernMeta}} {
		t.Run(era.name, func(t *testing.T) {
			started := make(chan struct{}, 1)
			ended := make(chan error, 1)
			s, err := NewServer(ServerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := AddTool(s, &Tool{Name: "block", Description: "waits for cancellation"}, func(ctx context.Context, e *RequestHandlerExtra, in struct{}) (string, error) {
				started <- struct{}{}
				<-ctx.Done()
				ended <- context.Cause(ctx)
				return "too late", nil
			}); err != nil {
				t.Fatal(err)
			}
			p := startStdioServer(t, s)
			if era.meta == "" {
				p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
				if m, line := p.next(); m["id"] != float64(1) || m["result"] == nil {
					t.Fatalf("initialize: %s", line)
				}
				p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			}
			p.send(`{"jsonrpc":"2.0","id":"call-7","method":"tools/call","params":{"name":"block"` + era.meta + `}}`)
			recvSignal(t, started, "the handler to start")
			p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"call-7","reason":"user"}}`)
			if cause := recvSignal(t, ended, "the handler's ctx to be cancelled"); !errors.Is(cause, context.Canceled) {
				t.Fatalf("handler ctx ended with %v, want context.Canceled", cause)
			}
			// The cancelled call is not answered: the next line is the ping's.
			p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":8,"method":"ping","params":{%s}}`, strings.TrimPrefix(era.meta, ",")))
			if m, line := p.next(); m["id"] != float64(8) {
				t.Fatalf("after cancellation got %s, want the ping's response", line)
			}
		})
	}
}
