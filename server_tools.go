package pmcp

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/internal/schema"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// ToolHandler serves tools/call for a raw tool. Arguments arrive already
// validated against the tool's input schema.
type ToolHandler func(ctx context.Context, extra *RequestHandlerExtra, p *CallToolParams) (*CallToolResult, error)

// TypedToolHandler serves a typed tool: In is decoded from the validated
// arguments; Out becomes the result as AddTool describes (an object type:
// structuredContent, checked against the inferred output schema, plus a
// JSON text block; a string: one text block).
//
// An error return becomes a result with isError:true whose text is the
// error message, so the model can correct itself. Protocol errors pass
// through instead: a *jsonrpc.Error, an error matching ErrInputRequired
// (modern-era input request) and a *MissingCapabilityError.
type TypedToolHandler[In, Out any] func(ctx context.Context, extra *RequestHandlerExtra, in In) (Out, error)

type serverTool struct {
	tool    *Tool
	input   *schema.Compiled
	output  *schema.Compiled
	handler ToolHandler
	// headers is the x-mcp-header mapping of the input schema, computed
	// once here for the Streamable HTTP transport (see headers_params.go).
	headers []paramBinding
	// flat is the fast acceptance check of simple input schemas, nil for
	// other schemas (see tools_validate.go).
	flat *flatSchema
	// scopes is the registration's copy of Tool.Scopes.
	scopes []string
}

// AddRawTool registers a tool whose InputSchema (and optional OutputSchema)
// are supplied as JSON by the caller and emitted verbatim. Arguments are
// validated against InputSchema before h runs. A tool with the same name is
// replaced. Clients are told through notifications/tools/list_changed.
func (s *Server) AddRawTool(t *Tool, h ToolHandler) error {
	if t == nil || h == nil {
		return regErr("nil tool or handler")
	}
	if !validToolName(t.Name) {
		return regErr("tool name %q must be 1-128 characters of [A-Za-z0-9_.-]", t.Name)
	}
	if len(t.InputSchema) == 0 {
		return regErr("tool %q has no input schema", t.Name)
	}
	in, err := schema.Compile(t.InputSchema, schema.CompileOptions{Label: "arguments"})
	if err != nil {
		return regErr("tool %q input schema: %v", t.Name, err)
	}
	headers, err := paramBindingsOf(t.InputSchema)
	if err != nil {
		return regErr("tool %q input schema: %v", t.Name, err)
	}
	scopes, err := checkScopes("tool "+t.Name, t.Scopes)
	if err != nil {
		return err
	}
	if t, err = s.appTool(t); err != nil {
		return err
	}
	st := &serverTool{tool: t, input: in, handler: h, headers: headers, flat: compileFlat(t.InputSchema), scopes: scopes}
	if len(t.OutputSchema) > 0 {
		out, err := schema.Compile(t.OutputSchema, schema.CompileOptions{Label: "structuredContent"})
		if err != nil {
			return regErr("tool %q output schema: %v", t.Name, err)
		}
		st.output = out
	}
	s.putTool(st)
	return nil
}

