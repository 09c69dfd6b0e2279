package main

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/transport/command"
	mcpgoclient "github.com/mark3labs/mcp-go/client"
	mcpgotransport "github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpClient is the net/http client every HTTP implementation uses: one
// keep-alive connection per call in flight.
func httpClient(conc int) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = conc * 2
	tr.MaxIdleConnsPerHost = conc * 2
	return &http.Client{Transport: tr}
}

type echoArgs struct {
	Text string `json:"text"`
}

func newPmcp(ctx context.Context, mode, endpoint string, argv []string, conc int) (*caller, error) {
	opts := pmcp.ClientOptions{Name: "bench-client", Version: "1.0.0", Era: pmcp.EraLegacy}
	if mode == "modern" {
		opts.Era = pmcp.EraModern
	}
	c := pmcp.NewClient(opts)
	var (
		s   *pmcp.ClientSession
		err error
	)
	if mode == "stdio" {
		cmd := exec.Command(argv[0], argv[1:]...)
		t, terr := command.New(cmd, command.Options{Stderr: os.Stderr})
		if terr != nil {
			return nil, terr
		}
		st, serr := t.Start()
		if serr != nil {
			return nil, serr
		}
		s, err = c.Connect(ctx, st)
	} else {
		s, err = c.ConnectHTTP(ctx, endpoint, pmcp.HTTPClientOptions{HTTPClient: httpClient(conc), NoStandaloneStream: true})
	}
	if err != nil {
		return nil, err
	}
	args := echoArgs{Text: echoText}
	return &caller{
		call: func(ctx context.Context) error {
			res, err := s.CallTool(ctx, "echo", args)
			if err != nil {
				return err
			}
			if res.IsError || len(res.Content) != 1 {
				return errors.New("unexpected echo result")
			}
			tc, ok := res.Content[0].(*pmcp.TextContent)
			if !ok {
				return errors.New("echo result is not text")
			}
			return checkText(tc.Text)
		},
		close: func() { _ = s.Close() },
	}, nil
}

func newGosdk(ctx context.Context, mode, endpoint string, argv []string, conc int) (*caller, error) {
	c := gosdk.NewClient(&gosdk.Implementation{Name: "bench-client", Version: "1.0.0"}, nil)
	var t gosdk.Transport
	so := &gosdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
	switch mode {
	case "stdio":
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stderr = os.Stderr
		t = &gosdk.CommandTransport{Command: cmd}
	case "modern":
		so.ProtocolVersion = "2026-07-28"
		fallthrough
	default:
		t = &gosdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: httpClient(conc), DisableStandaloneSSE: true}
	}
	s, err := c.Connect(ctx, t, so)
	if err != nil {
		return nil, err
	}
	args := map[string]any{"text": echoText}
	return &caller{
		call: func(ctx context.Context) error {
			res, err := s.CallTool(ctx, &gosdk.CallToolParams{Name: "echo", Arguments: args})
			if err != nil {
				return err
			}
			if res.IsError || len(res.Content) != 1 {
				return errors.New("unexpected echo result")
			}
			tc, ok := res.Content[0].(*gosdk.TextContent)
			if !ok {
				return errors.New("echo result is not text")
			}
			return checkText(tc.Text)
		},
		close: func() { _ = s.Close() },
	}, nil
}

func newMcpgo(ctx context.Context, mode, endpoint string, argv []string, conc int) (*caller, error) {
	var (
		c   *mcpgoclient.Client
		err error
	)
	if mode == "stdio" {
		c, err = mcpgoclient.NewStdioMCPClient(argv[0], nil, argv[1:]...)
	} else {
		c, err = mcpgoclient.NewStreamableHttpClient(endpoint, mcpgotransport.WithHTTPBasicClient(httpClient(conc)))
		if err == nil {
			err = c.Start(ctx)
		}
	}
	if err != nil {
		return nil, err
	}
	var init mcpgo.InitializeRequest
	init.Params.ClientInfo = mcpgo.Implementation{Name: "bench-client", Version: "1.0.0"}
	init.Params.ProtocolVersion = "2025-11-25"
	if mode == "modern" {
		init.Params.ProtocolVersion = "2026-07-28"
	}
	if _, err := c.Initialize(ctx, init); err != nil {
		_ = c.Close()
		return nil, err
	}
	args := map[string]any{"text": echoText}
	return &caller{
		call: func(ctx context.Context) error {
			var req mcpgo.CallToolRequest
			req.Params.Name = "echo"
			req.Params.Arguments = args
			res, err := c.CallTool(ctx, req)
			if err != nil {
				return err
			}
			if res.IsError || len(res.Content) != 1 {
				return errors.New("unexpected echo result")
			}
			tc, ok := res.Content[0].(mcpgo.TextContent)
			if !ok {
				return errors.New("echo result is not text")
			}
			return checkText(tc.Text)
		},
		close: func() { _ = c.Close() },
	}, nil
}
