package interop

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/transport/stdio"
	mcpgo "github.com/mark3labs/mcp-go/server"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioPeer runs serve on the server ends of two pipes (newline-delimited
// JSON, as over a process's stdin and stdout) and connects c on the other
// ends.
func stdioPeer(t *testing.T, c *pmcp.Client, serve func(ctx context.Context, r io.ReadCloser, w io.WriteCloser) error) (*pmcp.ClientSession, error) {
	t.Helper()
	toSrvR, toSrvW := io.Pipe()
	toCliR, toCliW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = serve(ctx, toSrvR, toCliW)
	}()
	stop := func() {
		cancel()
		_ = toSrvR.Close()
		_ = toCliW.Close()
		<-done
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ccancel()
	s, err := c.Connect(cctx, stdio.NewStream(toCliR, toSrvW, stdio.Options{}))
	if err != nil {
		stop()
		return nil, err
	}
	t.Cleanup(func() {
		_ = s.Close()
		stop()
	})
	return s, nil
}

func goSDKStdio(ctx context.Context, r io.ReadCloser, w io.WriteCloser) error {
	return newGoSDKServer().Run(ctx, &gosdk.IOTransport{Reader: r, Writer: w})
}

func mcpGoStdio(ctx context.Context, r io.ReadCloser, w io.WriteCloser) error {
	return mcpgo.NewStdioServer(newMCPGoServer()).Listen(ctx, r, w)
}

// TestPeersStdio: pmcp's client against go-sdk and mcp-go over stdio
// framing, in both eras.
func TestPeersStdio(t *testing.T) {
	for _, tc := range []struct {
		name  string
		serve func(ctx context.Context, r io.ReadCloser, w io.WriteCloser) error
		era   pmcp.Era
		want  pmcp.Era
	}{
		{"go-sdk/negotiated", goSDKStdio, pmcp.EraUnknown, pmcp.EraModern},
		{"go-sdk/legacy", goSDKStdio, pmcp.EraLegacy, pmcp.EraLegacy},
		{"mcp-go/negotiated", mcpGoStdio, pmcp.EraUnknown, pmcp.EraModern},
		{"mcp-go/legacy", mcpGoStdio, pmcp.EraLegacy, pmcp.EraLegacy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := stdioPeer(t, pmcp.NewClient(pmcp.ClientOptions{Name: "interop", Version: "1", Era: tc.era}), tc.serve)
			if err != nil {
				t.Fatal(err)
			}
			if s.Era() != tc.want {
				t.Fatalf("era %v (version %s), want %v", s.Era(), s.ProtocolVersion(), tc.want)
			}
			exercise(t, s, tc.name[:6] == "mcp-go")
		})
	}
}
