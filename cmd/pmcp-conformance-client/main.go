// Command pmcp-conformance-client is the client under test of the MCP
// conformance suite (@modelcontextprotocol/conformance, client mode),
// built on the pmcp client SDK.
//
// The suite runs it once per scenario as
//
//	pmcp-conformance-client [-v] URL
//
// with the scenario name in MCP_CONFORMANCE_SCENARIO and, for some
// scenarios, JSON data in MCP_CONFORMANCE_CONTEXT. The protocol era is
// negotiated (MCP_CONFORMANCE_PROTOCOL_VERSION is only logged): a modern
// server/discover first, initialize when the server is legacy. It exits 0
// when the scenario's client side ran to the end, 1 otherwise, 2 on usage
// errors. Scenarios it has no special behaviour for connect and list the
// tools; auth/* scenarios connect with OAuth (see oauth.go), list the
// tools and call the first one.
//
// Run it through the project's runner:
//
//	scripts/conformance.sh client --suite-version 0.2.0-alpha.12 \
//	    --requirements 2025-11-25,2026-07-28 \
//	    --expected-failures conformance/baseline-client.yml -- ./pmcp-conformance-client
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
)

// scenarioTimeout bounds one scenario (the suite's own limit is 30 s).
const scenarioTimeout = 25 * time.Second

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stderr))
}

// run is main with its environment made explicit (for tests).
func run(args []string, getenv func(string) string, stderr io.Writer) int {
	fs := flag.NewFlagSet("pmcp-conformance-client", flag.ContinueOnError)
	fs.SetOutput(stderr)
	verbose := fs.Bool("v", false, "log the client's diagnostics at debug level")
	if err := fs.Parse(args); err != nil || fs.NArg() < 1 {
		fmt.Fprintln(stderr, "usage: pmcp-conformance-client [-v] URL (scenario in MCP_CONFORMANCE_SCENARIO)")
		return 2
	}
	url := fs.Arg(fs.NArg() - 1) // the suite appends the URL last
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	sc := &scenario{
		name:    getenv("MCP_CONFORMANCE_SCENARIO"),
		context: getenv("MCP_CONFORMANCE_CONTEXT"),
		url:     url,
		log:     logger,
	}
	logger.Info("conformance client", "scenario", sc.name, "url", url,
		"suite_protocol_version", getenv("MCP_CONFORMANCE_PROTOCOL_VERSION"))
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	if err := sc.run(ctx); err != nil {
		fmt.Fprintf(stderr, "pmcp-conformance-client: scenario %q: %v\n", sc.name, err)
		return 1
	}
	return 0
}

type scenario struct {
	name, context, url string
	log                *slog.Logger
	session            *pmcp.ClientSession
	// unrelatedDone records that test_mrtr_unrelated ran between the
	// rounds of test_mrtr_echo_state.
	unrelatedDone bool
}

func (sc *scenario) run(ctx context.Context) error {
	s, err := sc.connect(ctx)
	if err != nil {
		return err
	}
	sc.session = s
	defer s.Close()
	sc.log.Info("connected", "era", s.Era(), "version", s.ProtocolVersion())
	switch sc.name {
	case "initialize", "request-metadata":
		return nil // connecting is the whole scenario
	case "tools_call":
		if _, err := s.AllTools(ctx); err != nil {
			return err
		}
		return sc.callOK(ctx, "add_numbers", map[string]any{"a": 5, "b": 3})
	case "elicitation-sep1034-client-defaults":
		if _, err := s.AllTools(ctx); err != nil {
			return err
		}
		return sc.callOK(ctx, "test_client_elicitation_defaults", nil)
	case "sse-retry":
		if _, err := s.AllTools(ctx); err != nil {
			return err
		}
		return sc.callOK(ctx, "test_reconnection", nil)
	case "sep-2322-client-request-state":
		return sc.requestState(ctx)
	case "http-standard-headers":
		return sc.standardHeaders(ctx)
	case "http-custom-headers":
		return sc.customHeaders(ctx)
	case "http-invalid-tool-headers":
		return sc.callListedTools(ctx)
	case "json-schema-2020-12-preservation":
		return sc.schemaEcho(ctx)
	case "sep-2640-client-no-prefetch":
		// Listing opens no retrieval window: nothing is read.
		_, err := s.ListSkills(ctx, "")
		return err
	case "sep-2640-client-verify-digest", "sep-2640-client-verify-size", "sep-2640-client-verify-frontmatter":
		return sc.loadSkill(ctx)
	}
	if strings.HasPrefix(sc.name, "auth/") {
		// Authorized requests: list the tools and call the first one
		// (step-up scenarios demand more scope for tools/call, and
		// authorization-server-migration changes the server between two
		// authorized requests).
		tools, err := s.AllTools(ctx)
		if err != nil || len(tools) == 0 {
			return err
		}
		return sc.callOK(ctx, tools[0].Name, placeholderArgs(tools[0].InputSchema))
	}
	// json-schema-ref-no-deref and every scenario without special
	// behaviour: list the tools.
	_, err = s.AllTools(ctx)
	return err
}

func (sc *scenario) connect(ctx context.Context) (*pmcp.ClientSession, error) {
	c := pmcp.NewClient(pmcp.ClientOptions{
		Name:        "pmcp-conformance-client",
		Version:     "1.0.0",
		Elicitation: sc.elicit,
		Logger:      sc.log,
	})
	opts := pmcp.HTTPClientOptions{}
	if strings.HasPrefix(sc.name, "auth/") {
		oc, err := sc.oauthConfig()
		if err != nil {
			return nil, err
		}
		opts.Authorizer = oc
	}
	return c.ConnectHTTP(ctx, sc.url, opts)
}

