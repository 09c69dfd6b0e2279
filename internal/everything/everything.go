// Package everything builds the "everything" server: the feature set the
// official MCP conformance suite exercises, for both protocol eras, plus
// tools that show multi-round-trip input written once for both eras.
package everything

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// A 1x1 PNG and a tiny WAV file, base64-encoded.
const (
	pngBase64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
	wavBase64 = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="
)

// Options tune the everything server.
type Options struct {
	// Step is the pause between the logging and progress steps of the
	// demo tools. Zero means 50ms.
	Step time.Duration
	// Server options passed through (name and version default to
	// "pmcp-everything" and the SDK version).
	Server pmcp.ServerOptions
	// NoTasks leaves tasks off when Server.Tasks is nil (they are on by
	// default; a server with tasks must be closed with Server.Close).
	NoTasks bool
}

// New builds the everything server.
func New(opts Options) (*pmcp.Server, error) {
	if opts.Step == 0 {
		opts.Step = 50 * time.Millisecond
	}
	so := opts.Server
	if so.Tasks == nil && !opts.NoTasks {
		so.Tasks = &pmcp.TaskOptions{}
	}
	if so.Name == "" {
		so.Name = "pmcp-everything"
	}
	if so.Version == "" {
		so.Version = "0.1.0"
	}
	if so.Instructions == "" {
		so.Instructions = "The pmcp everything server: every MCP feature, in both protocol eras."
	}
	s, err := pmcp.NewServer(so)
	if err != nil {
		return nil, err
	}
	b := &builder{s: s, step: opts.Step}
	b.contentTools()
	b.behaviourTools()
	b.peerTools()
	b.modernTools()
	b.mrtrTools()
	b.taskTools()
	b.skills()
	b.appTools()
	b.resources()
	b.prompts()
	return s, b.err
}

type builder struct {
	s    *pmcp.Server
	step time.Duration
	err  error
}

func (b *builder) check(err error) {
	if err != nil && b.err == nil {
		b.err = err
	}
}

type noArgs struct{}

// simple registers a tool without arguments returning fixed content.
func (b *builder) simple(name, desc string, content ...pmcp.Content) {
	b.check(pmcp.AddTool(b.s, &pmcp.Tool{Name: name, Description: desc},
		func(ctx context.Context, _ *pmcp.RequestHandlerExtra, _ noArgs) (*pmcp.CallToolResult, error) {
			return &pmcp.CallToolResult{Content: content}, nil
		}))
}

