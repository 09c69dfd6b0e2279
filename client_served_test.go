package pmcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// clientServedParams are the params shapes a server sends the client.
var clientServedParams = []struct {
	label  string
	params jsontext.Value // nil: no params member
}{
	{"absent", nil},
	{"{}", jsontext.Value(`{}`)},
	{"taskId=nope", jsontext.Value(`{"taskId":"nope"}`)},
	{"message", jsontext.Value(`{"message":"?","requestedSchema":{"type":"object","properties":{}},"messages":[],"maxTokens":5}`)},
	{"message+task", jsontext.Value(`{"message":"?","requestedSchema":{"type":"object","properties":{}},"messages":[],"maxTokens":5,"task":{"ttl":60000}}`)},
	{"url-mode", jsontext.Value(`{"mode":"url","message":"?","url":"https://example.com/x","elicitationId":"e1"}`)},
	{"tools", jsontext.Value(`{"messages":[],"maxTokens":5,"tools":[{"name":"t","inputSchema":{"type":"object"}}]}`)},
}

// TestClientServedMethods records, for every method name, what the client
// answers the server: as a server-to-client request on a connection in
// each era (with the input handlers or none, hosting tasks or not), as a
// modern input request (serveInput), and which capability
// checkInputCapability requires of it. These are the facts of the client
// handler column of the method table (issue 19, step M7); the golden was
// recorded before that step, from the switches it replaced.
func TestClientServedMethods(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var lines []string
	configs := []struct {
		label string
		opts  ClientOptions
	}{
		{"none", ClientOptions{}},
		{"handlers", inputHandlers(ClientOptions{})},
		{"handlers+host", inputHandlers(ClientOptions{HostTasks: true})},
	}
	for _, era := range []Era{EraLegacy, EraModern} {
		for _, cfg := range configs {
			var f *fakeServer
			var st jsonrpc.Stream
			if era == EraLegacy {
				f, st = startFake(t, legacyHandler(Version20251125, nil))
			} else {
				f, st = startFake(t, func(ctx context.Context, req *jsonrpc.Request) (any, error) {
					if req.Method == MethodDiscover {
						return modernDiscover, nil
					}
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "nope"}
				})
			}
			opts := cfg.opts
			opts.Era = era
			s := connectClient(t, NewClient(opts), st)
			for _, m := range factMethods {
				for _, p := range clientServedParams {
					var params any
					if p.params != nil {
						params = p.params
					}
					raw, err := f.conn.Call(ctx, m, params)
					lines = append(lines, fmt.Sprintf("request %-24s %-6s %-13s %-12s -> %s", m, era, cfg.label, p.label, servedOutcome(raw, err)))
					if era == EraLegacy {
						res, err := s.serveInput(ctx, m, p.params)
						lines = append(lines, fmt.Sprintf("input   %-24s %-13s %-12s -> %s", m, cfg.label, p.label, inputOutcome(res, err)))
					}
				}
			}
		}
	}
	for _, m := range factMethods {
		for _, p := range clientServedParams {
			var params any
			if p.params != nil {
				params = p.params
			}
			for _, caps := range []struct {
				label string
				caps  *ClientCapabilities
			}{
				{"nil", nil},
				{"all", &ClientCapabilities{
					Sampling:    &SamplingCapability{Tools: map[string]any{}, Context: map[string]any{}},
					Elicitation: &ElicitationCapability{Form: map[string]any{}, URL: map[string]any{}},
					Roots:       &RootsCapability{},
				}},
			} {
				err := checkInputCapability(caps.caps, &InputRequest{Method: m, Params: params})
				lines = append(lines, fmt.Sprintf("caps    %-24s %-4s %-12s -> %s", m, caps.label, p.label, capOutcome(err)))
			}
		}
	}
	checkGolden(t, "client_served.golden", lines)
}

// servedOutcome is the JSON-RPC code of the client's answer, or the result
// with the parts that change from run to run (task ids, times) left out.
func servedOutcome(raw jsontext.Value, err error) string {
	var re *jsonrpc.Error
	switch {
	case errors.As(err, &re):
		return fmt.Sprintf("%d %q", re.Code, re.Message)
	case err != nil:
		return "error " + err.Error()
	}
	var m map[string]jsontext.Value
	if Unmarshal(raw, &m) != nil {
		return "result " + string(raw)
	}
	if t, ok := m["task"]; ok {
		var w wireTask
		_ = Unmarshal(t, &w)
		return "result task status=" + w.Status
	}
	return "result " + string(canonicalJSON(raw))
}

func inputOutcome(res any, err error) string {
	switch {
	case errors.Is(err, ErrNoInputHandler):
		return "ErrNoInputHandler " + err.Error()
	case errors.Is(err, ErrMalformedInputRequest):
		return "ErrMalformedInputRequest " + err.Error()
	case err != nil:
		return "error " + err.Error()
	}
	b, err := Marshal(res)
	if err != nil {
		return "unencodable " + err.Error()
	}
	return "result " + string(canonicalJSON(b))
}

func capOutcome(err error) string {
	var mc *MissingCapabilityError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &mc):
		b, _ := Marshal(mc.Required)
		return "missing " + string(b)
	}
	return "error " + strings.TrimSpace(err.Error())
}
