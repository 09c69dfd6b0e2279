package pmcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/internal/peer"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// Errors of the client's request machinery; test with errors.Is.
var (
	// ErrUnexpectedResultType: a result carried a resultType the client
	// does not know, or input_required where the method does not allow it.
	ErrUnexpectedResultType = errors.New("pmcp: unexpected resultType")
	// ErrTooManyInputRounds: a modern call was still input_required after
	// ClientOptions.MaxInputRounds retries.
	ErrTooManyInputRounds = errors.New("pmcp: too many input rounds")
	// ErrNoInputHandler: the server asked for a kind of input (sampling,
	// elicitation, roots) the client has no handler for. A well-behaved
	// server never does, because the capability is then not declared.
	ErrNoInputHandler = errors.New("pmcp: no handler for the server's input request")
	// ErrMalformedInputRequest: an input_required result, or one of its
	// input requests, is not well-formed.
	ErrMalformedInputRequest = errors.New("pmcp: malformed input request")
)

// maxPeerErrorData bounds the data member kept from a server's error.
const maxPeerErrorData = 64 << 10

type callConfig struct {
	progress ProgressHandler
	meta     Meta
	// tasks declares the tasks extension on this modern request.
	tasks bool
}

// callConfigOf applies opts; nil when there are none (every use takes
// nil for the zero configuration), so a plain call allocates none.
func callConfigOf(opts []CallOption) *callConfig {
	if len(opts) == 0 {
		return nil
	}
	cfg := &callConfig{}
	for _, o := range opts {
		if o != nil {
			o(cfg)
		}
	}
	return cfg
}

// call sends one request and waits for its result. The default call
// timeout applies when ctx has no deadline. A peer error comes back as a
// *jsonrpc.Error (errors.As) whose message is capped.
func (s *ClientSession) call(ctx context.Context, method string, params any) (jsontext.Value, error) {
	ctx, cancel := s.withCallTimeout(ctx)
	defer cancel()
	raw, err := s.send(ctx, method, params)
	if err != nil {
		return nil, peerError(method, err)
	}
	return raw, nil
}

func (s *ClientSession) withCallTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	d := s.c.callTimeout()
	if d <= 0 {
		return ctx, noCancel
	}
	if _, ok := ctx.Deadline(); ok {
		return ctx, noCancel
	}
	if c := s.sharedTimeout(ctx, d); c != nil {
		return c, noCancel
	}
	return context.WithTimeout(ctx, d)
}

func noCancel() {}

// timeoutSlices: calls that start within the same 1/timeoutSlices of the
// call timeout, with the same ctx, share one timeout context.
const timeoutSlices = 64

// sharedDeadline is a timeout context shared by the calls of one time
// slice (slot) made with the same parent ctx.
type sharedDeadline struct {
	parent context.Context
	slot   int64
	ctx    context.Context // nil: parent seen once in this slot, not shared yet
	cancel context.CancelFunc
}

// sharedTimeout returns the timeout context of a call made with parent,
// shared with the other calls made with it in the same time slice, or nil
// when the call should have its own. A timeout context (a timer, five
// allocations) per call was a tenth of a stdio call's CPU; a client making
// its calls with one ctx (the usual case) now makes at most timeoutSlices
// per call timeout. Each call still gets at least d: the shared deadline is
// the end of the slice plus d, so a call may run up to d/timeoutSlices
// longer. A parent is shared only from its second call in a slice, so a
// per-call parent never leaves a timer (and itself) behind for d.
func (s *ClientSession) sharedTimeout(parent context.Context, d time.Duration) context.Context {
	g := int64(d / timeoutSlices)
	if g <= 0 {
		return nil
	}
	slot := time.Now().UnixNano() / g
	cur := s.deadline.Load()
	if cur != nil && cur.slot == slot && cur.parent == parent {
		if cur.ctx != nil {
			return cur.ctx
		}
		// Second call with this parent in this slice: share from now on.
		c, cancel := context.WithDeadline(parent, time.Unix(0, (slot+1)*g).Add(d))
		if s.deadline.CompareAndSwap(cur, &sharedDeadline{parent: parent, slot: slot, ctx: c, cancel: cancel}) {
			return c
		}
		cancel()
		return nil
	}
	// Only parents of a comparable type are kept: comparing the next
	// parent with one of the same incomparable type would panic.
	if reflect.TypeOf(parent).Comparable() {
		s.deadline.Store(&sharedDeadline{parent: parent, slot: slot})
	}
	return nil
}

