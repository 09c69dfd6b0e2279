package pmcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// RequestHandlerExtra is the per-request context every tool, resource and
// prompt handler receives next to its ctx. The dispatcher fills it once at
// ingress; handlers read it without taking any server-wide lock.
//
// Cancellation: the ctx passed to the handler (also returned by Context)
// is cancelled when the client cancels the request (notifications/cancelled
// on stdio and legacy connections, a closed stream on modern HTTP), when the
// connection ends, or when the server shuts down.
//
// A RequestHandlerExtra built by NewRequestHandlerExtra or
// DefaultRequestHandlerExtra has no sinks: progress and logging are silent
// no-ops returning nil, and Peer is nil. That keeps handlers unit-testable.
type RequestHandlerExtra struct {
	ctx context.Context

	// RequestID is the JSON-RPC id of the request being served.
	RequestID jsonrpc.ID
	// SessionID is the legacy HTTP session id, empty when there is none
	// (stdio, in-memory, modern era).
	SessionID string
	// AuthInfo describes the credential the request arrived with, if any.
	AuthInfo *AuthInfo
	// AuthContext is the validated identity when auth is enabled.
	AuthContext *AuthContext
	// Metadata carries middleware-provided strings (tokens, tenant ids).
	// Secret values, and values under sensitive keys, are redacted
	// whenever it is printed or marshalled (see Metadata).
	Metadata Metadata
	// ProgressReporter sends progress for this request. It is nil when the
	// request carried no progressToken, so progress calls are no-ops then.
	ProgressReporter ProgressReporter
	// LogSink receives this request's notifications/message records. It is
	// not gated by progress tokens. Nil means logging is a silent no-op.
	LogSink LogSink
	// LogLevel is the level resolved for this request. LevelUnset means
	// nobody set one and DefaultLogLevel applies. Records strictly below
	// the effective level are dropped before anything is built.
	LogLevel LoggingLevel
	// TaskRequest is the raw task-augmentation member ("task") of a
	// 2025-11-25 tools/call, nil when the client did not ask for a task.
	// Whether the call runs as a task is decided by the server (see
	// TaskOptions); TaskID tells the handler.
	TaskRequest jsontext.Value
	// RequestMeta is the request's raw _meta object, nil when absent.
	RequestMeta jsontext.Value
	// ProtocolContext is the era, version and client identity resolved at
	// ingress, nil when none was resolved (unit tests).
	ProtocolContext *ProtocolContext
	// Extensions holds typed values from middleware (keyed by Go type).
	Extensions Extensions
	// Peer is the back-channel to the client for sampling, roots,
	// elicitation and progress. Nil when there is none (an extra built
	// outside a server): code that also runs there checks before use.
	Peer Peer

	resultMeta  *resultMetaSlot
	mrtr        *mrtrIn
	closeStream func() bool
	// Legacy era: the request's back-channel (nil when none) and the
	// session, for notifications that outlive the request.
	notify  func(ctx context.Context, method string, params any) error
	session *session
	// task is the runner when the handler runs as a task.
	task *taskRunner
}

// ProtocolContext is what the dispatcher resolved about the protocol for one
// request. ClientInfo and ClientCapabilities are SELF-REPORTED by the client:
// informational only, never an authorization anchor. Read-only: legacy
// sessions whose initialize params were identical share one.
type ProtocolContext struct {
	Era                Era
	ProtocolVersion    string
	ClientInfo         *Implementation
	ClientCapabilities *ClientCapabilities
}

// LogSink receives a request's log records. Log must not block for long:
// it is called synchronously from the handler.
type LogSink interface {
	Log(rec *LoggingMessageParams)
}

// LogSinkFunc adapts a function to LogSink.
type LogSinkFunc func(rec *LoggingMessageParams)

// Log calls f.
func (f LogSinkFunc) Log(rec *LoggingMessageParams) { f(rec) }

