package pmcp

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/jsonrpc"
	"github.com/gopmcp/pmcp/reqstate"
)

// InputResponses are the client's answers to a previous round's
// inputRequests, keyed as the server keyed the requests. Every value came
// off the wire: it is bounded and shape-checked (each is an elicitation,
// sampling or roots result) but NOT validated against the schema the
// handler asked for. Validate before acting on it.
type InputResponses map[string]jsontext.Value

// Elicit decodes the response under key as an elicitation result.
func (r InputResponses) Elicit(key string) (*ElicitResult, bool) {
	raw, ok := r[key]
	if !ok {
		return nil, false
	}
	var v ElicitResult
	if Unmarshal(raw, &v) != nil || !validAction(v.Action) {
		return nil, false
	}
	return &v, true
}

// Sample decodes the response under key as a sampling result.
func (r InputResponses) Sample(key string) (*CreateMessageResult, bool) {
	raw, ok := r[key]
	if !ok {
		return nil, false
	}
	var v CreateMessageResult
	if Unmarshal(raw, &v) != nil || v.Content == nil {
		return nil, false
	}
	return &v, true
}

// Roots decodes the response under key as a roots result.
func (r InputResponses) Roots(key string) (*ListRootsResult, bool) {
	raw, ok := r[key]
	if !ok {
		return nil, false
	}
	var v ListRootsResult
	if Unmarshal(raw, &v) != nil || v.Roots == nil {
		return nil, false
	}
	return &v, true
}

func validAction(a string) bool { return a == "accept" || a == "decline" || a == "cancel" }

// inputRequiredError ends a modern-era call with an input_required result.
// Handlers get one from RequireInput or from a Peer call that has no answer
// yet, and should return it unchanged. errors.Is(err, ErrInputRequired)
// holds for it.
type inputRequiredError struct {
	Requests     map[string]*InputRequest
	Continuation jsontext.Value
}

// ErrInputRequired matches, under errors.Is, the error that ends a
// modern-era call with an input_required result: RequireInput returns one,
// and so does a Peer call that has no answer yet. A handler returns it
// unchanged.
var ErrInputRequired = errors.New("pmcp: input required from the client")

func (e *inputRequiredError) Error() string {
	return "pmcp: input required from the client (" + strconv.Itoa(len(e.Requests)) + " requests)"
}

// Is makes errors.Is(err, ErrInputRequired) true.
func (e *inputRequiredError) Is(target error) bool { return target == ErrInputRequired }

// MissingCapabilityError reports that the request cannot proceed because the
// client did not declare a capability. It becomes JSON-RPC error -32021
// (MissingRequiredClientCapability) with data.requiredCapabilities.
type MissingCapabilityError struct {
	Required map[string]any
}

func (e *MissingCapabilityError) Error() string {
	names := make([]string, 0, len(e.Required))
	for k := range e.Required {
		names = append(names, k)
	}
	return fmt.Sprintf("pmcp: client did not declare required capabilities %v", names)
}

// rpcError converts to the wire error.
func (e *MissingCapabilityError) rpcError() *jsonrpc.Error {
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": e.Required}, json.Deterministic(true))
	return &jsonrpc.Error{Code: jsonrpc.CodeMissingRequiredClientCapability, Message: "Missing required client capability", Data: data}
}

// mrtrIn is the multi-round-trip state of one modern request.
type mrtrIn struct {
	// From the wire / the verified token.
	responses    InputResponses
	answers      map[string]jsontext.Value // accumulated answers for auto keys
	continuation jsontext.Value
	round        uint8
	verified     bool

	// Produced by this run.
	mu      sync.Mutex
	seq     int
	pending map[string]*InputRequest
}

// emptyObjectSchema is the requestedSchema of a form elicitation that did
// not give one: the schema requires the member in form mode.
var emptyObjectSchema = jsontext.Value(`{"type":"object","properties":{}}`)

// normalizeElicit returns p with a requestedSchema in form mode, copying
// rather than mutating the caller's value.
func normalizeElicit(p *ElicitParams) *ElicitParams {
	if p == nil {
		return &ElicitParams{RequestedSchema: emptyObjectSchema}
	}
	if p.Mode != "url" && len(p.RequestedSchema) == 0 {
		cp := *p
		cp.RequestedSchema = emptyObjectSchema
		return &cp
	}
	return p
}

