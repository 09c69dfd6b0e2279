package pmcp

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// String describes the extra for logs: ids, era, auth identity, metadata
// (sensitive values redacted), extension type names and which sinks are
// attached. Tokens and secrets are never printed.
func (e *RequestHandlerExtra) String() string {
	if e == nil {
		return "RequestHandlerExtra(nil)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "RequestHandlerExtra{id=%s", e.RequestID)
	if e.SessionID != "" {
		fmt.Fprintf(&b, " session=%q", e.SessionID)
	}
	if pc := e.ProtocolContext; pc != nil {
		fmt.Fprintf(&b, " era=%s version=%s", pc.Era, pc.ProtocolVersion)
	}
	if e.AuthContext != nil {
		fmt.Fprintf(&b, " subject=%q", e.AuthContext.Subject)
	}
	if e.AuthInfo != nil {
		fmt.Fprintf(&b, " client_id=%q token=%s", e.AuthInfo.ClientID, redacted)
	}
	if e.Metadata.Len() > 0 {
		fmt.Fprintf(&b, " metadata=%s", e.Metadata.String())
	}
	if e.Extensions.Len() > 0 {
		fmt.Fprintf(&b, " extensions=%s", e.Extensions.String())
	}
	fmt.Fprintf(&b, " log_level=%s progress=%t log_sink=%t peer=%t task=%t cancelled=%t}",
		e.EffectiveLogLevel(), e.ProgressReporter != nil, e.LogSink != nil, e.Peer != nil, e.IsTaskRequest(), e.ctx != nil && e.IsCancelled())
	return b.String()
}

// Format routes every fmt verb (%v, %+v, %#v, %s) through String, so no
// field is ever printed raw.
func (e *RequestHandlerExtra) Format(f fmt.State, _ rune) { fmt.Fprint(f, e.String()) }

// LogValue implements slog.LogValuer with the same redaction as String.
func (e *RequestHandlerExtra) LogValue() slog.Value {
	if e == nil {
		return slog.StringValue("RequestHandlerExtra(nil)")
	}
	attrs := []slog.Attr{slog.String("id", e.RequestID.String())}
	if e.SessionID != "" {
		attrs = append(attrs, slog.String("session", e.SessionID))
	}
	if pc := e.ProtocolContext; pc != nil {
		attrs = append(attrs, slog.String("era", pc.Era.String()), slog.String("version", pc.ProtocolVersion))
	}
	if e.AuthContext != nil {
		attrs = append(attrs, slog.String("subject", e.AuthContext.Subject))
	}
	if e.Metadata.Len() > 0 {
		attrs = append(attrs, slog.Any("metadata", e.Metadata))
	}
	if e.Extensions.Len() > 0 {
		attrs = append(attrs, slog.Any("extensions", e.Extensions.typeNames()))
	}
	return slog.GroupValue(attrs...)
}

// extraJSON is the marshalled view of a RequestHandlerExtra: the fields of
// String, nothing more.
type extraJSON struct {
	ID         jsontext.Value `json:"id"`
	Session    string         `json:"session,omitempty"`
	Era        string         `json:"era,omitempty"`
	Version    string         `json:"version,omitempty"`
	Subject    string         `json:"subject,omitempty"`
	ClientID   string         `json:"clientId,omitempty"`
	Metadata   *Metadata      `json:"metadata,omitempty"`
	Extensions []string       `json:"extensions,omitempty"`
	LogLevel   string         `json:"logLevel"`
	Progress   bool           `json:"progress"`
	LogSink    bool           `json:"logSink"`
	Peer       bool           `json:"peer"`
	Task       bool           `json:"task"`
}

// MarshalJSON encodes the extra deliberately, with encoding/json and json
// v2 alike, as the view String and LogValue print: the request id as its
// JSON value, session, era, version, the authenticated subject and client
// id, metadata (sensitive values redacted), extension type names, the
// effective log level and which sinks are attached. Tokens, secrets, the
// raw _meta and task members, and the sinks themselves are never encoded.
func (e *RequestHandlerExtra) MarshalJSON() ([]byte, error) {
	if e == nil {
		return []byte("null"), nil
	}
	v := extraJSON{
		ID:       e.RequestID.AppendJSON(nil),
		Session:  e.SessionID,
		LogLevel: e.EffectiveLogLevel().String(),
		Progress: e.ProgressReporter != nil,
		LogSink:  e.LogSink != nil,
		Peer:     e.Peer != nil,
		Task:     e.IsTaskRequest(),
	}
	if pc := e.ProtocolContext; pc != nil {
		v.Era, v.Version = pc.Era.String(), pc.ProtocolVersion
	}
	if e.AuthContext != nil {
		v.Subject = e.AuthContext.Subject
	}
	if e.AuthInfo != nil {
		v.ClientID = e.AuthInfo.ClientID
	}
	if e.Metadata.Len() > 0 {
		v.Metadata = &e.Metadata
	}
	if e.Extensions.Len() > 0 {
		v.Extensions = e.Extensions.typeNames()
	}
	return Marshal(&v)
}
