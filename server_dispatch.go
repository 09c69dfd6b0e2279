package pmcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/internal/rpcconn"
	"github.com/gopmcp/pmcp/jsonrpc"
	"github.com/gopmcp/pmcp/reqstate"
)

// requestEnv is what a transport supplies for one incoming request.
type requestEnv struct {
	// session is the legacy state of the connection, nil when there is
	// none (modern HTTP requests).
	session *session
	// notify sends a notification related to this request (progress, logs)
	// on the request's back-channel. Nil means there is none and such
	// notifications are not sent.
	notify func(ctx context.Context, method string, params any) error
	// call sends a server-to-client request (legacy era only). Nil means
	// the transport cannot.
	call func(ctx context.Context, method string, params any) (jsontext.Value, error)

	authInfo  *AuthInfo
	authCtx   *AuthContext
	sessionID string
	// listenSend writes a notification of a modern subscriptions/listen
	// stream; nil means the transport cannot hold such a stream.
	listenSend func(ctx context.Context, method string, params any) error
	// streamDone, when not nil, is closed when the transport stops reading;
	// listen streams end then.
	streamDone <-chan struct{}
	// streamDoneCtx, when not nil, is cancelled when streamDone is
	// closed: a listen stream then waits on its listener alone (see
	// listenQuiet).
	streamDoneCtx context.Context
	// listenEvery, when positive, is how often a listen stream shows it is
	// alive: listenPing then writes a keep-alive (SSE comment).
	listenEvery time.Duration
	listenPing  func() error
	// detach, when not nil, offers the transport a listen stream (without
	// task ids) to serve without the handler's goroutine: ack is the
	// encoded acknowledgement, l the registered listener, params the
	// encoded params of the stream's list-changed notifications. True
	// means the transport wrote ack and owns l (it removes it when the
	// stream ends); false means nothing was written.
	detach func(ack []byte, l *listener, id jsonrpc.ID, params jsontext.Value) bool
	// closeStream, when not nil, ends the request's response stream while
	// the request keeps running (see RequestHandlerExtra.CloseStream).
	closeStream func() bool
	// params, when not nil, is the transport's scan of the request's
	// params (see server_params.go); handle scans them itself otherwise.
	params *reqParams
	// state, when not nil, is the per-request state the transport
	// allocated (it holds this env); handle allocates one otherwise.
	state *reqState
	// httpReq is the HTTP request (Streamable HTTP), transport describes
	// a stream connection; both only for middleware and the access log.
	httpReq   *http.Request
	transport *TransportInfo
}

// requestMeta is the typed view of a request's _meta.
type requestMeta struct {
	ProtocolVersion    *string             `json:"io.modelcontextprotocol/protocolVersion"`
	ClientCapabilities *ClientCapabilities `json:"io.modelcontextprotocol/clientCapabilities"`
	ClientInfo         *Implementation     `json:"io.modelcontextprotocol/clientInfo"`
	LogLevel           *string             `json:"io.modelcontextprotocol/logLevel"`
	ProgressToken      jsontext.Value      `json:"progressToken"`
}

// noParams stands for a request's absent params member. Shared and
// read-only (see Request.Params).
var noParams = jsontext.Value("{}")

func methodNotFound(method string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found: " + method}
}

// paramsEnvelope captures the members the dispatcher needs before the
// method-specific decode.
type paramsEnvelope struct {
	Meta jsontext.Value `json:"_meta"`
}