// checkInputCapability is the one capability check of server-to-client
// input, shared by both eras: the legacy peer runs it before it sends a
// request, the modern era before an input request goes into inputRequests.
// It returns nil when caps cover r, or a *MissingCapabilityError naming
// everything r needs that caps lack:
//
//   - elicitation/create: elicitation, plus url for URL mode; form mode
//     needs form, which an empty elicitation object implies.
//   - sampling/createMessage: sampling, plus tools when tools or
//     toolChoice is set, plus context when includeContext is set and not
//     "none".
//   - roots/list: roots.
//
// Which capability a method needs is its row's (method_table.go); what
// each capability's sub-capabilities require is checked here. A method
// whose row is no request for input is refused.
//
// It gives a form elicitation's params a requestedSchema (see
// normalizeElicit).
func checkInputCapability(caps *ClientCapabilities, r *InputRequest) error {
	if caps == nil {
		caps = &ClientCapabilities{}
	}
	var need capability
	if row := methodOf(r.Method); row != nil && row.capability.input() {
		need = row.capability
	}
	switch need {
	case capElicitation:
		var mode string
		if p, ok := r.Params.(*ElicitParams); ok {
			r.Params = normalizeElicit(p)
			if p != nil {
				mode = p.Mode
			}
		} else {
			mode = probeInput(r.Params).Mode
		}
		c := caps.Elicitation
		switch {
		case mode == "url" && !c.SupportsURL():
			return missingCap("elicitation", "url")
		case mode != "url" && c == nil:
			return missingCap("elicitation")
		case mode != "url" && !c.SupportsForm():
			return missingCap("elicitation", "form")
		}
	case capSampling:
		var pr inputProbe
		if p, ok := r.Params.(*CreateMessageParams); ok {
			if p != nil {
				pr = inputProbe{IncludeContext: p.IncludeContext, tools: len(p.Tools) > 0 || p.ToolChoice != nil}
			}
		} else {
			pr = probeInput(r.Params)
		}
		c := caps.Sampling
		var subs []string
		if pr.tools && (c == nil || c.Tools == nil) {
			subs = append(subs, "tools")
		}
		if pr.IncludeContext != "" && pr.IncludeContext != "none" && (c == nil || c.Context == nil) {
			subs = append(subs, "context")
		}
		if c == nil || len(subs) > 0 {
			return missingCap("sampling", subs...)
		}
	case capRoots:
		if caps.Roots == nil {
			return missingCap("roots")
		}
	default:
		return fmt.Errorf("pmcp: %q cannot be an input request", r.Method)
	}
	return nil
}

// missingCap builds the error requiring capability name with the given
// sub-capabilities, each an empty object.
func missingCap(name string, subs ...string) *MissingCapabilityError {
	m := make(map[string]any, len(subs))
	for _, s := range subs {
		m[s] = map[string]any{}
	}
	return &MissingCapabilityError{Required: map[string]any{name: m}}
}

// inputProbe is what checkInputCapability reads from params of another Go
// type than the SDK's (a map, raw JSON): it sees them as they will be
// encoded.
type inputProbe struct {
	Mode           string         `json:"mode"`
	IncludeContext string         `json:"includeContext"`
	Tools          jsontext.Value `json:"tools"`
	ToolChoice     jsontext.Value `json:"toolChoice"`
	tools          bool
}

func probeInput(params any) inputProbe {
	var pr inputProbe
	if params == nil {
		return pr
	}
	b, err := Marshal(params)
	if err == nil {
		err = json.Unmarshal(b, &pr)
	}
	if err != nil {
		// Unreadable params cannot be checked: require everything they
		// might use rather than let them through.
		return inputProbe{Mode: "url", IncludeContext: "allServers", tools: true}
	}
	pr.tools = (len(pr.Tools) > 0 && string(pr.Tools) != "null") || (len(pr.ToolChoice) > 0 && string(pr.ToolChoice) != "null")
	return pr
}

// modernInput returns r as the 2026-07-28 schema has it: an input request
// is no JSON-RPC request, so its params have no _meta, and a URL-mode
// elicitation carries no elicitationId there. Copies are made; the
// caller's params are not changed.
func modernInput(r *InputRequest) *InputRequest {
	switch p := r.Params.(type) {
	case *ElicitParams:
		if p != nil && (p.ElicitationID != "" || p.Meta != nil) {
			cp := *p
			cp.ElicitationID, cp.Meta = "", nil
			return &InputRequest{Method: r.Method, Params: &cp}
		}
	case *CreateMessageParams:
		if p != nil && p.Meta != nil {
			cp := *p
			cp.Meta = nil
			return &InputRequest{Method: r.Method, Params: &cp}
		}
	}
	return r
}

// mrtrPeer is the modern-era Peer: answers come from inputResponses (and
// answers accumulated in the requestState); a missing answer ends the call
// with input_required.
type mrtrPeer struct {
	extra  *RequestHandlerExtra
	notify func(ctx context.Context, method string, params any) error
}

