package otel

import "go.opentelemetry.io/otel/attribute"

// Attribute keys of the MCP semantic conventions (Development stability).
const (
	// KeyMethodName is the JSON-RPC method, for example "tools/call".
	KeyMethodName attribute.Key = "mcp.method.name"
	// KeyProtocolVersion is the MCP protocol version of the request, for
	// example "2026-07-28".
	KeyProtocolVersion attribute.Key = "mcp.protocol.version"
	// KeySessionID is the legacy-era Mcp-Session-Id. It is never set in the
	// modern era, which has no sessions.
	KeySessionID attribute.Key = "mcp.session.id"
	// KeyResourceURI is the URI of resources/read, resources/subscribe and
	// resources/unsubscribe.
	KeyResourceURI attribute.Key = "mcp.resource.uri"
	// KeyJSONRPCRequestID is the string form of the JSON-RPC id.
	KeyJSONRPCRequestID attribute.Key = "jsonrpc.request.id"
	// KeyToolName is the tool of tools/call.
	KeyToolName attribute.Key = "gen_ai.tool.name"
	// KeyPromptName is the prompt of prompts/get.
	KeyPromptName attribute.Key = "gen_ai.prompt.name"
	// KeyOperationName is "execute_tool" for tools/call, unset otherwise.
	KeyOperationName attribute.Key = "gen_ai.operation.name"
	// KeyNetworkTransport is "pipe" (stdio), "tcp" or "quic" (HTTP), or
	// "inproc" (in-memory).
	KeyNetworkTransport attribute.Key = "network.transport"
	// KeyNetworkProtocolName is "http" on Streamable HTTP.
	KeyNetworkProtocolName attribute.Key = "network.protocol.name"
	// KeyNetworkProtocolVersion is the HTTP version, for example "1.1".
	KeyNetworkProtocolVersion attribute.Key = "network.protocol.version"
	// KeyClientAddress and KeyClientPort are the HTTP peer of a server
	// span (a proxy's address when there is one).
	KeyClientAddress attribute.Key = "client.address"
	KeyClientPort    attribute.Key = "client.port"
	// KeyServerAddress and KeyServerPort are the HTTP endpoint's host and
	// port on client spans and the client histogram.
	KeyServerAddress attribute.Key = "server.address"
	KeyServerPort    attribute.Key = "server.port"
	// KeyErrorType is set iff the operation failed: the JSON-RPC error code
	// as a string, ErrorTypeToolError, ErrorTypeTimeout or ErrorTypeOther.
	KeyErrorType attribute.Key = "error.type"
	// KeyResponseStatusCode is the JSON-RPC error code of the response as
	// a string, for example "-32602"; unset on success.
	KeyResponseStatusCode attribute.Key = "rpc.response.status_code"
)

// Values of KeyErrorType and KeyOperationName.
const (
	// ErrorTypeToolError marks a tools/call whose result has isError set.
	ErrorTypeToolError = "tool_error"
	// ErrorTypeTimeout marks a client call that ran out of time.
	ErrorTypeTimeout = "timeout"
	// ErrorTypeOther marks a failure without a JSON-RPC code (transport).
	ErrorTypeOther = "_OTHER"
	// OperationExecuteTool is KeyOperationName of tools/call.
	OperationExecuteTool = "execute_tool"
)

// Metric names. Every one is a histogram in seconds with the bucket
// boundaries of DurationBuckets.
const (
	MetricServerOperationDuration = "mcp.server.operation.duration"
	MetricClientOperationDuration = "mcp.client.operation.duration"
	MetricServerSessionDuration   = "mcp.server.session.duration"
)

// DurationBuckets returns the explicit bucket boundaries (seconds) the MCP
// conventions recommend for every duration histogram. The slice is new on
// each call.
func DurationBuckets() []float64 {
	return []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}
}

// instrumentationName is the instrumentation scope of tracers and meters.
const instrumentationName = "github.com/gopmcp/pmcp/otel"