// handle is the one dispatcher: every transport and both eras come through
// here. It never panics: a panicking handler becomes -32603.
//
// The params are read once (reqParams.scan) for the era decision, _meta
// and, for tools/call, the method's params; the original decodes run
// instead whenever that one pass is not conclusive.
func (s *Server) handle(ctx context.Context, req *jsonrpc.Request, env *requestEnv) (res any, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.logger.Error("pmcp: handler panicked", "method", req.Method, "id", req.ID.String(), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			res, err = nil, rpcconn.PanicError()
		}
	}()
	rs := env.state
	if rs == nil {
		rs = new(reqState)
	}
	if s.accessLog && s.logger.Enabled(ctx, slog.LevelInfo) {
		rs.accessStart = time.Now()
	}
	// The method's row is looked up once (by the HTTP transport when it
	// peeked, else here); everything after reads rs.row. The server has no
	// row (-32601) for the methods only clients serve.
	if rs.row == nil || rs.row.method != req.Method {
		rs.row = methodOf(req.Method)
	}
	if rs.row == nil || rs.row.eras == 0 {
		return nil, methodNotFound(req.Method)
	}
	if len(req.Params) == 0 {
		// Absent params mean an empty object, for every consumer after
		// this point: middleware, handlers, the bridge. Decided once here.
		req.Params = noParams[:len(noParams):len(noParams)]
	} else if req.Params.Kind() != '{' {
		return nil, invalidParams("params must be an object")
	}
	rp := env.params
	if rp == nil {
		rp = &rs.params
		rp.scan(req.Params)
	}
	meta := &rs.meta
	rawMeta := rp.call.Meta
	if !rp.ok || !rp.decodeMeta(meta, &s.lastMeta) {
		*meta = requestMeta{}
		var envl paramsEnvelope
		if len(req.Params) > 0 {
			if err := json.Unmarshal(req.Params, &envl); err != nil {
				return nil, invalidParams("invalid params: %v", err)
			}
		}
		if len(envl.Meta) > 0 {
			if envl.Meta.Kind() != '{' {
				return nil, invalidParams("_meta must be an object")
			}
			if err := Unmarshal(envl.Meta, meta); err != nil {
				return nil, invalidParams("invalid _meta: %v", err)
			}
		}
		rawMeta = envl.Meta
	}
	if rs.era == EraUnknown { // a stream transport: decided here
		rs.era = classify(eraInput{method: req.Method, metaVersion: meta.ProtocolVersion != nil, metaCaps: meta.ClientCapabilities != nil})
	}
	if rs.era == EraModern {
		return s.handleModern(ctx, req, env, rs, rp, rawMeta)
	}
	return s.handleLegacy(ctx, req, env, rs, rp, rawMeta)
}

// reqState holds the per-request values of the transport and of the
// dispatcher, allocated together once per request.
type reqState struct {
	// row is the method's row of the table, set by handle.
	row        *methodRow
	env        requestEnv
	params     reqParams
	meta       requestMeta
	extra      RequestHandlerExtra
	resultMeta resultMetaSlot
	pc         ProtocolContext
	sink       notifySink
	legacy     legacyPeer
	mrtr       mrtrIn
	mrtrPeer   mrtrPeer
	// out is the result sent: never the handler's value itself (see
	// server_result.go).
	out resultCopy
	// mreq is the middleware's view of the request (server_middleware.go);
	// accessStart is when handle began, zero when the access log is off.
	mreq        Request
	accessStart time.Time
	// tool is the tool of a tools/call when the transport already looked
	// it up (Streamable HTTP, for its Mcp-Param-* headers); callTool uses
	// it if the request still names it.
	tool *serverTool
	// peerWaiting counts the legacy HTTP request's server-to-client calls
	// waiting for the client (httpSession.callOn).
	peerWaiting atomic.Int32
	// era is the request's era, decided once by classify: by the
	// Streamable HTTP transport before it routes the request, by the
	// dispatcher on stream transports (EraUnknown until then).
	era Era
}

// notifySink is the LogSink of a request with a back-channel.
type notifySink struct {
	ctx    context.Context
	notify func(ctx context.Context, method string, params any) error
}

func (n *notifySink) Log(rec *LoggingMessageParams) {
	_ = n.notify(n.ctx, NotificationMessage, rec)
}

// UnsupportedVersionError builds the -32022 error for a requested version.
func unsupportedVersion(requested string) *jsonrpc.Error {
	data, _ := Marshal(map[string]any{"supported": modernVersions, "requested": requested})
	return &jsonrpc.Error{Code: jsonrpc.CodeUnsupportedProtocolVersion, Message: "Unsupported protocol version: " + requested, Data: data}
}

// noModernMeta is the error of a request without the modern _meta where
// there is no legacy session either.
func noModernMeta() *jsonrpc.Error {
	return invalidParams("missing required _meta %q: this endpoint serves the 2026-07-28 protocol; send initialize to open a legacy session", MetaProtocolVersion)
}