// Peer is the server-to-client back-channel of a request. In the legacy era
// each call is a real JSON-RPC request to the client; in the modern era it
// is answered from the retry's inputResponses, or it ends the call with an
// input_required result (see ErrInputRequired) and the handler is re-run
// when the client retries.
type Peer interface {
	Sample(ctx context.Context, p *CreateMessageParams) (*CreateMessageResult, error)
	ListRoots(ctx context.Context) (*ListRootsResult, error)
	Elicit(ctx context.Context, p *ElicitParams) (*ElicitResult, error)
	NotifyProgress(ctx context.Context, p *ProgressParams) error
}

// ErrNoPeer is returned when a message to the client needs a back-channel
// the request does not have (unit tests, transports without one).
var ErrNoPeer = errors.New("pmcp: no client back-channel for this request")

type resultMetaSlot struct {
	mu sync.Mutex
	m  map[string]any
}

// NewRequestHandlerExtra returns an extra for request id whose cancellation
// token is ctx. It has no sinks and no peer.
func NewRequestHandlerExtra(ctx context.Context, id jsonrpc.ID) *RequestHandlerExtra {
	if ctx == nil {
		ctx = context.Background()
	}
	return &RequestHandlerExtra{ctx: ctx, RequestID: id, resultMeta: new(resultMetaSlot)}
}

// DefaultRequestHandlerExtra returns an extra for tests and direct handler
// calls: a random string request id, a context that is never cancelled, no
// sinks and no peer. Not for production dispatch.
func DefaultRequestHandlerExtra() *RequestHandlerExtra {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return NewRequestHandlerExtra(context.Background(), jsonrpc.StringID(hex.EncodeToString(b[:])))
}

// Context returns the request's context: the cancellation token.
func (e *RequestHandlerExtra) Context() context.Context { return e.ctx }

// IsCancelled reports whether the request has been cancelled.
func (e *RequestHandlerExtra) IsCancelled() bool { return e.ctx.Err() != nil }

// Cancelled returns a channel closed when the request is cancelled: the Go
// way to wait for cancellation (select on it, or <-extra.Cancelled()).
func (e *RequestHandlerExtra) Cancelled() <-chan struct{} { return e.ctx.Done() }

// Clone returns a copy that shares the cancellation token and the
// result-meta slot, with its own Metadata and Extensions maps.
func (e *RequestHandlerExtra) Clone() *RequestHandlerExtra {
	c := *e
	c.Metadata = e.Metadata.clone()
	c.Extensions = e.Extensions.clone()
	if c.resultMeta == nil {
		e.resultMeta = new(resultMetaSlot)
		c.resultMeta = e.resultMeta
	}
	return &c
}

// CloseStream asks the transport to end this request's response stream now
// while the request keeps running (SEP-1699 polling). A legacy Streamable
// HTTP client then reconnects with GET and Last-Event-ID after the announced
// retry delay and receives the rest, the result included, from the event
// store. It reports whether a stream was closed; it is a no-op returning
// false on other transports, in the modern era and for JSON responses.
func (e *RequestHandlerExtra) CloseStream() bool {
	if e.closeStream == nil {
		return false
	}
	return e.closeStream()
}

// Era returns the era of the request, EraUnknown without a protocol context.
func (e *RequestHandlerExtra) Era() Era {
	if e.ProtocolContext == nil {
		return EraUnknown
	}
	return e.ProtocolContext.Era
}

// ProtocolVersion returns the negotiated version, "" without a context.
func (e *RequestHandlerExtra) ProtocolVersion() string {
	if e.ProtocolContext == nil {
		return ""
	}
	return e.ProtocolContext.ProtocolVersion
}

// ClientInfo returns the client's self-reported implementation, or nil.
// Informational only: never use it for authorization. Read-only: requests
// that carried the same bytes may share it.
func (e *RequestHandlerExtra) ClientInfo() *Implementation {
	if e.ProtocolContext == nil {
		return nil
	}
	return e.ProtocolContext.ClientInfo
}

