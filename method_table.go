package pmcp

import (
	"context"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// The one table of MCP methods: every fact the server and the client keep
// about a method by its name (which era has it, which capability gates
// it, which param names its target, which headers mirror it, whose scopes
// apply, who serves it) is a column of its row, and every reader looks the
// row up (methodOf) instead of switching on the name.

// eraSet is the set of eras in which the server has a method.
type eraSet uint8

const (
	inLegacy eraSet = 1 << iota
	inModern
	inBoth = inLegacy | inModern
)

// has reports whether the set holds era.
func (e eraSet) has(era Era) bool {
	if era == EraModern {
		return e&inModern != 0
	}
	return e&inLegacy != 0
}

// capability is what a peer must have declared for a method to exist.
// Server rows are gated by the server's capabilities (Server.declares),
// client-served rows by the client's (sampling, elicitation, roots).
type capability uint8

const (
	capNone capability = iota
	capTools
	capPrompts
	capResources
	// capResourcesSubscribe: with explicit ServerOptions.Capabilities,
	// resources with subscribe; with registries, as capResources.
	capResourcesSubscribe
	// capCompletions: gated only by explicit ServerOptions.Capabilities;
	// with registries completion always exists (a quirk kept on purpose).
	capCompletions
	// capTasks: the legacy tasks capability or the modern extension when
	// explicit; ServerOptions.Tasks otherwise.
	capTasks
	// capSkills: gated only with registries (skills registered); explicit
	// capabilities do not gate it (a quirk kept on purpose).
	capSkills
	capSampling
	capElicitation
	capRoots
)

// input reports whether c is a client capability that gates a request for
// input (sampling, elicitation, roots): a legacy server-to-client request
// or a modern input request, answered through the ClientOptions handlers
// and the client middleware (ClientSession.serveInput); the server checks
// it with checkInputCapability.
func (c capability) input() bool {
	return c == capSampling || c == capElicitation || c == capRoots
}

// targetParam is the member of the params that names what a method acts
// on: what Mcp-Name carries, what the scope check and Request.Name read.
type targetParam uint8

const (
	paramNone   targetParam = iota
	paramName               // params.name: a tool or prompt name
	paramURI                // params.uri: a resource URI
	paramTaskID             // params.taskId
)

// inName reports whether the target, decoded, is Request.Name (and the
// access log's name): tool and prompt names and resource URIs are, task
// ids are not.
func (t targetParam) inName() bool { return t == paramName || t == paramURI }

// TargetKind is what the target of a method, its Request.Name, names.
type TargetKind uint8

// The kinds of target.
const (
	TargetNone     TargetKind = iota // the method has no target in Request.Name
	TargetTool                       // a tool name (tools/call)
	TargetPrompt                     // a prompt name (prompts/get)
	TargetResource                   // a resource URI (resources/read, subscribe, unsubscribe)
)

// TargetOf returns what the target of method names: a tool, a prompt or a
// resource, as Request.Name carries it; TargetNone for the other methods
// and for names the SDK does not know. Middleware uses it to label the
// target (package otel does) without a list of methods of its own.
func TargetOf(method string) TargetKind {
	if row := methodOf(method); row != nil {
		return row.registry
	}
	return TargetNone
}

// methodFlags are the yes/no facts of a row.
type methodFlags uint8

const (
	// mirrorName: in the modern era over HTTP the target is mirrored in
	// the Mcp-Name header (the client sends it, the server checks it).
	mirrorName methodFlags = 1 << iota
	// mirrorParams: the tool's Mcp-Param-* headers are mirrored too.
	mirrorParams
	// scoped: the target's registered Scopes are required. Unsubscribing
	// needs nothing: it only stops what the caller receives, and a caller
	// whose scopes were taken away must still be able to stop it.
	scoped
)

// serveFunc serves one method on the server, with what the dispatcher
// resolved (the era, _meta, the handler context in rs).
type serveFunc func(s *Server, ctx context.Context, req *jsonrpc.Request, env *requestEnv, extra *RequestHandlerExtra, rs *reqState, rp *reqParams) (Result, error)

// clientServeFunc serves one method on the client: a legacy-era request
// from the server (ClientSession.handle), and for the rows whose
// capability is an input one also a modern input request
// (ClientSession.serveInput, which passes a request without id).
type clientServeFunc func(cs *ClientSession, ctx context.Context, req *jsonrpc.Request) (any, error)

// methodRow is one method's facts.
type methodRow struct {
	method string
	// eras are the eras in which the server has the method; 0 for the
	// methods only the client serves (the server answers -32601).
	eras       eraSet
	capability capability
	target     targetParam
	// registry is the registry the target is looked up in (where
	// NameRegistered looks, whose per-target Scopes apply), named by the
	// kind of target it holds.
	registry TargetKind
	flags    methodFlags
	// serve is the server's handler; nil when the server does not serve
	// the method.
	serve serveFunc
	// clientServe is the client's handler; nil when the client does not
	// serve the method.
	clientServe clientServeFunc
}

// methodRows is the table. Rows are laid out one field group per line so
// that the server's and the client's handler columns are edited apart.
var methodRows = [...]methodRow{
	{
		serve:  (*Server).serveInitialize,
		method: MethodInitialize, eras: inLegacy,
	},
	{
		serve:  (*Server).servePing,
		method: MethodPing, eras: inLegacy,
		clientServe: (*ClientSession).servePing,
	},
	{
		serve:  (*Server).serveDiscover,
		method: MethodDiscover, eras: inModern,
	},
	{
		serve:  (*Server).serveToolsList,
		method: MethodToolsList, eras: inBoth, capability: capTools,
	},
	{
		serve:  (*Server).serveToolsCall,
		method: MethodToolsCall, eras: inBoth, capability: capTools, target: paramName, registry: TargetTool, flags: mirrorName | mirrorParams | scoped,
	},
	{
		serve:  (*Server).serveResourcesList,
		method: MethodResourcesList, eras: inBoth, capability: capResources,
	},
	{
		serve:  (*Server).serveTemplatesList,
		method: MethodResourcesTemplatesList, eras: inBoth, capability: capResources,
	},
	{
		serve:  (*Server).serveResourcesRead,
		method: MethodResourcesRead, eras: inBoth, capability: capResources, target: paramURI, registry: TargetResource, flags: mirrorName | scoped,
	},
	{
		serve:  (*Server).serveSubscribe,
		method: MethodResourcesSubscribe, eras: inLegacy, capability: capResourcesSubscribe, target: paramURI, registry: TargetResource, flags: scoped,
	},
	{
		serve:  (*Server).serveUnsubscribe,
		method: MethodResourcesUnsubscribe, eras: inLegacy, capability: capResourcesSubscribe, target: paramURI, registry: TargetResource,
	},
	{
		serve:  (*Server).servePromptsList,
		method: MethodPromptsList, eras: inBoth, capability: capPrompts,
	},
	{
		serve:  (*Server).servePromptsGet,
		method: MethodPromptsGet, eras: inBoth, capability: capPrompts, target: paramName, registry: TargetPrompt, flags: mirrorName | scoped,
	},
	{
		serve:  (*Server).serveComplete,
		method: MethodCompletionComplete, eras: inBoth, capability: capCompletions,
	},
	{
		serve:  (*Server).serveSetLevel,
		method: MethodLoggingSetLevel, eras: inLegacy,
	},
	{
		serve:  (*Server).serveListen,
		method: MethodSubscriptionsListen, eras: inModern,
	},
	{
		serve:  (*Server).serveTasksGet,
		method: MethodTasksGet, eras: inBoth, capability: capTasks, target: paramTaskID, flags: mirrorName,
		clientServe: (*ClientSession).serveHostedGet,
	},
	{
		serve:  (*Server).serveTasksResult,
		method: MethodTasksResult, eras: inLegacy, capability: capTasks,
		clientServe: (*ClientSession).serveHostedResult,
	},
	{
		serve:  (*Server).serveTasksList,
		method: MethodTasksList, eras: inLegacy, capability: capTasks,
		clientServe: (*ClientSession).serveHostedList,
	},
	{
		serve:  (*Server).serveTasksCancel,
		method: MethodTasksCancel, eras: inBoth, capability: capTasks, target: paramTaskID, flags: mirrorName,
		clientServe: (*ClientSession).serveHostedCancel,
	},
	{
		serve:  (*Server).serveTasksUpdate,
		method: MethodTasksUpdate, eras: inModern, capability: capTasks, target: paramTaskID, flags: mirrorName,
	},
	{
		serve:  (*Server).serveSkill,
		method: MethodSkillsList, eras: inBoth, capability: capSkills,
	},
	{
		serve:  (*Server).serveSkill,
		method: MethodSkillsGet, eras: inBoth, capability: capSkills,
	},
	{
		method: MethodSamplingCreateMessage, capability: capSampling,
		clientServe: (*ClientSession).answerSampling,
	},
	{
		method: MethodElicitationCreate, capability: capElicitation,
		clientServe: (*ClientSession).answerElicitation,
	},
	{
		method: MethodRootsList, capability: capRoots,
		clientServe: (*ClientSession).answerRoots,
	},
}

// methodIndex is the table's index by name: the one method-keyed map.
// It is built by init, not by its declaration, so that the handlers the
// rows name may look rows up (a variable's initializer may not depend on
// itself through the functions it names).
var methodIndex map[string]*methodRow

func init() {
	methodIndex = make(map[string]*methodRow, len(methodRows))
	for i := range methodRows {
		r := &methodRows[i]
		if methodIndex[r.method] != nil {
			panic("pmcp: method " + r.method + " has two rows")
		}
		methodIndex[r.method] = r
	}
}

// methodOf returns the row of method, nil for a method neither side
// knows.
func methodOf(method string) *methodRow { return methodIndex[method] }