// AddTool registers a typed tool. The input schema is inferred from In (it
// must be a struct, a map with string keys, or any); both schemas are
// inferred once, here. If t already carries an InputSchema (OutputSchema)
// it is used verbatim instead of the inferred one. The jsonschema struct tag
// gives a field's description or JSON Schema keywords (enum, minimum,
// pattern, default, ...; see the README's "Typed tools"); a tag that does not
// fit its field's type is a registration error.
//
// What the handler returns decides the result:
//
//   - A JSON object type (a struct, a map with string keys such as
//     map[string]any, a named one, or a pointer to one): the tool lists an
//     object outputSchema inferred from Out, and each result carries the
//     value as structuredContent (checked against that schema; a mismatch,
//     or a nil pointer, is an internal error) plus the same JSON as one
//     text block.
//   - string: one text block holding the string as is; no outputSchema, no
//     structuredContent.
//   - *CallToolResult: sent as returned; no outputSchema.
//   - an interface type (such as any) or a map with non-string keys: no
//     inferred outputSchema (for an interface, t.OutputSchema, if set, is
//     listed and enforced); a value that encodes as a JSON object is sent
//     as structuredContent plus a text block, any other value as one text
//     block of its JSON.
//   - anything else (slices, arrays, numbers, booleans): one text block of
//     the value's JSON, no structuredContent, since MCP requires
//     structuredContent to be an object. To get structured output, return a
//     struct that holds the value.
func AddTool[In, Out any](s *Server, t *Tool, h TypedToolHandler[In, Out]) error {
	if t == nil || h == nil {
		return regErr("nil tool or handler")
	}
	tool := *t
	var in *schema.Compiled
	var err error
	if len(tool.InputSchema) > 0 {
		in, err = schema.Compile(tool.InputSchema, schema.CompileOptions{Label: "arguments"})
	} else {
		in, err = schema.For[In](schema.ForOptions{Label: "arguments"})
	}
	if err != nil {
		return regErr("tool %q input schema: %v", tool.Name, err)
	}
	tool.InputSchema = in.JSON()
	var out *schema.Compiled
	if ot := reflect.TypeFor[Out](); isObjectType(ot) || ot.Kind() == reflect.Interface && len(tool.OutputSchema) > 0 {
		if len(tool.OutputSchema) > 0 {
			out, err = schema.Compile(tool.OutputSchema, schema.CompileOptions{Label: "structuredContent"})
		} else {
			out, err = schema.For[Out](schema.ForOptions{Label: "structuredContent"})
		}
		if err != nil {
			return regErr("tool %q output schema: %v", tool.Name, err)
		}
		tool.OutputSchema = out.JSON()
	}
	if !validToolName(tool.Name) {
		return regErr("tool name %q must be 1-128 characters of [A-Za-z0-9_.-]", tool.Name)
	}
	raw := func(ctx context.Context, extra *RequestHandlerExtra, p *CallToolParams) (*CallToolResult, error) {
		var v In
		args := p.Arguments
		if len(args) == 0 || string(args) == "null" {
			args = jsontext.Value("{}")
		}
		if err := json.Unmarshal(args, &v); err != nil {
			return toolError(fmt.Sprintf("invalid arguments for tool %q: %v", p.Name, err)), nil
		}
		res, err := h(ctx, extra, v)
		if err != nil {
			return nil, err
		}
		// The common result types are converted without boxing res.
		switch r := any(&res).(type) {
		case *string:
			return textResult(*r), nil
		case **CallToolResult:
			return *r, nil
		}
		return typedResult(res, out)
	}
	headers, err := paramBindingsOf(tool.InputSchema)
	if err != nil {
		return regErr("tool %q input schema: %v", tool.Name, err)
	}
	scopes, err := checkScopes("tool "+tool.Name, tool.Scopes)
	if err != nil {
		return err
	}
	tp, err := s.appTool(&tool)
	if err != nil {
		return err
	}
	st := &serverTool{tool: tp, input: in, output: out, handler: raw, headers: headers, flat: compileFlat(tool.InputSchema), scopes: scopes}
	s.putTool(st)
	return nil
}

// isObjectType reports whether a typed tool's output type always encodes
// as a JSON object whose schema can be inferred: a struct or a map with
// string keys, or a pointer to one. A handler returning a whole
// CallToolResult has no output schema. (Maps with other keys encode as
// objects too, but have no inferred schema: typedResult finds their
// objects at run time.)
func isObjectType(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		return t != reflect.TypeFor[CallToolResult]()
	case reflect.Map:
		return t.Key().Kind() == reflect.String
	}
	return false
}