// ClientCapabilities returns the client's self-reported capabilities (from
// the legacy handshake or the modern per-request _meta), or nil when absent.
// It never reads server-wide state and never fabricates a default.
// Read-only: requests that carried the same bytes may share it.
func (e *RequestHandlerExtra) ClientCapabilities() *ClientCapabilities {
	if e.ProtocolContext == nil {
		return nil
	}
	return e.ProtocolContext.ClientCapabilities
}

// IsTaskRequest reports whether the client asked for task-augmented
// execution: a 2025-11-25 params.task, or a handler running as a task
// (in the 2026-07-28 era, where the server decides, from its first line).
func (e *RequestHandlerExtra) IsTaskRequest() bool { return len(e.TaskRequest) > 0 || e.task != nil }

// GetMetadata returns the plain metadata value for key: a value set with
// SetSecretMetadata reads as absent here (see Metadata).
func (e *RequestHandlerExtra) GetMetadata(key string) (string, bool) {
	return e.Metadata.get(key)
}

// SetMetadata sets a plain metadata value (typically from middleware).
func (e *RequestHandlerExtra) SetMetadata(key, value string) {
	e.Metadata.set(key, value)
}

// SetSecretMetadata sets a metadata value that is never printed nor
// marshalled, whatever its key (see Metadata).
func (e *RequestHandlerExtra) SetSecretMetadata(key string, value Secret) {
	e.Metadata.setSecret(key, value)
}

// GetSecretMetadata returns the metadata value for key as a Secret; call
// Reveal on it where the clear text is needed.
func (e *RequestHandlerExtra) GetSecretMetadata(key string) (Secret, bool) {
	return e.Metadata.getSecret(key)
}

// TraceContext returns the W3C trace context from the request _meta; false
// when there is no valid traceparent. The values are untrusted.
func (e *RequestHandlerExtra) TraceContext() (TraceContext, bool) {
	return traceContextFromMeta(e.RequestMeta)
}

// SetResultMeta merges keys into the _meta of this request's result. Keys
// merge, never replace the whole map: a key set here wins over a same-name
// key already on the result (whether the handler's own envelope or an
// earlier call), unrelated keys survive, and repeated calls accumulate. It
// applies to typed and verbatim results alike and is safe from any
// goroutine.
func (e *RequestHandlerExtra) SetResultMeta(meta map[string]any) {
	if e.resultMeta == nil {
		e.resultMeta = new(resultMetaSlot)
	}
	s := e.resultMeta
	s.mu.Lock()
	if s.m == nil {
		s.m = make(map[string]any, len(meta))
	}
	maps.Copy(s.m, meta)
	s.mu.Unlock()
}

