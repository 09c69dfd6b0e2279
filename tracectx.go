package pmcp

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// MaxTraceValueLen bounds each trace-context value read from _meta. Longer
// values are ignored (traceparent) or dropped (tracestate, baggage).
const MaxTraceValueLen = 8192

// TraceContext is the W3C trace context a client put in the request _meta
// (keys traceparent, tracestate, baggage). The values are self-reported and
// untrusted: TraceParent is format-checked, the others are only
// length-bounded. Sanitise before interpolating them anywhere.
type TraceContext struct {
	TraceParent string
	TraceState  string
	Baggage     string
}

// traceContextFromMeta extracts a TraceContext from a raw _meta object. It
// reports false when there is no valid traceparent.
func traceContextFromMeta(meta jsontext.Value) (TraceContext, bool) {
	if len(meta) == 0 {
		return TraceContext{}, false
	}
	var m struct {
		TraceParent *string `json:"traceparent"`
		TraceState  *string `json:"tracestate"`
		Baggage     *string `json:"baggage"`
	}
	if err := json.Unmarshal(meta, &m); err != nil || m.TraceParent == nil {
		return TraceContext{}, false
	}
	if !validTraceParent(*m.TraceParent) {
		return TraceContext{}, false
	}
	tc := TraceContext{TraceParent: *m.TraceParent}
	if m.TraceState != nil && len(*m.TraceState) <= MaxTraceValueLen {
		tc.TraceState = *m.TraceState
	}
	if m.Baggage != nil && len(*m.Baggage) <= MaxTraceValueLen {
		tc.Baggage = *m.Baggage
	}
	return tc, true
}

// validTraceParent checks the W3C traceparent format:
// version "-" trace-id(32 hex) "-" parent-id(16 hex) "-" flags(2 hex),
// lower-case hex, version not "ff", ids not all zero. Future versions may
// append "-..." fields, which are accepted.
func validTraceParent(s string) bool {
	if len(s) < 55 || len(s) > MaxTraceValueLen {
		return false
	}
	if !isLowerHex(s[0:2]) || s[0:2] == "ff" || s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return false
	}
	trace, parent, flags := s[3:35], s[36:52], s[53:55]
	if !isLowerHex(trace) || !isLowerHex(parent) || !isLowerHex(flags) {
		return false
	}
	if allZero(trace) || allZero(parent) {
		return false
	}
	if len(s) > 55 {
		// Version 00 has exactly four fields; later versions may add more.
		return s[0:2] != "00" && s[55] == '-'
	}
	return true
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func allZero(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '0' {
			return false
		}
	}
	return true
}
