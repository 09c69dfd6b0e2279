package everything

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
)

func elicitReq(message, schema string) *pmcp.InputRequest {
	return &pmcp.InputRequest{Method: pmcp.MethodElicitationCreate, Params: &pmcp.ElicitParams{Message: message, RequestedSchema: jsontext.Value(schema)}}
}

func sampleReq(text string, maxTokens int64) *pmcp.InputRequest {
	return &pmcp.InputRequest{Method: pmcp.MethodSamplingCreateMessage, Params: &pmcp.CreateMessageParams{
		Messages: []*pmcp.SamplingMessage{{Role: "user", Content: pmcp.Text(text)}}, MaxTokens: maxTokens}}
}

func rootsReq() *pmcp.InputRequest {
	return &pmcp.InputRequest{Method: pmcp.MethodRootsList, Params: &pmcp.ListRootsParams{}}
}

const nameSchema = `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`

// acceptedString returns content[field] of an accepted elicitation.
func acceptedString(r pmcp.InputResponses, key, field string) (string, bool) {
	e, ok := r.Elicit(key)
	if !ok || e.Action != "accept" {
		return "", false
	}
	v, ok := e.Content[field].(string)
	return v, ok
}

// mrtrTools are the modern-era tools with explicit input keys that the
// conformance suite calls.
func (b *builder) mrtrTools() {
	tool := func(name, desc string, h func(ctx context.Context, extra *pmcp.RequestHandlerExtra) (string, error)) {
		b.check(pmcp.AddTool(b.s, &pmcp.Tool{Name: name, Description: desc},
			func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ noArgs) (string, error) {
				return h(ctx, extra)
			}))
	}
	tool("test_input_required_result_elicitation", "Asks for the user's name through an input request.",
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra) (string, error) {
			if name, ok := acceptedString(extra.InputResponses(), "user_name", "name"); ok {
				return "Hello, " + name + "!", nil
			}
			return "", extra.RequireInput(map[string]*pmcp.InputRequest{"user_name": elicitReq("What is your name?", nameSchema)}, nil)
		})
	tool("test_input_required_result_sampling", "Asks the client's model a question through an input request.",
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra) (string, error) {
			if r, ok := extra.InputResponses().Sample("capital_question"); ok {
				return "The model answered: " + contentText(r.Content), nil
			}
			return "", extra.RequireInput(map[string]*pmcp.InputRequest{"capital_question": sampleReq("What is the capital of France?", 100)}, nil)
		})
	tool("test_input_required_result_list_roots", "Asks for the client's roots through an input request.",
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra) (string, error) {
			if r, ok := extra.InputResponses().Roots("client_roots"); ok {
				return "Client roots: " + rootNames(r), nil
			}
			return "", extra.RequireInput(map[string]*pmcp.InputRequest{"client_roots": rootsReq()}, nil)
		})
	tool("test_input_required_result_request_state", "Round-trips a sealed requestState and verifies it.",
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra) (string, error) {
			cont := extra.MRTRContinuation()
			if e, ok := extra.InputResponses().Elicit("confirm"); ok && cont != nil {
				return fmt.Sprintf("state-ok: continuation=%s action=%s", cont, e.Action), nil
			}
			return "", extra.RequireInput(map[string]*pmcp.InputRequest{
				"confirm": elicitReq("Please confirm", `{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`),
			}, map[string]any{"step": "confirm"})
		})
	tool("test_input_required_result_multiple_inputs", "Asks for three inputs in one round.",
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra) (string, error) {
			r := extra.InputResponses()
			name, okName := acceptedString(r, "user_name", "name")
			greet, okGreet := r.Sample("greeting")
			roots, okRoots := r.Roots("client_roots")
			if okName && okGreet && okRoots {
				return fmt.Sprintf("name=%s greeting=%s roots=%s", name, contentText(greet.Content), rootNames(roots)), nil
			}
			return "", extra.RequireInput(map[string]*pmcp.InputRequest{
				"user_name":    elicitReq("What is your name?", nameSchema),
				"greeting":     sampleReq("Write a short greeting.", 50),
				"client_roots": rootsReq(),
			}, map[string]any{"round": "multiple"})
		})
	tool("test_input_required_result_multi_round", "Asks for a name, then a colour, over two rounds.",
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra) (string, error) {
			var state struct {
				Round int    `json:"round"`
				Name  string `json:"name"`
			}
			if c := extra.MRTRContinuation(); c != nil {
				_ = pmcp.Unmarshal(c, &state)
			}
			r := extra.InputResponses()
			switch state.Round {
			case 1:
				if name, ok := acceptedString(r, "step1", "name"); ok {
					return "", extra.RequireInput(map[string]*pmcp.InputRequest{
						"step2": elicitReq("What is your favourite colour?", `{"type":"object","properties":{"color":{"type":"string"}},"required":["color"]}`),
					}, map[string]any{"round": 2, "name": name})
				}
			case 2:
				if color, ok := acceptedString(r, "step2", "color"); ok {
					return fmt.Sprintf("%s likes %s", state.Name, color), nil
				}
				return "", extra.RequireInput(map[string]*pmcp.InputRequest{
					"step2": elicitReq("What is your favourite colour?", `{"type":"object","properties":{"color":{"type":"string"}},"required":["color"]}`),
				}, state)
			}
			return "", extra.RequireInput(map[string]*pmcp.InputRequest{"step1": elicitReq("What is your name?", nameSchema)}, map[string]any{"round": 1})
		})
	tool("test_input_required_result_tampered_state", "Issues a requestState; a tampered one is rejected by the SDK.",
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra) (string, error) {
			if extra.MRTRContinuation() != nil {
				if e, ok := extra.InputResponses().Elicit("confirm"); ok {
					return "state verified: " + e.Action, nil
				}
			}
			return "", extra.RequireInput(map[string]*pmcp.InputRequest{
				"confirm": elicitReq("Please confirm", `{"type":"object","properties":{"ok":{"type":"boolean"}}}`),
			}, map[string]any{"issued": true})
		})
	tool("test_input_required_result_capabilities", "Only asks for the input kinds the client declared.",
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra) (string, error) {
			r := extra.InputResponses()
			if len(r) > 0 {
				keys := make([]string, 0, len(r))
				for k := range r {
					keys = append(keys, k)
				}
				return "answered: " + strings.Join(keys, ","), nil
			}
			caps := extra.ClientCapabilities()
			reqs := map[string]*pmcp.InputRequest{}
			if caps != nil && caps.Elicitation != nil {
				reqs["user_name"] = elicitReq("What is your name?", nameSchema)
			}
			if caps != nil && caps.Sampling != nil {
				reqs["greeting"] = sampleReq("Write a short greeting.", 50)
			}
			if caps != nil && caps.Roots != nil {
				reqs["client_roots"] = rootsReq()
			}
			if len(reqs) == 0 {
				return "", &pmcp.MissingCapabilityError{Required: map[string]any{"elicitation": map[string]any{}}}
			}
			return "", extra.RequireInput(reqs, nil)
		})
	b.check(b.s.AddPrompt(&pmcp.Prompt{Name: "test_input_required_result_prompt", Description: "A prompt that needs context from the user first."},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, p *pmcp.GetPromptParams) (*pmcp.GetPromptResult, error) {
			if c, ok := acceptedString(extra.InputResponses(), "user_context", "context"); ok {
				return &pmcp.GetPromptResult{Messages: []*pmcp.PromptMessage{{Role: "user", Content: pmcp.Text("Context from the user: " + c)}}}, nil
			}
			return nil, extra.RequireInput(map[string]*pmcp.InputRequest{
				"user_context": elicitReq("What context should the prompt use?", `{"type":"object","properties":{"context":{"type":"string"}},"required":["context"]}`),
			}, nil)
		}))
}

func rootNames(r *pmcp.ListRootsResult) string {
	names := make([]string, 0, len(r.Roots))
	for _, x := range r.Roots {
		n := x.Name
		if n == "" {
			n = x.URI
		}
		names = append(names, n+" ("+x.URI+")")
	}
	return strings.Join(names, ", ")
}