// mergeResultMeta returns base with the keys set by SetResultMeta and then,
// when info (a map of serverInfo alone, shared and never written) is not
// nil and no serverInfo key is there yet, its serverInfo. base is never
// written (a result, and so its _meta, may be shared between requests): a
// new map is made when anything is added, except that info itself is
// returned when it is the whole result (most modern results: no map to
// make per result).
func (e *RequestHandlerExtra) mergeResultMeta(base Meta, info Meta) Meta {
	s := e.resultMeta
	if s == nil {
		return mergeMeta(base, nil, info)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return mergeMeta(base, s.m, info)
}

// mergeMeta is mergeResultMeta with the keys set given.
func mergeMeta(base Meta, set map[string]any, info Meta) Meta {
	addInfo := false
	if info != nil {
		_, inBase := base[MetaServerInfo]
		_, inSet := set[MetaServerInfo]
		addInfo = !inBase && !inSet
	}
	if len(set) == 0 && !addInfo {
		return base
	}
	if len(set) == 0 && len(base) == 0 {
		return info // addInfo: serverInfo alone
	}
	n := len(base) + len(set)
	if addInfo {
		n++
	}
	m := make(Meta, n)
	maps.Copy(m, base)
	maps.Copy(m, set)
	if addInfo {
		m[MetaServerInfo] = info[MetaServerInfo]
	}
	return m
}

// EffectiveLogLevel is the level records are filtered against: LogLevel
// when set, else DefaultLogLevel.
func (e *RequestHandlerExtra) EffectiveLogLevel() LoggingLevel {
	if e.LogLevel == LevelUnset {
		return DefaultLogLevel
	}
	return e.LogLevel
}

// Log emits a notifications/message record to this request's client.
//
// A record strictly below the effective level is dropped before anything
// is built. Without a sink the call is a no-op. A nil error means the
// record was handed to the sink (or there was none), not that the client
// received it: queues downstream are bounded (see the transport docs).
// Logging is not rate-limited and not gated on the logging capability.
func (e *RequestHandlerExtra) Log(level LoggingLevel, message string) error {
	if level < e.EffectiveLogLevel() || e.LogSink == nil {
		return nil
	}
	e.LogSink.Log(&LoggingMessageParams{Level: level, Data: message})
	return nil
}

// LogWithData is Log with structured data attached: the record's data is
// {"message": message, "data": data}.
func (e *RequestHandlerExtra) LogWithData(level LoggingLevel, message string, data any) error {
	if level < e.EffectiveLogLevel() || e.LogSink == nil {
		return nil
	}
	e.LogSink.Log(&LoggingMessageParams{Level: level, Data: map[string]any{"message": message, "data": data}})
	return nil
}

// Principal names the caller that server-side state is bound to, as the
// server binds its own (legacy HTTP sessions, requestStates, tasks):
// AuthContext.Subject, else the SHA-256 of the bearer token, else the client
// id, each kind prefixed so that no two kinds are equal. Without
// authentication it is "" with ok true (every caller is the same anonymous
// principal); an authentication that names nobody gives ok false, and
// nothing may be bound to such a caller. Middleware and proxies that keep
// state between requests bind it to this, so that they agree with the
// server on who the caller is.
func (e *RequestHandlerExtra) Principal() (id string, ok bool) {
	if e == nil {
		return principalOf(nil, nil)
	}
	return principalOf(e.AuthInfo, e.AuthContext)
}

// Extensions is a typed map for request-scoped values that middleware hands
// to handlers, keyed by Go type: at most one value per type. Printing an
// Extensions shows type names only, never values, so it is safe to log.
// The zero value is ready to use.
type Extensions struct {
	m map[reflect.Type]any
}

// SetExtension stores v under its type T, replacing any earlier value.
func SetExtension[T any](e *Extensions, v T) {
	if e.m == nil {
		e.m = make(map[reflect.Type]any)
	}
	e.m[reflect.TypeFor[T]()] = v
}

// GetExtension returns the value stored under type T.
func GetExtension[T any](e *Extensions) (T, bool) {
	v, ok := e.m[reflect.TypeFor[T]()]
	if !ok {
		var zero T
		return zero, false
	}
	return v.(T), true
}

// RemoveExtension deletes the value stored under type T.
func RemoveExtension[T any](e *Extensions) { delete(e.m, reflect.TypeFor[T]()) }

// Len reports how many values are stored.
func (e *Extensions) Len() int { return len(e.m) }

// clone returns a shallow copy: the map is new, the values are shared
// (store pointers for large values). RequestHandlerExtra.Clone uses it.
func (e *Extensions) clone() Extensions {
	if e.m == nil {
		return Extensions{}
	}
	m := make(map[reflect.Type]any, len(e.m))
	for k, v := range e.m {
		m[k] = v
	}
	return Extensions{m: m}
}

// typeNames lists the stored types, sorted.
func (e *Extensions) typeNames() []string {
	names := make([]string, 0, len(e.m))
	for t := range e.m {
		names = append(names, t.String())
	}
	slices.Sort(names)
	return names
}

// String prints the stored type names only.
func (e Extensions) String() string {
	return "Extensions{" + strings.Join(e.typeNames(), ", ") + "}"
}

// Format makes every fmt verb print type names only.
func (e Extensions) Format(f fmt.State, _ rune) { fmt.Fprint(f, e.String()) }

// LogValue implements slog.LogValuer with type names only.
func (e Extensions) LogValue() slog.Value { return slog.AnyValue(e.typeNames()) }