func (b *builder) contentTools() {
	b.simple("test_simple_text", "Returns a simple text response.",
		pmcp.Text("This is a simple text response for testing."))
	b.simple("test_image_content", "Returns a 1x1 PNG image.",
		&pmcp.ImageContent{Data: pngBase64, MIMEType: "image/png"})
	b.simple("test_audio_content", "Returns a short WAV clip.",
		&pmcp.AudioContent{Data: wavBase64, MIMEType: "audio/wav"})
	b.simple("test_embedded_resource", "Returns an embedded text resource.",
		&pmcp.EmbeddedResource{Resource: &pmcp.ResourceContents{URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource content."}})
	b.simple("test_multiple_content_types", "Returns text, an image and an embedded resource.",
		pmcp.Text("Multiple content types test:"),
		&pmcp.ImageContent{Data: pngBase64, MIMEType: "image/png"},
		&pmcp.EmbeddedResource{Resource: &pmcp.ResourceContents{URI: "test://mixed-content-resource", MIMEType: "application/json", Text: `{"test":"data","value":123}`}})
}

func (b *builder) sleep(ctx context.Context) error {
	t := time.NewTimer(b.step)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (b *builder) behaviourTools() {
	b.check(pmcp.AddTool(b.s, &pmcp.Tool{Name: "test_tool_with_logging", Description: "Logs three messages while it runs."},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ noArgs) (string, error) {
			for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
				if i > 0 {
					if err := b.sleep(ctx); err != nil {
						return "", err
					}
				}
				_ = extra.Log(pmcp.LevelInfo, msg)
			}
			return "Logging test completed", nil
		}))
	b.check(pmcp.AddTool(b.s, &pmcp.Tool{Name: "test_tool_with_progress", Description: "Reports progress 0, 50 and 100 of 100."},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ noArgs) (string, error) {
			for i, p := range []float64{0, 50, 100} {
				if i > 0 {
					if err := b.sleep(ctx); err != nil {
						return "", err
					}
				}
				_ = extra.ReportProgress(p, 100, fmt.Sprintf("step %d of 3", i+1))
			}
			return "Progress test completed", nil
		}))
	b.check(pmcp.AddTool(b.s, &pmcp.Tool{Name: "count_slowly", Description: "Reports progress 1..count, one step every intervalMs (count at most 1000, interval at most 1000 ms): a long SSE stream for resumption and fail-over tests."},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, in countArgs) (string, error) {
			n := min(max(in.Count, 1), 1000)
			step := time.Duration(min(max(in.IntervalMs, 0), 1000)) * time.Millisecond
			for i := 1; i <= n; i++ {
				if i > 1 && step > 0 {
					t := time.NewTimer(step)
					select {
					case <-ctx.Done():
						t.Stop()
						return "", ctx.Err()
					case <-t.C:
					}
				}
				_ = extra.ReportProgress(float64(i), float64(n), "")
			}
			return fmt.Sprintf("counted to %d", n), nil
		}))
	b.check(pmcp.AddTool(b.s, &pmcp.Tool{Name: "test_error_handling", Description: "Always fails with a tool error."},
		func(ctx context.Context, _ *pmcp.RequestHandlerExtra, _ noArgs) (string, error) {
			return "", errors.New("This tool intentionally returns an error for testing")
		}))
	b.check(b.s.AddRawTool(&pmcp.Tool{
		Name:        "json_schema_2020_12_tool",
		Description: "Has a JSON Schema 2020-12 input schema that must be served verbatim.",
		InputSchema: jsontext.Value(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",` +
			`"$defs":{"address":{"$anchor":"address","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},` +
			`"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},"contact":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},` +
			`"allOf":[{"anyOf":[{"required":["name"]},{"required":["address"]}]}],` +
			`"if":{"properties":{"contact":{"const":"phone"}},"required":["contact"]},"then":{"required":["phone"]},"else":{"not":{"required":["phone"]}},` +
			`"additionalProperties":false}`),
	}, func(ctx context.Context, _ *pmcp.RequestHandlerExtra, p *pmcp.CallToolParams) (*pmcp.CallToolResult, error) {
		return &pmcp.CallToolResult{Content: []pmcp.Content{pmcp.Text("Received: " + string(p.Arguments))}}, nil
	}))
	b.check(pmcp.AddTool(b.s, &pmcp.Tool{Name: "test_reconnection", Description: "Closes its SSE stream mid-call (SEP-1699); the result arrives when the client reconnects with Last-Event-ID."},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ noArgs) (string, error) {
			extra.CloseStream()
			for range 4 {
				if err := b.sleep(ctx); err != nil {
					return "", err
				}
			}
			return "Reconnection test completed", nil
		}))
}

type countArgs struct {
	Count      int `json:"count" jsonschema:"how many progress steps (1-1000)"`
	IntervalMs int `json:"intervalMs,omitempty" jsonschema:"pause between steps in milliseconds (0-1000)"`
}

type samplingArgs struct {
	Prompt string `json:"prompt" jsonschema:"the prompt to send to the client's model"`
}

type elicitArgs struct {
	Message string `json:"message" jsonschema:"the message to show the user"`
}