func (p *mrtrPeer) ask(method string, params any) (jsontext.Value, error) {
	in := p.extra.mrtr
	req := &InputRequest{Method: method, Params: params}
	if err := checkInputCapability(p.extra.ClientCapabilities(), req); err != nil {
		return nil, err
	}
	req = modernInput(req)
	in.mu.Lock()
	in.seq++
	key := autoKeyPrefix + strconv.Itoa(in.seq)
	if raw, ok := in.answers[key]; ok {
		in.mu.Unlock()
		return raw, nil
	}
	if in.pending == nil {
		in.pending = make(map[string]*InputRequest)
	}
	in.pending[key] = req
	reqs := maps.Clone(in.pending)
	in.mu.Unlock()
	return nil, &inputRequiredError{Requests: reqs}
}

const autoKeyPrefix = "pmcp-input-"

func (p *mrtrPeer) Sample(ctx context.Context, params *CreateMessageParams) (*CreateMessageResult, error) {
	raw, err := p.ask(MethodSamplingCreateMessage, params)
	if err != nil {
		return nil, err
	}
	var v CreateMessageResult
	if err := Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("pmcp: client's sampling answer: %w", err)
	}
	return &v, nil
}

func (p *mrtrPeer) ListRoots(ctx context.Context) (*ListRootsResult, error) {
	raw, err := p.ask(MethodRootsList, &ListRootsParams{})
	if err != nil {
		return nil, err
	}
	var v ListRootsResult
	if err := Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("pmcp: client's roots answer: %w", err)
	}
	return &v, nil
}

func (p *mrtrPeer) Elicit(ctx context.Context, params *ElicitParams) (*ElicitResult, error) {
	raw, err := p.ask(MethodElicitationCreate, params)
	if err != nil {
		return nil, err
	}
	var v ElicitResult
	if err := Unmarshal(raw, &v); err != nil || !validAction(v.Action) {
		return nil, fmt.Errorf("pmcp: client's elicitation answer is malformed")
	}
	return &v, nil
}

func (p *mrtrPeer) NotifyProgress(ctx context.Context, params *ProgressParams) error {
	if p.notify == nil {
		return nil
	}
	return p.notify(ctx, NotificationProgress, params)
}

// parseInputResponses bounds and shape-checks the inputResponses member.
// A null or absent member yields nil.
func parseInputResponses(raw jsontext.Value) (InputResponses, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if len(raw) > DefaultMaxInputTotalBytes {
		return nil, invalidParams("inputResponses exceeds %d bytes", DefaultMaxInputTotalBytes)
	}
	if d := jsonDepth(raw); d > defaultMaxInputDepth+1 {
		return nil, invalidParams("inputResponses nests deeper than %d", defaultMaxInputDepth)
	}
	var m map[string]jsontext.Value
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, invalidParams("inputResponses must be an object of results: %v", err)
	}
	if len(m) > DefaultMaxInputResponses {
		return nil, invalidParams("inputResponses has more than %d entries", DefaultMaxInputResponses)
	}
	for k, v := range m {
		if len(v) > DefaultMaxInputResponseBytes {
			return nil, invalidParams("inputResponses[%q] exceeds %d bytes", k, DefaultMaxInputResponseBytes)
		}
		if !validInputResponseShape(v) {
			return nil, invalidParams("inputResponses[%q] is not an elicitation, sampling or roots result", k)
		}
	}
	return InputResponses(m), nil
}

func validInputResponseShape(v jsontext.Value) bool {
	if v.Kind() != '{' {
		return false
	}
	var probe struct {
		Action  *string          `json:"action"`
		Role    *string          `json:"role"`
		Content jsontext.Value   `json:"content"`
		Model   *string          `json:"model"`
		Roots   []jsontext.Value `json:"roots"`
	}
	if json.Unmarshal(v, &probe) != nil {
		return false
	}
	switch {
	case probe.Action != nil:
		return validAction(*probe.Action)
	case probe.Role != nil:
		return len(probe.Content) > 0 && probe.Model != nil
	case probe.Roots != nil:
		return true
	}
	return false
}

// jsonDepth returns the maximum nesting depth of a JSON text.
func jsonDepth(b []byte) int {
	depth, max := 0, 0
	inStr, esc := false, false
	for _, c := range b {
		switch {
		case inStr:
			if esc {
				esc = false
			} else if c == '\\' {
				esc = true
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			depth++
			if depth > max {
				max = depth
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return max
}

func invalidParams(format string, args ...any) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// canonicalJSON re-encodes a JSON value deterministically (sorted keys), so
// that a retry whose client re-serialised the params still binds.
func canonicalJSON(raw jsontext.Value) []byte {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	b, err := json.Marshal(v, json.Deterministic(true))
	if err != nil {
		return raw
	}
	return b
}

// mrtrBinding computes what a requestState is bound to.
func mrtrBinding(principal, method string, parts ...[]byte) reqstate.Binding {
	return reqstate.Binding{Principal: principal, Method: method, ParamsDigest: reqstate.DigestParams(parts...)}
}
