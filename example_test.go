package pmcp_test

import (
	"context"
	"fmt"
	"log"

	"github.com/go-json-experiment/json"
	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
	"github.com/gopmcp/pmcp/transport/memory"
)

type AddIn struct {
	A int `json:"a" jsonschema:"first addend"`
	B int `json:"b" jsonschema:"second addend"`
}

type AddOut struct {
	Sum int `json:"sum"`
}

// A typed tool: schemas are inferred once; arguments are validated before
// the handler runs.
func ExampleAddTool() {
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "demo", Version: "1.0.0"})
	if err != nil {
		log.Fatal(err)
	}
	err = pmcp.AddTool(srv, &pmcp.Tool{Name: "add", Description: "Adds two integers."},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, in AddIn) (AddOut, error) {
			return AddOut{Sum: in.A + in.B}, nil
		})
	fmt.Println(err)
	// Output: <nil>
}

// Serving over an in-memory pipe and calling a tool in the modern era: no
// handshake, the protocol version and capabilities ride in _meta.
func ExampleServer_Serve() {
	srv, _ := pmcp.NewServer(pmcp.ServerOptions{Name: "demo", Version: "1.0.0"})
	_ = pmcp.AddTool(srv, &pmcp.Tool{Name: "add", Description: "Adds two integers."},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, in AddIn) (AddOut, error) {
			return AddOut{Sum: in.A + in.B}, nil
		})
	a, b := memory.NewPipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, a) }()

	// The other end of the pipe is a jsonrpc.Stream: write a request on it
	// and read the response (pmcp.Client does this for you).
	params, _ := pmcp.Marshal(map[string]any{
		"name":      "add",
		"arguments": map[string]any{"a": 2, "b": 3},
		"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		},
	})
	if err := b.Write(ctx, &jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "tools/call", Params: params}); err != nil {
		log.Fatal(err)
	}
	m, err := b.Read(ctx)
	if err != nil {
		log.Fatal(err)
	}
	var out struct {
		ResultType        string `json:"resultType"`
		StructuredContent AddOut `json:"structuredContent"`
	}
	_ = pmcp.Unmarshal(m.(*jsonrpc.Response).Result, &out)
	fmt.Println(out.ResultType, out.StructuredContent.Sum)
	_ = b.Close()
	<-done
	// Output: complete 5
}

// Handlers log through the extra; records below the effective level are
// dropped before anything is built, and without a sink logging is a no-op.
func ExampleRequestHandlerExtra_Log() {
	extra := pmcp.DefaultRequestHandlerExtra()
	fmt.Println(extra.Log(pmcp.LevelInfo, "starting work"))
	fmt.Println(extra.LogWithData(pmcp.LevelWarning, "retrying", map[string]any{"attempt": 2}))
	// Output:
	// <nil>
	// <nil>
}

// Secret metadata values, and values under sensitive keys, never print
// nor marshal; Reveal reads a secret back.
func ExampleMetadata() {
	extra := pmcp.DefaultRequestHandlerExtra()
	extra.SetMetadata("tenant", "acme")
	extra.SetMetadata("oauth_token", "plain-but-sensitive-key")
	extra.SetSecretMetadata("upstream", pmcp.Secret("s3cr3t"))
	b, _ := json.Marshal(extra.Metadata)
	fmt.Println(extra.Metadata)
	fmt.Println(string(b))
	s, _ := extra.GetSecretMetadata("upstream")
	fmt.Println(s, s.Reveal())
	// Output:
	// map[oauth_token:[REDACTED] tenant:acme upstream:[REDACTED]]
	// {"oauth_token":"[REDACTED]","tenant":"acme","upstream":"[REDACTED]"}
	// [REDACTED] s3cr3t
}

// Typed extensions carry middleware state to handlers, keyed by Go type.
func ExampleSetExtension() {
	type tenant struct{ ID string }
	extra := pmcp.DefaultRequestHandlerExtra()
	pmcp.SetExtension(&extra.Extensions, tenant{ID: "t-1"})
	t, ok := pmcp.GetExtension[tenant](&extra.Extensions)
	fmt.Println(t.ID, ok, extra.Extensions)
	// Output: t-1 true Extensions{pmcp_test.tenant}
}

// A handler written once for both eras: Peer.Elicit is a real request in the
// legacy era and an input request (multi-round trip) in the modern era.
func ExamplePeer() {
	srv, _ := pmcp.NewServer(pmcp.ServerOptions{})
	_ = pmcp.AddTool(srv, &pmcp.Tool{Name: "greet", Description: "Greets the user by name."},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ struct{}) (string, error) {
			res, err := extra.Peer.Elicit(ctx, &pmcp.ElicitParams{
				Message:         "What is your name?",
				RequestedSchema: []byte(`{"type":"object","properties":{"name":{"type":"string"}}}`),
			})
			if err != nil {
				return "", err // in the modern era this ends the round with input_required
			}
			return fmt.Sprintf("Hello, %v!", res.Content["name"]), nil
		})
	fmt.Println("registered")
	// Output: registered
}