// notify sends a notification, bounded like a call.
func (s *ClientSession) notify(ctx context.Context, method string, params any) error {
	ctx, cancel := s.withCallTimeout(ctx)
	defer cancel()
	if err := s.conn.Notify(ctx, method, params); err != nil {
		return fmt.Errorf("pmcp: %s: %w", method, err)
	}
	return nil
}

// onCallCancelled tells the server that a call was abandoned. initialize
// is never cancelled (the spec forbids it), nor a subscription the server
// itself ended.
func (s *ClientSession) onCallCancelled(id jsonrpc.ID, method string, cause error) {
	if method == MethodInitialize || errors.Is(cause, errSubscriptionEndedByServer) {
		return
	}
	if s.http != nil && s.Era() != EraLegacy {
		// Over HTTP a modern request is cancelled by closing its response
		// stream (the transport has done that); the probe of an unknown
		// era likewise.
		return
	}
	reason := "request cancelled"
	if cause != nil {
		reason = capPeerString(cause.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), cancelNotifyTimeout)
	defer cancel()
	_ = s.conn.Notify(ctx, NotificationCancelled, &cancelledParams{RequestID: id, Reason: reason})
}

// peerError wraps a call failure: the one wrapping rule of client call
// errors, for both eras and every transport. A peer's JSON-RPC error is
// copied with its message capped and its data bounded, and reads
// "pmcp: <method>: jsonrpc error <code>: <message>" however it travelled.
// An HTTP error keeps its whole chain (the transport bounded the body's
// JSON-RPC error already), so that *HTTPStatusError, the *jsonrpc.Error of
// its body and sentinels such as ErrHTTPSessionExpired all stay reachable
// with errors.Is and errors.As; when the HTTP error is only the carrier of
// a JSON-RPC error (a modern server answers most errors with 400), its
// text is the JSON-RPC error's, as over stdio or a legacy 200.
func peerError(method string, err error) error {
	var se *HTTPStatusError
	if errors.As(err, &se) {
		if se.RPC != nil && err == error(se) {
			return &callError{msg: "pmcp: " + method + ": " + se.RPC.Error(), err: err}
		}
		return fmt.Errorf("pmcp: %s: %w", method, err)
	}
	var re *jsonrpc.Error
	if errors.As(err, &re) {
		return fmt.Errorf("pmcp: %s: %w", method, boundedPeerError(re))
	}
	return fmt.Errorf("pmcp: %s: %w", method, err)
}

// callError is a call failure whose text is set apart from its chain: see
// peerError.
type callError struct {
	msg string
	err error
}

func (e *callError) Error() string { return e.msg }
func (e *callError) Unwrap() error { return e.err }

// boundedPeerError copies a peer's JSON-RPC error with its message capped
// and its data dropped when larger than maxPeerErrorData.
func boundedPeerError(re *jsonrpc.Error) *jsonrpc.Error {
	cp := &jsonrpc.Error{Code: re.Code, Message: capPeerString(re.Message), Data: re.Data}
	if len(cp.Data) > maxPeerErrorData {
		cp.Data = nil
	}
	return cp
}

// capPeerString bounds a server-controlled string before it enters an
// error or a log record: peer.CapString at peer.MaxStringBytes.
func capPeerString(s string) string { return peer.CapString(s, peer.MaxStringBytes) }