func (s *Server) handleModern(ctx context.Context, req *jsonrpc.Request, env *requestEnv, rs *reqState, rp *reqParams, rawMeta jsontext.Value) (any, error) {
	meta := &rs.meta
	if meta.ProtocolVersion == nil {
		if classify(eraInput{method: req.Method, metaCaps: meta.ClientCapabilities != nil}) == EraLegacy {
			// Only the MCP-Protocol-Version header made this POST
			// modern (classify, case 3): its body speaks neither era,
			// and the message also points at initialize.
			return nil, noModernMeta()
		}
		return nil, invalidParams("missing required _meta %q", MetaProtocolVersion)
	}
	if EraOf(*meta.ProtocolVersion) != EraModern {
		return nil, unsupportedVersion(*meta.ProtocolVersion)
	}
	if meta.ClientCapabilities == nil {
		return nil, invalidParams("missing required _meta %q", MetaClientCapabilities)
	}
	level := LevelOff
	if meta.LogLevel != nil {
		l, err := ParseLoggingLevel(*meta.LogLevel)
		if err != nil {
			return nil, invalidParams("invalid _meta %q: %q", MetaLogLevel, *meta.LogLevel)
		}
		level = l
	}
	if !rs.row.eras.has(EraModern) || !s.declares(rs.row.capability) {
		return nil, methodNotFound(req.Method)
	}
	pc := &rs.pc
	*pc = ProtocolContext{Era: EraModern, ProtocolVersion: *meta.ProtocolVersion, ClientInfo: meta.ClientInfo, ClientCapabilities: meta.ClientCapabilities}
	extra := s.newExtra(ctx, req, env, rs, rawMeta, pc, level)
	res, err := s.run(ctx, req, env, extra, rs, rp)
	if err != nil {
		return nil, sendError(err, extra)
	}
	return s.finishResult(res, env, rs, EraModern)
}

func (s *Server) handleLegacy(ctx context.Context, req *jsonrpc.Request, env *requestEnv, rs *reqState, rp *reqParams, rawMeta jsontext.Value) (any, error) {
	ss := env.session
	if ss == nil {
		return nil, noModernMeta()
	}
	pc := ss.protocol()
	if req.Method != MethodInitialize && req.Method != MethodPing {
		if pc == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "session not initialized: send initialize first (or per-request _meta for protocol 2026-07-28)"}
		}
		if !rs.row.eras.has(EraLegacy) || !s.declares(rs.row.capability) {
			return nil, methodNotFound(req.Method)
		}
	} else if pc == nil {
		pc = &rs.pc
		*pc = ProtocolContext{Era: EraLegacy}
	}
	extra := s.newExtra(ctx, req, env, rs, rawMeta, pc, LoggingLevel(ss.logLevel.Load()))
	res, err := s.run(ctx, req, env, extra, rs, rp)
	if err != nil {
		return nil, sendError(err, extra)
	}
	return s.finishResult(res, env, rs, EraLegacy)
}

// serveInitialize, servePing, serveSetLevel, serveSubscribe and
// serveUnsubscribe serve the methods only the legacy era has (the modern
// era rejects them before serve).
func (s *Server) serveInitialize(_ context.Context, req *jsonrpc.Request, env *requestEnv, _ *RequestHandlerExtra, rs *reqState, _ *reqParams) (Result, error) {
	res, err := s.initialize(req, env.session)
	if err != nil {
		return nil, err
	}
	return rs.out.adopt(res), nil
}

func (s *Server) servePing(_ context.Context, _ *jsonrpc.Request, _ *requestEnv, _ *RequestHandlerExtra, rs *reqState, _ *reqParams) (Result, error) {
	return rs.out.adopt(&EmptyResult{}), nil
}

func (s *Server) serveSetLevel(_ context.Context, req *jsonrpc.Request, env *requestEnv, _ *RequestHandlerExtra, rs *reqState, _ *reqParams) (Result, error) {
	p, err := decodeParams[setLevelParams](req.Params)
	if err != nil {
		return nil, err
	}
	if p.Level < LevelDebug || p.Level > LevelEmergency {
		return nil, invalidParams("invalid logging level")
	}
	env.session.logLevel.Store(uint32(p.Level))
	return rs.out.adopt(&EmptyResult{}), nil
}