// typedResult builds the CallToolResult of a typed tool (see AddTool):
// with an output schema, v is checked and becomes structuredContent;
// without one, v becomes structuredContent if it encodes as an object.
func typedResult(v any, out *schema.Compiled) (*CallToolResult, error) {
	switch r := v.(type) {
	case *CallToolResult:
		return r, nil
	case CallToolResult:
		return &r, nil
	case string:
		return textResult(r), nil
	case nil:
		return &CallToolResult{Content: []Content{}}, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("pmcp: marshal tool output: %w", err)
	}
	res := &CallToolResult{Content: []Content{Text(string(b))}}
	if out != nil {
		if err := out.ValidateJSON(b); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "tool output does not match its output schema: " + err.Error()}
		}
		res.StructuredContent = jsontext.Value(b)
	} else if jsontext.Value(b).Kind() == '{' {
		res.StructuredContent = jsontext.Value(b)
	}
	return res, nil
}

// textResult returns a result of one text block, allocated at once.
func textResult(text string) *CallToolResult {
	r := new(struct {
		res     CallToolResult
		content [1]Content
		text    TextContent
	})
	r.text = TextContent{Text: text}
	r.content[0] = &r.text
	r.res.Content = r.content[:]
	return &r.res
}

func toolError(msg string) *CallToolResult {
	return &CallToolResult{Content: []Content{Text(msg)}, IsError: true}
}

func (s *Server) putTool(st *serverTool) {
	s.noteScoped(st.scopes)
	s.mu.Lock()
	s.tools.put(st.tool.Name, st)
	s.mu.Unlock()
	s.notifyListChanged(listTools)
}

// RemoveTools unregisters tools by name and reports how many were removed.
func (s *Server) RemoveTools(names ...string) int {
	s.mu.Lock()
	n := s.tools.remove(names...)
	s.mu.Unlock()
	if n > 0 {
		s.notifyListChanged(listTools)
	}
	return n
}

// callTool runs tools/call. The tool is the one the transport looked up
// (rs.tool) when the request, possibly changed by a middleware, still
// names it; it is looked up otherwise.
func (s *Server) callTool(ctx context.Context, extra *RequestHandlerExtra, rs *reqState, p *CallToolParams) (Result, error) {
	st := rs.tool
	if st == nil || st.tool.Name != p.Name {
		var ok bool
		if st, ok = s.tools.get(p.Name); !ok {
			return nil, unknownTool(p.Name)
		}
	}
	if err := authorize(extra, st.scopes); err != nil {
		return nil, err
	}
	return s.runTool(ctx, extra, st, p)
}

// runTool validates the arguments and runs the tool's handler: the part
// of tools/call shared by synchronous calls and task runners.
func (s *Server) runTool(ctx context.Context, extra *RequestHandlerExtra, st *serverTool, p *CallToolParams) (Result, error) {
	args := p.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = jsontext.Value("{}")
	}
	if args.Kind() != '{' {
		return nil, invalidParams("tools/call arguments must be an object")
	}
	if st.flat == nil || !st.flat.accepts(args) {
		if err := st.input.ValidateJSON(args); err != nil {
			return toolError(fmt.Sprintf("invalid arguments for tool %q: %v", p.Name, err)), nil
		}
	}
	res, err := st.handler(ctx, extra, p)
	if err != nil {
		if isProtocolError(err) {
			return nil, err
		}
		return toolError(err.Error()), nil
	}
	if res == nil {
		return &CallToolResult{}, nil
	}
	// Normalized by finishResult, in the request's copy: res may be
	// shared between requests.
	return res, nil
}

// isJSONObject reports whether v encodes as a JSON object.
func isJSONObject(v any) bool {
	switch x := v.(type) {
	case jsontext.Value:
		return x.Kind() == '{'
	case map[string]any:
		return true
	}
	b, err := Marshal(v)
	return err == nil && jsontext.Value(b).Kind() == '{'
}

// isProtocolError reports errors that must reach the client as JSON-RPC
// errors (or input_required results) rather than isError tool results.
func isProtocolError(err error) bool {
	var re *jsonrpc.Error
	var ir *inputRequiredError
	var mc *MissingCapabilityError
	var ue *URLElicitationRequiredError
	return errors.As(err, &re) || errors.As(err, &ir) || errors.As(err, &mc) || errors.As(err, &ue)
}