// encodeMeta builds a request's _meta: the caller's members, then the
// client-managed static members and the progress token. It returns nil
// when there is nothing to send.
func encodeMeta(static map[string]jsontext.Value, extra Meta, token jsontext.Value) (jsontext.Value, error) {
	if len(static) == 0 && len(extra) == 0 && token == nil {
		return nil, nil
	}
	m := make(map[string]any, len(static)+len(extra)+1)
	for k, v := range extra {
		if k == MetaProgressToken || strings.HasPrefix(k, "io.modelcontextprotocol/") {
			continue // managed by the client, never taken from the caller
		}
		m[k] = v
	}
	for k, v := range static {
		m[k] = v
	}
	if token != nil {
		m[MetaProgressToken] = token
	}
	b, err := json.Marshal(m, jsonOpts, json.Deterministic(true))
	if err != nil {
		return nil, fmt.Errorf("pmcp: encode _meta: %w", err)
	}
	return b, nil
}

// requestMeta returns the _meta of one request in the negotiated era.
func (s *ClientSession) requestMeta(cfg *callConfig, token jsontext.Value) (jsontext.Value, error) {
	var extra Meta
	n := s.negotiation()
	static, tasks := n.meta, false
	if cfg != nil {
		extra = cfg.meta
		if cfg.tasks && s.Era() == EraModern {
			static, tasks = s.tasksMeta(static), true
		}
	}
	if len(extra) == 0 && !tasks && len(n.metaJSON) > 1 {
		// The common case, without reflection: the static members
		// encoded at negotiation, plus the progress token. Every static
		// key is "io.modelcontextprotocol/..." and sorts before
		// "progressToken", so the result is what encodeMeta would write.
		if token == nil {
			return n.metaJSON, nil
		}
		b := make([]byte, 0, len(n.metaJSON)+len(MetaProgressToken)+len(token)+4)
		b = append(b, n.metaJSON[:len(n.metaJSON)-1]...)
		b = append(b, `,"`+MetaProgressToken+`":`...)
		b = append(b, token...)
		return append(b, '}'), nil
	}
	return encodeMeta(static, extra, token)
}

// callMeta returns the _meta of a call configured by cfg and, when cfg
// asks for progress, registers a fresh progress token until done is
// called.
func (s *ClientSession) callMeta(cfg *callConfig) (meta jsontext.Value, done func(), err error) {
	done = func() {}
	var token jsontext.Value
	if cfg != nil && cfg.progress != nil {
		id := s.progressSeq.Add(1)
		token = strconv.AppendInt(nil, id, 10)
		s.progressMu.Lock()
		s.progress[id] = cfg.progress
		s.progressMu.Unlock()
		done = func() {
			s.progressMu.Lock()
			delete(s.progress, id)
			s.progressMu.Unlock()
		}
	}
	meta, err = s.requestMeta(cfg, token)
	if err != nil {
		done()
		return nil, func() {}, err
	}
	return meta, done, nil
}

// resultTypeOf reads a result's resultType: "" (absent, which counts as
// complete), complete or input_required. Anything else is an error.
var (
	resultTypeKey = []byte(`"resultType"`)
	unicodeEscape = []byte(`\u`)
)

// scanResultType reads the top-level resultType member of raw (present
// false when absent or null) with the pooled params scanner, as the probe
// decode in resultTypeOf would, without its reflection: every modern
// result names its resultType. ok is false when the scan cannot be sure
// (invalid JSON, duplicate names, a resultType that is no string): the
// probe decides.
func scanResultType(raw jsontext.Value) (rt string, present, ok bool) {
	sc := paramScannerPool.Get().(*paramScanner)
	defer sc.release()
	if !sc.begin(raw) {
		return "", false, false
	}
	for {
		name, more := sc.nextName()
		if !more {
			break
		}
		isRT := string(name) == "resultType"
		v, ok := sc.value()
		if !ok {
			return "", false, false
		}
		if !isRT || v.Kind() == 'n' {
			continue // a duplicate name fails the scan: present stays false
		}
		if rt, ok = resultTypeValue(v); !ok {
			return "", false, false
		}
		present = true
	}
	if !sc.end() {
		return "", false, false
	}
	return rt, present, true
}