// elicit accepts every form elicitation, filling in the schema's defaults
// (SEP-1034) and true for booleans without one. During the
// sep-2322-client-request-state scenario it also calls
// test_mrtr_unrelated between the two rounds of test_mrtr_echo_state.
func (sc *scenario) elicit(ctx context.Context, p *pmcp.ElicitParams) (*pmcp.ElicitResult, error) {
	if sc.name == "sep-2322-client-request-state" && !sc.unrelatedDone && sc.session != nil {
		sc.unrelatedDone = true
		if err := sc.callOK(ctx, "test_mrtr_unrelated", nil); err != nil {
			return nil, err
		}
	}
	return &pmcp.ElicitResult{Action: "accept", Content: defaultsOf(p.RequestedSchema)}, nil
}

// defaultsOf returns the content an accepting user with no opinion gives
// for a requested schema: each property's default, true for booleans.
func defaultsOf(schema jsontext.Value) map[string]any {
	var s struct {
		Properties map[string]struct {
			Type    string `json:"type"`
			Default any    `json:"default"`
		} `json:"properties"`
	}
	out := map[string]any{}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return out
	}
	for name, p := range s.Properties {
		switch {
		case p.Default != nil:
			out[name] = p.Default
		case p.Type == "boolean":
			out[name] = true
		}
	}
	return out
}

// callOK calls a tool and fails on errors and isError results.
func (sc *scenario) callOK(ctx context.Context, name string, args any) error {
	res, err := sc.session.CallTool(ctx, name, args)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if res.IsError {
		return fmt.Errorf("%s: the tool reported an error", name)
	}
	return nil
}

func (sc *scenario) requestState(ctx context.Context) error {
	if _, err := sc.session.AllTools(ctx); err != nil {
		return err
	}
	for _, tool := range []string{"test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_no_result_type"} {
		if err := sc.callOK(ctx, tool, nil); err != nil {
			return err
		}
	}
	if !sc.unrelatedDone {
		return errors.New("the server asked for no input, so test_mrtr_unrelated never ran")
	}
	return nil
}

func (sc *scenario) standardHeaders(ctx context.Context) error {
	s := sc.session
	if err := sc.callListedTools(ctx); err != nil {
		return err
	}
	resources, err := s.AllResources(ctx)
	if err != nil {
		return err
	}
	if len(resources) > 0 {
		if _, err := s.ReadResource(ctx, resources[0].URI); err != nil {
			return err
		}
	}
	prompts, err := s.AllPrompts(ctx)
	if err != nil {
		return err
	}
	if len(prompts) > 0 {
		if _, err := s.GetPrompt(ctx, prompts[0].Name, nil); err != nil {
			return err
		}
	}
	return nil
}

// callListedTools lists the tools and calls each one the client kept,
// with a placeholder for every required string argument.
func (sc *scenario) callListedTools(ctx context.Context) error {
	tools, err := sc.session.AllTools(ctx)
	if err != nil {
		return err
	}
	for _, t := range tools {
		if err := sc.callOK(ctx, t.Name, placeholderArgs(t.InputSchema)); err != nil {
			return err
		}
	}
	return nil
}

func placeholderArgs(schema jsontext.Value) map[string]any {
	var s struct {
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	args := map[string]any{}
	if json.Unmarshal(schema, &s) != nil {
		return args
	}
	for _, name := range s.Required {
		switch s.Properties[name].Type {
		case "integer", "number":
			args[name] = 1
		case "boolean":
			args[name] = true
		default:
			args[name] = "test"
		}
	}
	return args
}

// customHeaders makes the calls MCP_CONFORMANCE_CONTEXT lists, after
// listing the tools (which is where the x-mcp-header bindings come from).
func (sc *scenario) customHeaders(ctx context.Context) error {
	var c struct {
		ToolCalls []struct {
			Name      string         `json:"name"`
			Arguments jsontext.Value `json:"arguments"`
		} `json:"toolCalls"`
	}
	if err := json.Unmarshal([]byte(sc.context), &c); err != nil {
		return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
	}
	if _, err := sc.session.AllTools(ctx); err != nil {
		return err
	}
	for _, call := range c.ToolCalls {
		var args any
		if len(call.Arguments) > 0 {
			args = call.Arguments
		}
		if err := sc.callOK(ctx, call.Name, args); err != nil {
			return err
		}
	}
	return nil
}

// schemaEcho passes json_schema_2020_12_tool's inputSchema, byte for
// byte, back to json_schema_echo.
func (sc *scenario) schemaEcho(ctx context.Context) error {
	tools, err := sc.session.AllTools(ctx)
	if err != nil {
		return err
	}
	for _, t := range tools {
		if t.Name == "json_schema_2020_12_tool" {
			return sc.callOK(ctx, "json_schema_echo", map[string]jsontext.Value{"schema": t.InputSchema})
		}
	}
	return errors.New("json_schema_2020_12_tool is not listed")
}

// loadSkill lists the skills and loads the first one, which reads and
// verifies its SKILL.md and, only if that verifies, its other files. A
// verification failure is the expected outcome of the tampered scenarios.
func (sc *scenario) loadSkill(ctx context.Context) error {
	res, err := sc.session.ListSkills(ctx, "")
	if err != nil {
		return err
	}
	if len(res.Skills) == 0 {
		return errors.New("the server lists no skill")
	}
	_, err = sc.session.LoadSkill(ctx, res.Skills[0])
	if errors.Is(err, pmcp.ErrSkillVerification) {
		sc.log.Info("skill rejected", "err", err)
		return nil
	}
	return err
}