// peerTools use the back-channel. They are written once: in the legacy era
// each Peer call is a real request to the client; in the modern era it is
// an input request answered on the retry.
func (b *builder) peerTools() {
	b.check(pmcp.AddTool(b.s, &pmcp.Tool{Name: "test_sampling", Description: "Asks the client's model to answer a prompt."},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, in samplingArgs) (string, error) {
			res, err := extra.Peer.Sample(ctx, &pmcp.CreateMessageParams{
				Messages:  []*pmcp.SamplingMessage{{Role: "user", Content: pmcp.Text(in.Prompt)}},
				MaxTokens: 100,
			})
			if err != nil {
				return "", err
			}
			return "LLM response: " + contentText(res.Content), nil
		}))
	b.check(pmcp.AddTool(b.s, &pmcp.Tool{Name: "test_elicitation", Description: "Asks the user for a username and an email."},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, in elicitArgs) (string, error) {
			res, err := extra.Peer.Elicit(ctx, &pmcp.ElicitParams{
				Message:         in.Message,
				RequestedSchema: jsontext.Value(`{"type":"object","properties":{"username":{"type":"string","description":"Your username"},"email":{"type":"string","description":"Your email address"}},"required":["username","email"]}`),
			})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("User response: action=%s, content=%s", res.Action, mustJSON(res.Content)), nil
		}))
	b.check(pmcp.AddTool(b.s, &pmcp.Tool{Name: "test_elicitation_sep1034_defaults", Description: "Elicits a form whose fields carry defaults."},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ noArgs) (string, error) {
			res, err := extra.Peer.Elicit(ctx, &pmcp.ElicitParams{
				Message:         "Please review and update the form fields with defaults",
				RequestedSchema: jsontext.Value(`{"type":"object","properties":{"name":{"type":"string","description":"User name","default":"John Doe"},"age":{"type":"integer","description":"User age","default":30},"score":{"type":"number","description":"User score","default":95.5},"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},"verified":{"type":"boolean","description":"Verification status","default":true}}}`),
			})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("Elicitation completed: action=%s, content=%s", res.Action, mustJSON(res.Content)), nil
		}))
	b.check(pmcp.AddTool(b.s, &pmcp.Tool{Name: "test_elicitation_sep1330_enums", Description: "Elicits a form with every enum shape."},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ noArgs) (string, error) {
			res, err := extra.Peer.Elicit(ctx, &pmcp.ElicitParams{
				Message: "Please select options from the enum fields",
				RequestedSchema: jsontext.Value(`{"type":"object","properties":{` +
					`"untitledSingle":{"type":"string","description":"Untitled single-select","enum":["option1","option2","option3"]},` +
					`"titledSingle":{"type":"string","description":"Titled single-select","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},` +
					`"legacyEnum":{"type":"string","description":"Legacy titled enum","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},` +
					`"untitledMulti":{"type":"array","description":"Untitled multi-select","items":{"type":"string","enum":["option1","option2","option3"]}},` +
					`"titledMulti":{"type":"array","description":"Titled multi-select","items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}` +
					`}}`),
			})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("Elicitation completed: action=%s, content=%s", res.Action, mustJSON(res.Content)), nil
		}))
	b.check(pmcp.AddTool(b.s, &pmcp.Tool{Name: "greet_user", Description: "Asks for the user's name (elicitation), then greets them. Works in both eras."},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ noArgs) (string, error) {
			res, err := extra.Peer.Elicit(ctx, &pmcp.ElicitParams{
				Message:         "What is your name?",
				RequestedSchema: jsontext.Value(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
			})
			if err != nil {
				return "", err
			}
			if res.Action != "accept" {
				return "No name given (" + res.Action + ")", nil
			}
			name, _ := res.Content["name"].(string)
			return "Hello, " + name + "!", nil
		}))
	b.check(pmcp.AddTool(b.s, &pmcp.Tool{Name: "roots_and_summary", Description: "Lists the client's roots, then asks its model to summarise them. Works in both eras."},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ noArgs) (string, error) {
			roots, err := extra.Peer.ListRoots(ctx)
			if err != nil {
				return "", err
			}
			names := make([]string, 0, len(roots.Roots))
			for _, r := range roots.Roots {
				names = append(names, r.URI)
			}
			res, err := extra.Peer.Sample(ctx, &pmcp.CreateMessageParams{
				Messages:  []*pmcp.SamplingMessage{{Role: "user", Content: pmcp.Text("Summarise these roots: " + strings.Join(names, ", "))}},
				MaxTokens: 50,
			})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("roots=%s summary=%s", strings.Join(names, ","), contentText(res.Content)), nil
		}))
}

func contentText(c pmcp.Content) string {
	if t, ok := c.(*pmcp.TextContent); ok {
		return t.Text
	}
	return fmt.Sprintf("[%T]", c)
}

func mustJSON(v any) string {
	b, err := pmcp.Marshal(v)
	if err != nil {
		return "null"
	}
	return string(b)
}