// resultTypeValue decodes a raw JSON string, without allocating for the
// result types of the protocol.
func resultTypeValue(v jsontext.Value) (string, bool) {
	if len(v) > 1 && v[0] == '"' {
		switch string(v[1 : len(v)-1]) {
		case resultTypeComplete:
			return resultTypeComplete, true
		case resultTypeInputRequired:
			return resultTypeInputRequired, true
		case ResultTypeTask:
			return ResultTypeTask, true
		}
	}
	return stringValue(v)
}

func resultTypeOf(method string, raw jsontext.Value) (string, error) {
	if raw.Kind() != '{' {
		return "", fmt.Errorf("pmcp: %s: malformed result: not a JSON object", method)
	}
	if !bytes.Contains(raw, resultTypeKey) && !bytes.Contains(raw, unicodeEscape) {
		// No member anywhere can be named resultType: the name is not
		// there as is, and no \u escape could spell it. Most results;
		// their decode (which every caller does next) checks the rest.
		return "", nil
	}
	rt, present, ok := scanResultType(raw)
	if !ok {
		var probe struct {
			ResultType *string `json:"resultType"`
		}
		if err := Unmarshal(raw, &probe); err != nil {
			return "", fmt.Errorf("pmcp: %s: malformed result: %s", method, capPeerString(err.Error()))
		}
		if present = probe.ResultType != nil; present {
			rt = *probe.ResultType
		}
	}
	if !present {
		return "", nil
	}
	return checkResultType(method, rt)
}

// checkResultType returns the resultType rt that a result of method has
// (present: "" is not one), or the error that it may not have it.
func checkResultType(method, rt string) (string, error) {
	switch rt {
	case resultTypeComplete, resultTypeInputRequired:
		return rt, nil
	case ResultTypeTask:
		if method == MethodToolsCall {
			return rt, nil
		}
		return "", fmt.Errorf("%w %q in the result of %s", ErrUnexpectedResultType, rt, method)
	default:
		return "", fmt.Errorf("%w %q in the result of %s", ErrUnexpectedResultType, capPeerString(rt), method)
	}
}

// decodeResult decodes the complete result of a method that cannot ask
// for input.
func decodeResult(method string, raw jsontext.Value, out any) error {
	rt, err := resultTypeOf(method, raw)
	if err != nil {
		return err
	}
	if rt == resultTypeInputRequired {
		return fmt.Errorf("%w: %s cannot answer input_required", ErrUnexpectedResultType, method)
	}
	return decodeInto(method, raw, out)
}

func decodeInto(method string, raw jsontext.Value, out any) error {
	if err := Unmarshal(raw, out); err != nil {
		return fmt.Errorf("pmcp: %s: malformed result: %s", method, capPeerString(err.Error()))
	}
	return nil
}

// roundParams builds the params of one round of a multi-round-trip call
// from the round's _meta, inputResponses and requestState (both nil on
// the first round).
type roundParams func(meta, responses jsontext.Value, state *string) any

// roundTrip runs a method that may answer input_required (tools/call,
// prompts/get, resources/read) and returns the raw complete result and its
// resultType (resultTypeOf: "" when it has none), read once. Each
// input_required round is answered through the client's handlers, then the
// call is retried under a new request id with the answers and the
// requestState of that round only (sent back verbatim, and only when the
// server sent one).
func (s *ClientSession) roundTrip(ctx context.Context, method string, opts []CallOption, build roundParams) (jsontext.Value, string, error) {
	return s.roundTripDecoding(ctx, method, opts, build, nil)
}

// roundDecode decodes a round's raw result in full, when it can, and
// returns its resultType ("": none): the result is then not read for it
// again. ok false leaves the reading to resultTypeOf.
type roundDecode func(raw jsontext.Value) (rt string, ok bool)