func (s *Server) serveSubscribe(_ context.Context, req *jsonrpc.Request, env *requestEnv, extra *RequestHandlerExtra, rs *reqState, _ *reqParams) (Result, error) {
	uri, err := subscriptionURI(req)
	if err != nil {
		return nil, err
	}
	if err := authorize(extra, s.requiredScopes(rs.row, uri)); err != nil {
		return nil, err
	}
	if err := s.subscribeResource(env.session, uri); err != nil {
		return nil, err
	}
	return rs.out.adopt(&EmptyResult{}), nil
}

func (s *Server) serveUnsubscribe(_ context.Context, req *jsonrpc.Request, env *requestEnv, _ *RequestHandlerExtra, rs *reqState, _ *reqParams) (Result, error) {
	uri, err := subscriptionURI(req)
	if err != nil {
		return nil, err
	}
	env.session.unsubscribe(uri)
	return rs.out.adopt(&EmptyResult{}), nil
}

// subscriptionURI is the uri of a resources/subscribe or unsubscribe.
func subscriptionURI(req *jsonrpc.Request) (string, error) {
	p, err := decodeParams[SubscribeParams](req.Params)
	if err != nil {
		return "", err
	}
	if p.URI == "" {
		return "", invalidParams("missing uri")
	}
	return p.URI, nil
}

// keptHandshake is what a legacy session keeps of its initialize, in one
// allocation, immutable once made; raw is the params it was decoded from.
type keptHandshake struct {
	hs   handshake
	pc   ProtocolContext
	caps ClientCapabilities
	info Implementation
	raw  []byte
}

// maxSharedHandshakeBytes: initialize params longer than this are not
// kept for sharing (the copy would cost more than it saves).
const maxSharedHandshakeBytes = 4 << 10

func (s *Server) initialize(req *jsonrpc.Request, ss *session) (Result, error) {
	if ss.hs.Load() != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "session already initialized"}
	}
	// Sessions opened by the same client program usually send the same
	// params byte for byte: they share one immutable handshake, so an idle
	// session does not keep its own copy of the client's info and
	// capabilities (most of its memory otherwise).
	kept := s.lastHandshake.Load()
	if kept == nil || len(req.Params) == 0 || !bytes.Equal(kept.raw, req.Params) {
		p, err := decodeParams[initializeParams](req.Params)
		if err != nil {
			return nil, err
		}
		version := latestLegacyVersion
		if i := slices.Index(legacyVersions, p.ProtocolVersion); i >= 0 {
			version = legacyVersions[i] // the constant: sessions keep no copy
		}
		kept = &keptHandshake{caps: p.Capabilities, info: p.ClientInfo}
		kept.pc = ProtocolContext{Era: EraLegacy, ProtocolVersion: version, ClientInfo: &kept.info, ClientCapabilities: &kept.caps}
		kept.hs.pc = &kept.pc
		if len(req.Params) <= maxSharedHandshakeBytes {
			kept.raw = bytes.Clone(req.Params)
			s.lastHandshake.Store(kept)
		}
	}
	version := kept.pc.ProtocolVersion
	if !ss.hs.CompareAndSwap(nil, &kept.hs) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "session already initialized"}
	}
	return &InitializeResult{
		ProtocolVersion: version,
		Capabilities:    s.capabilities(EraLegacy),
		ServerInfo:      s.info,
		Instructions:    s.opts.Instructions,
	}, nil
}

func decodeParams[T any](raw jsontext.Value) (*T, error) {
	p := new(T)
	if len(raw) == 0 {
		return p, nil
	}
	if err := Unmarshal(raw, p); err != nil {
		return nil, invalidParams("invalid params: %v", err)
	}
	return p, nil
}

