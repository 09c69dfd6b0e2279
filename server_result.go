package pmcp

import (
	"reflect"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// A handler may return the same result value to many requests (a cached
// answer, a package-level value). The dispatcher therefore never writes
// into the value it gets: finishResult makes a shallow copy, normalizes and
// decorates the copy, and sends that. The copies of the results handlers
// return live in the request's reqState, so copying allocates nothing;
// maps and slices reachable from the result are shared and only read
// (_meta is replaced by a new map whenever something is added to it).

// resultCopy is the per-request storage of the result being sent.
type resultCopy struct {
	// owned is the ResultFields of the result this request may write
	// into: one of the copies below, or a result the dispatcher built
	// itself for this request (adopt).
	owned    *ResultFields
	call     CallToolResult
	read     ReadResourceResult
	prompt   GetPromptResult
	complete CompleteResult
	// ttl backs CacheFields.TTLMs when the dispatcher fills it.
	ttl int64
}

// adopt marks res, built by the dispatcher for this request alone, as
// writable, so finishResult does not copy it.
func (rc *resultCopy) adopt(res Result) Result {
	rc.owned = res.resultFields()
	return res
}

// own returns res when it is already this request's, else a shallow copy
// of it that is.
func (rc *resultCopy) own(res Result) Result {
	if res.resultFields() == rc.owned {
		return res
	}
	var c Result
	switch r := res.(type) {
	case *CallToolResult:
		rc.call = *r
		c = &rc.call
	case *ReadResourceResult:
		rc.read = *r
		c = &rc.read
	case *GetPromptResult:
		rc.prompt = *r
		c = &rc.prompt
	case *CompleteResult:
		rc.complete = *r
		c = &rc.complete
	default:
		// A result the dispatcher did not build for this request (a list
		// result a middleware cached, say): one allocation.
		v := reflect.ValueOf(res)
		if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
			return nil
		}
		p := reflect.New(v.Elem().Type())
		p.Elem().Set(v.Elem())
		c = p.Interface().(Result)
		if c.resultFields() == res.resultFields() {
			// The fields are behind a pointer the copy shares.
			return nil
		}
	}
	rc.owned = c.resultFields()
	return c
}

// finishResult returns what is sent for res, the result of a feature
// method: this request's copy of it with the era's normalization and
// decoration (result _meta from SetResultMeta; in the modern era
// resultType, serverInfo and the cache hints). res itself is not written.
func (s *Server) finishResult(res Result, env *requestEnv, rs *reqState, era Era) (Result, error) {
	if res == nil {
		return nil, nil
	}
	res = rs.out.own(res)
	if res == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error: the result cannot be copied"}
	}
	modern := era == EraModern
	switch r := res.(type) {
	case *CallToolResult:
		if r.Content == nil {
			r.Content = []Content{}
		}
		if r.StructuredContent != nil && !modern && !isJSONObject(r.StructuredContent) {
			// Before 2026-07-28 structuredContent must be an object; the
			// text content still carries the value.
			r.StructuredContent = nil
		}
	case *GetPromptResult:
		if r.Messages == nil {
			r.Messages = []*PromptMessage{}
		}
	case *CompleteResult:
		if r.Completion.Values == nil {
			r.Completion.Values = []string{}
		}
	}
	f := res.resultFields()
	var info Meta
	if modern {
		info = s.infoMeta
	}
	// SetResultMeta keys (from the handler or a middleware) go on every
	// result, input_required included.
	_, inputRequired := res.(*InputRequiredResult)
	f.Meta = rs.extra.mergeResultMeta(f.Meta, info)
	if !modern {
		return res, nil
	}
	if f.ResultType == "" {
		f.ResultType = resultTypeComplete
		if inputRequired {
			f.ResultType = resultTypeInputRequired
		}
	}
	if c, ok := res.(cacheable); ok && f.ResultType == resultTypeComplete {
		cf := c.cacheFields()
		if cf.TTLMs == nil {
			rs.out.ttl = s.opts.CacheTTL.Milliseconds()
			cf.TTLMs = &rs.out.ttl
		}
		if cf.CacheScope == "" {
			cf.CacheScope = CacheScopePublic
			if env.authCtx != nil || env.authInfo != nil {
				cf.CacheScope = CacheScopePrivate
			}
		}
	}
	return res, nil
}