// roundTripDecoding is roundTrip with each round's result given to
// decode first.
func (s *ClientSession) roundTripDecoding(ctx context.Context, method string, opts []CallOption, build roundParams, decode roundDecode) (jsontext.Value, string, error) {
	cfg := callConfigOf(opts)
	meta, done, err := s.callMeta(cfg)
	if err != nil {
		return nil, "", err
	}
	defer done()
	var responses jsontext.Value
	var state *string
	for round := 0; ; round++ {
		raw, err := s.call(ctx, method, build(meta, responses, state))
		if err != nil {
			return nil, "", err
		}
		var rt string
		if got, ok := decodeRound(decode, raw); ok {
			rt, err = got, nil
			if got != "" {
				rt, err = checkResultType(method, got)
			}
		} else {
			rt, err = resultTypeOf(method, raw)
		}
		if err != nil {
			return nil, "", err
		}
		if rt != resultTypeInputRequired {
			return raw, rt, nil
		}
		if s.Era() != EraModern {
			return nil, "", fmt.Errorf("%w: a legacy-era %s answered input_required", ErrUnexpectedResultType, method)
		}
		if round >= s.c.maxInputRounds() {
			return nil, "", fmt.Errorf("%w: %s still needs input after %d rounds", ErrTooManyInputRounds, method, round)
		}
		responses, state, err = s.answerInput(ctx, method, raw)
		if err != nil {
			return nil, "", err
		}
	}
}

func decodeRound(decode roundDecode, raw jsontext.Value) (string, bool) {
	if decode == nil {
		return "", false
	}
	return decode(raw)
}

// wireInputRequest is one inputRequests entry as it came off the wire.
type wireInputRequest struct {
	Method string         `json:"method"`
	Params jsontext.Value `json:"params"`
}

// answerInput answers one input_required result through the handlers and
// returns the next round's inputResponses and requestState.
func (s *ClientSession) answerInput(ctx context.Context, method string, raw jsontext.Value) (jsontext.Value, *string, error) {
	var ir struct {
		InputRequests map[string]*wireInputRequest `json:"inputRequests"`
		RequestState  *string                      `json:"requestState"`
	}
	if err := Unmarshal(raw, &ir); err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %s", ErrMalformedInputRequest, method, capPeerString(err.Error()))
	}
	if len(ir.InputRequests) == 0 && ir.RequestState == nil {
		return nil, nil, fmt.Errorf("%w: %s: input_required without inputRequests or requestState", ErrMalformedInputRequest, method)
	}
	if len(ir.InputRequests) > DefaultMaxInputResponses {
		return nil, nil, fmt.Errorf("%w: %s: more than %d input requests", ErrMalformedInputRequest, method, DefaultMaxInputResponses)
	}
	if len(ir.InputRequests) == 0 {
		// State only (load shedding): retry at once.
		return nil, ir.RequestState, nil
	}
	keys := make([]string, 0, len(ir.InputRequests))
	for k := range ir.InputRequests {
		keys = append(keys, k)
	}
	slices.Sort(keys) // one input at a time, in a stable order
	answers := make(map[string]any, len(keys))
	for _, k := range keys {
		r := ir.InputRequests[k]
		if r == nil {
			return nil, nil, fmt.Errorf("%w: %s: input request %q is null", ErrMalformedInputRequest, method, capPeerString(k))
		}
		res, err := s.input(ctx, jsonrpc.ID{}, r.Method, r.Params)
		if err != nil {
			return nil, nil, fmt.Errorf("pmcp: %s: input %q: %w", method, capPeerString(k), err)
		}
		answers[k] = res
	}
	b, err := json.Marshal(answers, jsonOpts, json.Deterministic(true))
	if err != nil {
		return nil, nil, fmt.Errorf("pmcp: encode inputResponses: %w", err)
	}
	return b, ir.RequestState, nil
}