// newExtra builds the handler context of one request, in rs.
func (s *Server) newExtra(ctx context.Context, req *jsonrpc.Request, env *requestEnv, rs *reqState, rawMeta jsontext.Value, pc *ProtocolContext, level LoggingLevel) *RequestHandlerExtra {
	extra := &rs.extra
	*extra = RequestHandlerExtra{
		ctx:             ctx,
		RequestID:       req.ID,
		SessionID:       env.sessionID,
		AuthInfo:        env.authInfo,
		AuthContext:     env.authCtx,
		LogLevel:        level,
		ProtocolContext: pc,
		resultMeta:      &rs.resultMeta,
		closeStream:     env.closeStream,
	}
	if len(rawMeta) > 0 {
		extra.RequestMeta = rawMeta
	}
	if env.notify != nil {
		notify := env.notify
		if len(rs.meta.ProgressToken) > 0 {
			extra.ProgressReporter = newProgressReporterLimits(rs.meta.ProgressToken, notify, s.opts.ProgressRate, s.opts.ProgressBurst)
		}
		rs.sink = notifySink{ctx: ctx, notify: notify}
		extra.LogSink = &rs.sink
	}
	if pc.Era == EraLegacy {
		extra.notify, extra.session = env.notify, env.session
	}
	if pc.Era == EraLegacy && env.call != nil {
		rs.legacy = legacyPeer{s: s, call: env.call, notify: env.notify, caps: pc.ClientCapabilities}
		extra.Peer = &rs.legacy
	}
	return extra
}

// The serve functions below serve the feature methods shared by both
// eras, one per method (the rows of method_table.go name them). The results
// they build themselves are adopted (rs.out.adopt); handlers' results are
// left as they are, for finishResult to copy.
func (s *Server) serveDiscover(_ context.Context, _ *jsonrpc.Request, _ *requestEnv, _ *RequestHandlerExtra, rs *reqState, _ *reqParams) (Result, error) {
	return rs.out.adopt(&discoverResult{SupportedVersions: SupportedVersions(), Capabilities: s.capabilities(EraModern), Instructions: s.opts.Instructions}), nil
}

func (s *Server) serveToolsList(_ context.Context, req *jsonrpc.Request, _ *requestEnv, _ *RequestHandlerExtra, rs *reqState, _ *reqParams) (Result, error) {
	tools, next, err := registryPage(s, req, &s.tools, func(t *serverTool) *Tool { return t.tool })
	if err != nil {
		return nil, err
	}
	return rs.out.adopt(&ListToolsResult{Tools: tools, NextCursor: next}), nil
}

func (s *Server) serveResourcesList(_ context.Context, req *jsonrpc.Request, _ *requestEnv, _ *RequestHandlerExtra, rs *reqState, _ *reqParams) (Result, error) {
	resources, next, err := registryPage(s, req, &s.resources, func(r *serverResource) *Resource { return r.res })
	if err != nil {
		return nil, err
	}
	return rs.out.adopt(&ListResourcesResult{Resources: resources, NextCursor: next}), nil
}

func (s *Server) serveTemplatesList(_ context.Context, req *jsonrpc.Request, _ *requestEnv, _ *RequestHandlerExtra, rs *reqState, _ *reqParams) (Result, error) {
	templates, next, err := registryPage(s, req, &s.templates, func(t *serverTemplate) *ResourceTemplate { return t.tmpl })
	if err != nil {
		return nil, err
	}
	return rs.out.adopt(&ListResourceTemplatesResult{ResourceTemplates: templates, NextCursor: next}), nil
}

func (s *Server) servePromptsList(_ context.Context, req *jsonrpc.Request, _ *requestEnv, _ *RequestHandlerExtra, rs *reqState, _ *reqParams) (Result, error) {
	prompts, next, err := registryPage(s, req, &s.prompts, func(p *serverPrompt) *Prompt { return p.prompt })
	if err != nil {
		return nil, err
	}
	return rs.out.adopt(&ListPromptsResult{Prompts: prompts, NextCursor: next}), nil
}

// registryPage is the page of r a paginated list request asks for, each entry
// as item makes it.
func registryPage[E, T any](s *Server, req *jsonrpc.Request, r *registry[E], item func(E) T) ([]T, string, error) {
	p, err := decodeParams[paginatedParams](req.Params)
	if err != nil {
		return nil, "", err
	}
	entries, next, err := r.page(p.Cursor, s.pageSize())
	if err != nil {
		return nil, "", err
	}
	out := make([]T, len(entries))
	for i, e := range entries {
		out[i] = item(e)
	}
	return out, next, nil
}