func (b *builder) modernTools() {
	b.check(pmcp.AddTool(b.s, &pmcp.Tool{Name: "test_missing_capability", Description: "Needs the client's sampling capability."},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ noArgs) (string, error) {
			caps := extra.ClientCapabilities()
			if caps == nil || caps.Sampling == nil {
				return "", &pmcp.MissingCapabilityError{Required: map[string]any{"sampling": map[string]any{}}}
			}
			return "sampling capability present", nil
		}))
	b.check(pmcp.AddTool(b.s, &pmcp.Tool{Name: "test_streaming_elicitation", Description: "Returns text; never sends a request on the response stream."},
		func(ctx context.Context, _ *pmcp.RequestHandlerExtra, _ noArgs) (string, error) {
			return "streaming elicitation test: no server-to-client requests", nil
		}))
	b.check(pmcp.AddTool(b.s, &pmcp.Tool{Name: "test_logging_tool", Description: "Tries to log; the SDK drops the records unless the request asked for a level."},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ noArgs) (string, error) {
			_ = extra.Log(pmcp.LevelInfo, "a log record")
			_ = extra.LogWithData(pmcp.LevelError, "an error record", map[string]any{"attempt": 1})
			return "logging tool done", nil
		}))
	b.check(pmcp.AddTool(b.s, &pmcp.Tool{Name: "test_trigger_tool_change", Description: "Changes the tool list (list_changed)."},
		func(ctx context.Context, _ *pmcp.RequestHandlerExtra, _ noArgs) (string, error) {
			const name = "__transient_tool_for_list_changed"
			if b.s.RemoveTools(name) == 0 {
				if err := pmcp.AddTool(b.s, &pmcp.Tool{Name: name, Description: "Appears and disappears."},
					func(ctx context.Context, _ *pmcp.RequestHandlerExtra, _ noArgs) (string, error) {
						return "transient", nil
					}); err != nil {
					return "", err
				}
			}
			return "tool list changed", nil
		}))
	b.check(pmcp.AddTool(b.s, &pmcp.Tool{Name: "test_trigger_prompt_change", Description: "Changes the prompt list (list_changed)."},
		func(ctx context.Context, _ *pmcp.RequestHandlerExtra, _ noArgs) (string, error) {
			const name = "__transient_prompt_for_list_changed"
			if b.s.RemovePrompts(name) == 0 {
				if err := b.s.AddPrompt(&pmcp.Prompt{Name: name, Description: "Appears and disappears."}, simplePrompt("transient")); err != nil {
					return "", err
				}
			}
			return "prompt list changed", nil
		}))
	b.check(b.s.AddRawTool(&pmcp.Tool{
		Name:        "test_x_mcp_header",
		Description: "Mirrors the region argument into the Mcp-Param-Region header.",
		InputSchema: jsontext.Value(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"level":{"type":"integer"}},"required":["region"]}`),
	}, func(ctx context.Context, _ *pmcp.RequestHandlerExtra, p *pmcp.CallToolParams) (*pmcp.CallToolResult, error) {
		return &pmcp.CallToolResult{Content: []pmcp.Content{pmcp.Text("arguments: " + string(p.Arguments))}}, nil
	}))
	b.check(pmcp.AddTool(b.s, &pmcp.Tool{Name: "echo", Description: "Echoes its text."},
		func(ctx context.Context, _ *pmcp.RequestHandlerExtra, in struct {
			Text string `json:"text"`
		}) (string, error) {
			return in.Text, nil
		}))
	b.check(pmcp.AddTool(b.s, &pmcp.Tool{Name: "add", Description: "Adds two integers."},
		func(ctx context.Context, _ *pmcp.RequestHandlerExtra, in addArgs) (addResult, error) {
			sum := in.A + in.B
			// Two's complement wrap-around: both addends have the same sign
			// and the sum's sign differs from it.
			if (in.A >= 0) == (in.B >= 0) && (sum >= 0) != (in.A >= 0) {
				return addResult{}, errAddOverflow
			}
			return addResult{Sum: sum}, nil
		}))
	b.check(pmcp.AddTool(b.s, &pmcp.Tool{Name: "panic", Description: "Panics, to show that a panicking handler becomes a JSON-RPC error."},
		func(ctx context.Context, _ *pmcp.RequestHandlerExtra, _ noArgs) (string, error) {
			panic("deliberate panic from the panic tool")
		}))
}

// errAddOverflow is the add tool's answer (a result with isError) when the
// sum does not fit in an int64.
var errAddOverflow = errors.New("add: the sum overflows a 64-bit integer")

type addArgs struct {
	A int64 `json:"a" jsonschema:"first addend"`
	B int64 `json:"b" jsonschema:"second addend"`
}

type addResult struct {
	Sum int64 `json:"sum"`
}

func simplePrompt(text string) pmcp.PromptHandler {
	return func(ctx context.Context, _ *pmcp.RequestHandlerExtra, _ *pmcp.GetPromptParams) (*pmcp.GetPromptResult, error) {
		return &pmcp.GetPromptResult{Messages: []*pmcp.PromptMessage{{Role: "user", Content: pmcp.Text(text)}}}, nil
	}
}

func (b *builder) resources() {
	static := func(r *pmcp.Resource, c *pmcp.ResourceContents) {
		b.check(b.s.AddResource(r, func(ctx context.Context, _ *pmcp.RequestHandlerExtra, req *pmcp.ResourceRequest) (*pmcp.ReadResourceResult, error) {
			return &pmcp.ReadResourceResult{Contents: []*pmcp.ResourceContents{c}}, nil
		}))
	}
	static(&pmcp.Resource{URI: "test://static-text", Name: "static-text", Description: "A static text resource", MIMEType: "text/plain"},
		&pmcp.ResourceContents{URI: "test://static-text", MIMEType: "text/plain", Text: "This is the content of the static text resource."})
	static(&pmcp.Resource{URI: "test://static-binary", Name: "static-binary", Description: "A static binary resource (PNG)", MIMEType: "image/png"},
		&pmcp.ResourceContents{URI: "test://static-binary", MIMEType: "image/png", Blob: pngBase64})
	static(&pmcp.Resource{URI: "test://watched-resource", Name: "watched-resource", Description: "A resource clients can subscribe to", MIMEType: "text/plain"},
		&pmcp.ResourceContents{URI: "test://watched-resource", MIMEType: "text/plain", Text: "Watched resource content"})
	b.check(b.s.AddResourceTemplate(&pmcp.ResourceTemplate{URITemplate: "test://template/{id}/data", Name: "template", Description: "A templated resource", MIMEType: "application/json"},
		func(ctx context.Context, _ *pmcp.RequestHandlerExtra, req *pmcp.ResourceRequest) (*pmcp.ReadResourceResult, error) {
			id := req.Vars["id"]
			body := mustJSON(map[string]any{"id": id, "templateTest": true, "data": "Data for ID: " + id})
			return &pmcp.ReadResourceResult{Contents: []*pmcp.ResourceContents{{URI: req.URI, MIMEType: "application/json", Text: body}}}, nil
		}))
}

func (b *builder) prompts() {
	b.check(b.s.AddPrompt(&pmcp.Prompt{Name: "test_simple_prompt", Description: "A prompt without arguments."},
		simplePrompt("This is a simple prompt for testing.")))
	b.check(b.s.AddPrompt(&pmcp.Prompt{Name: "test_prompt_with_arguments", Description: "A prompt with two required arguments.",
		Arguments: []*pmcp.PromptArgument{{Name: "arg1", Description: "First argument", Required: true}, {Name: "arg2", Description: "Second argument", Required: true}}},
		func(ctx context.Context, _ *pmcp.RequestHandlerExtra, p *pmcp.GetPromptParams) (*pmcp.GetPromptResult, error) {
			text := fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", p.Arguments["arg1"], p.Arguments["arg2"])
			return &pmcp.GetPromptResult{Messages: []*pmcp.PromptMessage{{Role: "user", Content: pmcp.Text(text)}}}, nil
		}))
	b.check(b.s.AddPrompt(&pmcp.Prompt{Name: "test_prompt_with_embedded_resource", Description: "A prompt embedding a resource.",
		Arguments: []*pmcp.PromptArgument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}}},
		func(ctx context.Context, _ *pmcp.RequestHandlerExtra, p *pmcp.GetPromptParams) (*pmcp.GetPromptResult, error) {
			return &pmcp.GetPromptResult{Messages: []*pmcp.PromptMessage{
				{Role: "user", Content: &pmcp.EmbeddedResource{Resource: &pmcp.ResourceContents{URI: p.Arguments["resourceUri"], MIMEType: "text/plain", Text: "Embedded resource content for testing."}}},
				{Role: "user", Content: pmcp.Text("Please process the embedded resource above.")},
			}}, nil
		}))
	b.check(b.s.AddPrompt(&pmcp.Prompt{Name: "test_prompt_with_image", Description: "A prompt with an image."},
		func(ctx context.Context, _ *pmcp.RequestHandlerExtra, p *pmcp.GetPromptParams) (*pmcp.GetPromptResult, error) {
			return &pmcp.GetPromptResult{Messages: []*pmcp.PromptMessage{
				{Role: "user", Content: &pmcp.ImageContent{Data: pngBase64, MIMEType: "image/png"}},
				{Role: "user", Content: pmcp.Text("Please analyze the image above.")},
			}}, nil
		}))
}

var _ = base64.StdEncoding
var _ = jsonrpc.CodeInternalError