// serveInput answers one request for input (a legacy server-to-client
// request or a modern input request) through the client handler of its
// row (method_table.go), which calls the matching ClientOptions handler
// and checks its answer so that nothing malformed goes back.
func (s *ClientSession) serveInput(ctx context.Context, method string, params jsontext.Value) (res any, err error) {
	defer func() {
		if v := recover(); v != nil {
			s.c.log.Error("pmcp: client input handler panicked", "method", method, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			res, err = nil, fmt.Errorf("pmcp: %s handler panicked", method)
		}
	}()
	if len(params) == 0 || string(params) == "null" {
		params = jsontext.Value("{}")
	}
	row := methodOf(method)
	if row == nil || !row.capability.input() || row.clientServe == nil {
		return nil, fmt.Errorf("%w: unknown input method %q", ErrMalformedInputRequest, capPeerString(method))
	}
	return row.clientServe(s, ctx, &jsonrpc.Request{Method: method, Params: params})
}

// answerElicitation answers elicitation/create through
// ClientOptions.Elicitation.
func (s *ClientSession) answerElicitation(ctx context.Context, req *jsonrpc.Request) (any, error) {
	o := &s.c.opts
	if o.Elicitation == nil {
		return nil, fmt.Errorf("%w: elicitation/create (ClientOptions.Elicitation is nil)", ErrNoInputHandler)
	}
	var p ElicitParams
	if err := Unmarshal(req.Params, &p); err != nil {
		return nil, fmt.Errorf("%w: elicitation/create params: %s", ErrMalformedInputRequest, capPeerString(err.Error()))
	}
	if p.Mode == "url" && !o.ElicitationURL {
		return nil, fmt.Errorf("%w: URL-mode elicitation was not declared", ErrNoInputHandler)
	}
	r, err := o.Elicitation(ctx, &p)
	if err != nil {
		return nil, err
	}
	if r == nil || !validAction(r.Action) {
		return nil, errors.New("pmcp: the elicitation handler returned no result or an invalid action")
	}
	if r.Action != "accept" && r.Content != nil {
		cp := *r
		cp.Content = nil
		r = &cp
	}
	return r, nil
}

// answerSampling answers sampling/createMessage through
// ClientOptions.Sampling.
func (s *ClientSession) answerSampling(ctx context.Context, req *jsonrpc.Request) (any, error) {
	o := &s.c.opts
	if o.Sampling == nil {
		return nil, fmt.Errorf("%w: sampling/createMessage (ClientOptions.Sampling is nil)", ErrNoInputHandler)
	}
	var p CreateMessageParams
	if err := Unmarshal(req.Params, &p); err != nil {
		return nil, fmt.Errorf("%w: sampling/createMessage params: %s", ErrMalformedInputRequest, capPeerString(err.Error()))
	}
	if (len(p.Tools) > 0 || p.ToolChoice != nil) && !o.SamplingTools {
		return nil, fmt.Errorf("%w: sampling/createMessage carries tools or toolChoice, but sampling.tools was not declared", ErrMalformedInputRequest)
	}
	r, err := o.Sampling(ctx, &p)
	if err != nil {
		return nil, err
	}
	if r == nil || r.Content == nil || r.Model == "" {
		return nil, errors.New("pmcp: the sampling handler returned no result, no content or no model")
	}
	if r.Role == "" {
		cp := *r
		cp.Role = "assistant"
		r = &cp
	}
	return r, nil
}

// answerRoots answers roots/list through ClientOptions.Roots.
func (s *ClientSession) answerRoots(ctx context.Context, _ *jsonrpc.Request) (any, error) {
	o := &s.c.opts
	if o.Roots == nil {
		return nil, fmt.Errorf("%w: roots/list (ClientOptions.Roots is nil)", ErrNoInputHandler)
	}
	r, err := o.Roots(ctx)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, errors.New("pmcp: the roots handler returned no result")
	}
	if r.Roots == nil {
		cp := *r
		cp.Roots = []*Root{}
		r = &cp
	}
	return r, nil
}