func (s *Server) serveComplete(ctx context.Context, req *jsonrpc.Request, _ *requestEnv, extra *RequestHandlerExtra, rs *reqState, _ *reqParams) (Result, error) {
	p, err := decodeParams[CompleteParams](req.Params)
	if err != nil {
		return nil, err
	}
	if s.opts.Completion == nil {
		return rs.out.adopt(&CompleteResult{Completion: Completion{Values: []string{}}}), nil
	}
	res, err := s.opts.Completion(ctx, extra, p)
	if err != nil {
		return nil, err
	}
	if res == nil {
		return rs.out.adopt(&CompleteResult{}), nil
	}
	return res, nil
}

func (s *Server) serveToolsCall(ctx context.Context, req *jsonrpc.Request, env *requestEnv, extra *RequestHandlerExtra, rs *reqState, rp *reqParams) (Result, error) {
	var p *CallToolParams
	if rp.ok && rp.callOK {
		p = &rp.call
	} else {
		var err error
		if p, err = decodeParams[CallToolParams](req.Params); err != nil {
			return nil, err
		}
	}
	if p.Name == "" {
		return nil, invalidParams("missing tool name")
	}
	extra.TaskRequest = p.Task
	// The binding digest is computed only when a requestState is
	// opened or sealed, from the name and arguments as they arrived.
	name, args := p.Name, p.Arguments
	return s.withInput(ctx, req, env, extra, rs, p.InputResponses, p.RequestState,
		func() [][]byte { return [][]byte{[]byte(name), canonicalJSON(args)} },
		func() (Result, error) { return s.callToolOrTask(ctx, env, extra, rs, p) })
}

func (s *Server) servePromptsGet(ctx context.Context, req *jsonrpc.Request, env *requestEnv, extra *RequestHandlerExtra, rs *reqState, _ *reqParams) (Result, error) {
	p, err := decodeParams[GetPromptParams](req.Params)
	if err != nil {
		return nil, err
	}
	// Digested now: the handler may change its arguments map.
	args, _ := json.Marshal(p.Arguments, json.Deterministic(true))
	digest := [][]byte{[]byte(p.Name), args}
	return s.withInput(ctx, req, env, extra, rs, p.InputResponses, p.RequestState,
		func() [][]byte { return digest },
		func() (Result, error) { return s.getPrompt(ctx, extra, p) })
}

func (s *Server) serveResourcesRead(ctx context.Context, req *jsonrpc.Request, env *requestEnv, extra *RequestHandlerExtra, rs *reqState, _ *reqParams) (Result, error) {
	p, err := decodeParams[ReadResourceParams](req.Params)
	if err != nil {
		return nil, err
	}
	if p.URI == "" {
		return nil, invalidParams("missing uri")
	}
	uri := p.URI
	return s.withInput(ctx, req, env, extra, rs, p.InputResponses, p.RequestState,
		func() [][]byte { return [][]byte{[]byte(uri)} },
		func() (Result, error) { return s.readResource(ctx, extra, p) })
}

func (s *Server) serveListen(ctx context.Context, req *jsonrpc.Request, env *requestEnv, extra *RequestHandlerExtra, _ *reqState, _ *reqParams) (Result, error) {
	return s.listen(ctx, req, env, extra)
}

// serveSkill serves skills/list and skills/get.
func (s *Server) serveSkill(_ context.Context, req *jsonrpc.Request, _ *requestEnv, _ *RequestHandlerExtra, rs *reqState, _ *reqParams) (Result, error) {
	return s.serveSkills(req.Method, req.Params, rs)
}

