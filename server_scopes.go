package pmcp

import (
	"errors"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// scopeErrorCode is the JSON-RPC error code of a request refused for
// missing scopes, on every transport (see ErrInsufficientScope).
const scopeErrorCode = jsonrpc.CodeInvalidRequest

// ErrInsufficientScope is the cause of every scope refusal: errors.Is finds
// it in the *AuthError of the default HTTP answer. On the wire, on every
// transport, the refusal is the JSON-RPC error -32600
// (jsonrpc.CodeInvalidRequest) with data
// {"error":"insufficient_scope","scope":"<every scope needed>"}; over
// Streamable HTTP it is the body of the 403 step-up answer (see
// StreamableHTTPOptions.InsufficientScope).
var ErrInsufficientScope = errors.New("pmcp: insufficient scope")

// checkScopes validates the Scopes of a registration and returns a copy
// (so the caller's slice may change afterwards), without duplicates. A
// scope is a non-empty RFC 6749 scope-token; offline_access is refused,
// since a server never asks for it in a challenge.
func checkScopes(what string, scopes []string) ([]string, error) {
	if len(scopes) == 0 {
		return nil, nil
	}
	out := make([]string, 0, len(scopes))
	for _, sc := range scopes {
		if !validScopeToken(sc) {
			return nil, regErr("%s: %q is not a valid scope", what, sc)
		}
		if sc == "offline_access" {
			return nil, regErr("%s: offline_access is not a scope an operation can require", what)
		}
		if !contains(out, sc) {
			out = append(out, sc)
		}
	}
	return out, nil
}

// validScopeToken reports whether s is an RFC 6749 §3.3 scope-token:
// 1*( %x21 / %x23-5B / %x5D-7E ).
func validScopeToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// grantedScopes are the scopes of a caller: AuthContext's, else
// AuthInfo's, else none.
func grantedScopes(info *AuthInfo, actx *AuthContext) []string {
	if actx != nil {
		return actx.Scopes
	}
	if info != nil {
		return info.Scopes
	}
	return nil
}

// hasScopes reports whether granted holds every scope of required.
func hasScopes(required, granted []string) bool {
	for _, r := range required {
		if !contains(granted, r) {
			return false
		}
	}
	return true
}

// scopeRefusal is the JSON-RPC error of a request lacking scopes. It names
// every scope the operation needs, like the HTTP challenge.
func scopeRefusal(required []string) *jsonrpc.Error {
	// A struct, not a map: the members keep one order on every transport.
	data, _ := json.Marshal(struct {
		Error string `json:"error"`
		Scope string `json:"scope"`
	}{"insufficient_scope", strings.Join(required, " ")})
	return &jsonrpc.Error{Code: scopeErrorCode, Message: "insufficient scope: the request needs scope " + strings.Join(required, " "), Data: data}
}

// authorize refuses a request whose caller lacks a scope of required.
func authorize(extra *RequestHandlerExtra, required []string) error {
	if len(required) == 0 {
		return nil
	}
	var info *AuthInfo
	var actx *AuthContext
	if extra != nil {
		info, actx = extra.AuthInfo, extra.AuthContext
	}
	if hasScopes(required, grantedScopes(info, actx)) {
		return nil
	}
	return scopeRefusal(required)
}

// noteScoped records that a scoped registration exists, so the HTTP
// transport starts looking scopes up (it skips the lookup before).
func (s *Server) noteScoped(scopes []string) {
	if len(scopes) > 0 {
		s.scoped.Store(true)
	}
}

// requiredScopes is the scope rule: the scopes that the method of row on
// target (a tool or prompt name, a resource URI) needs: the Scopes target
// was registered with in row.registry when the row is scoped; nil when
// none or when target is not registered (the dispatcher then answers as
// for any unknown target). Subscribing to a resource needs what reading it
// needs: the updates tell what the resource holds. Unsubscribing needs
// nothing (see the scoped flag).
func (s *Server) requiredScopes(row *methodRow, target string) []string {
	if row == nil || row.flags&scoped == 0 {
		return nil
	}
	switch row.registry {
	case TargetTool:
		if st, ok := s.tools.get(target); ok {
			return st.scopes
		}
	case TargetPrompt:
		if sp, ok := s.prompts.get(target); ok {
			return sp.scopes
		}
	case TargetResource:
		_, _, _, scopes := s.lookupResource(target)
		return scopes
	}
	return nil
}

// subscriptionScopes are the scopes needed to subscribe to every resource
// of uris (a subscriptions/listen filter), each once, in order.
func (s *Server) subscriptionScopes(uris []string) []string {
	var out []string
	subscribe := methodOf(MethodResourcesSubscribe)
	for _, u := range uris {
		for _, sc := range s.requiredScopes(subscribe, u) {
			if !contains(out, sc) {
				out = append(out, sc)
			}
		}
	}
	return out
}