// withInput runs fn with multi-round-trip plumbing in the modern era and
// converts the outcome (input required, capability errors). digest returns
// what a requestState is bound to besides the principal (principalOf) and
// the method; it is called only when a state is opened or sealed, with the
// params as they were before fn ran.
func (s *Server) withInput(ctx context.Context, req *jsonrpc.Request, env *requestEnv, extra *RequestHandlerExtra, rs *reqState,
	rawResponses jsontext.Value, state *string, digest func() [][]byte, fn func() (Result, error)) (Result, error) {
	var binding reqstate.Binding
	bound, bindable := false, false
	if extra.Era() == EraModern {
		if state != nil {
			binding, bindable = stateBinding(env, req.Method, digest())
			bound = true
			if !bindable {
				return nil, invalidRequestState()
			}
		}
		in := &rs.mrtr
		if err := s.openInput(in, binding, rawResponses, state); err != nil {
			return nil, err
		}
		extra.mrtr = in
		rs.mrtrPeer = mrtrPeer{extra: extra, notify: env.notify}
		extra.Peer = &rs.mrtrPeer
	}
	res, err := fn()
	if err != nil {
		if ue := asURLElicitation(err); ue != nil {
			// A URL elicitation takes its era's form first: in the
			// modern era it is an input request.
			err = ue.eraForm(extra.Era(), extra.ClientCapabilities())
		}
	}
	if extra.mrtr != nil {
		var ir *inputRequiredError
		if err != nil {
			ir = asInputRequired(err)
		}
		if ir != nil {
			err = nil
		} else if pending := extra.mrtr.pendingRequests(); pending != nil {
			// The handler swallowed the input request: the call still
			// cannot complete without the answers.
			ir, err = &inputRequiredError{Requests: pending}, nil
		}
		if ir != nil {
			if !bound {
				binding, bindable = stateBinding(env, req.Method, digest())
			}
			if !bindable {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "cannot ask for input: the request's authentication names no principal to bind a requestState to"}
			}
			out, err := s.inputRequired(binding, extra.mrtr, ir)
			if err != nil {
				return nil, err
			}
			return rs.out.adopt(out), nil
		}
	}
	if err != nil {
		// The URL elicitation has its form already (EraUnknown).
		if e := protocolError(err, EraUnknown, nil); e != nil {
			return nil, e
		}
		return nil, err
	}
	return res, nil
}

func (in *mrtrIn) pendingRequests() map[string]*InputRequest {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.pending
}

// openInput verifies the requestState and bounds the inputResponses, into
// in.
func (s *Server) openInput(in *mrtrIn, b reqstate.Binding, rawResponses jsontext.Value, state *string) error {
	responses, err := parseInputResponses(rawResponses)
	if err != nil {
		return err
	}
	*in = mrtrIn{responses: responses}
	if state != nil {
		st, err := s.sealer.Open(b, *state)
		switch {
		case err == nil:
			in.verified = true
			in.round = st.Round
			in.continuation = st.Continuation
			if len(st.Answers) > 0 {
				if err := json.Unmarshal(st.Answers, &in.answers); err != nil {
					return invalidParams("invalid requestState")
				}
			}
		case errors.Is(err, reqstate.ErrUnknownKey), errors.Is(err, reqstate.ErrExpired):
			// Re-run as a pristine first call: nothing MRTR-shaped is
			// observable, and the handler asks again.
			*in = mrtrIn{}
			return nil
		default:
			return invalidRequestState()
		}
	}
	for k, v := range responses {
		if len(k) > len(autoKeyPrefix) && k[:len(autoKeyPrefix)] == autoKeyPrefix {
			if in.answers == nil {
				in.answers = make(map[string]jsontext.Value)
			}
			in.answers[k] = v
		}
	}
	return nil
}

// inputRequired seals the next round's state and builds the result.
func (s *Server) inputRequired(b reqstate.Binding, in *mrtrIn, ir *inputRequiredError) (Result, error) {
	round := 0
	if in.verified {
		round = int(in.round) + 1
	}
	if round >= s.maxRounds() || round > 255 {
		return nil, invalidParams("too many input rounds (limit %d)", s.maxRounds())
	}
	st := reqstate.State{Round: uint8(round), Continuation: ir.Continuation}
	if ir.Continuation == nil && in.verified {
		st.Continuation = in.continuation
	}
	if len(in.answers) > 0 {
		a, err := json.Marshal(in.answers, json.Deterministic(true))
		if err != nil {
			return nil, err
		}
		st.Answers = a
	}
	token, err := s.sealer.Seal(b, st)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "cannot seal request state: " + err.Error()}
	}
	return &InputRequiredResult{InputRequests: ir.Requests, RequestState: token}, nil
}
