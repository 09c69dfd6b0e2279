package pmcp

import (
	"crypto/subtle"
	"encoding/hex"

	"github.com/gopmcp/pmcp/internal/tokenhash"
	"github.com/gopmcp/pmcp/jsonrpc"
	"github.com/gopmcp/pmcp/reqstate"
)

// principalOf names the caller that server-side state is bound to: legacy
// HTTP sessions, modern requestStates, and anything later kept between
// requests. It is the one place that turns an authentication result into a
// principal; every binding must use it.
//
// In order of preference:
//
//   - AuthContext.Subject: the validated user, stable across token refresh;
//   - the bearer token (AuthInfo.Token, else AuthContext.Token): each token
//     is its own principal, named by its SHA-256 so the secret itself is
//     never kept or compared;
//   - the client id (AuthInfo.ClientID, else AuthContext.ClientID), for
//     credentials that identify nothing finer than a client. Never before
//     the token: a client id names an application that many users share.
//
// The kinds are prefixed so that no value of one kind can equal another.
// Without authentication (both nil) every caller is the same anonymous
// principal "" and ok is true, as on a server without an Authenticate hook.
// An authentication result that names nobody (no subject, token or client
// id) gives ok false: nothing may be bound to it, so such callers never
// share state with each other.
func principalOf(info *AuthInfo, actx *AuthContext) (id string, ok bool) {
	var buf [principalBufLen]byte
	b, ok := appendPrincipal(buf[:0], info, actx)
	return string(b), ok
}

// principalBufLen holds a token principal and a subject of up to 124
// bytes without a heap allocation.
const principalBufLen = 128

// appendPrincipal appends the principal of info and actx (principalOf)
// to dst.
func appendPrincipal(dst []byte, info *AuthInfo, actx *AuthContext) ([]byte, bool) {
	switch {
	case info == nil && actx == nil:
		return dst, true
	case actx != nil && actx.Subject != "":
		return append(append(dst, "sub:"...), actx.Subject...), true
	case info != nil && info.Token != "":
		return appendTokenPrincipal(dst, info.Token), true
	case actx != nil && actx.Token != "":
		return appendTokenPrincipal(dst, actx.Token), true
	case info != nil && info.ClientID != "":
		return append(append(dst, "client:"...), info.ClientID...), true
	case actx != nil && actx.ClientID != "":
		return append(append(dst, "client:"...), actx.ClientID...), true
	}
	return dst, false
}

func appendTokenPrincipal(dst []byte, tok Secret) []byte {
	sum := tokenhash.SHA256(tok.Reveal())
	return hex.AppendEncode(append(dst, "token-sha256:"...), sum[:])
}

// principalMatches reports whether the request whose authentication is
// info and actx is the principal want (a principalOf result), comparing
// in constant time and without allocating. A request that names no
// principal matches nothing.
func principalMatches(want string, info *AuthInfo, actx *AuthContext) bool {
	var buf [principalBufLen]byte
	b, ok := appendPrincipal(buf[:0], info, actx)
	if !ok || len(b) != len(want) {
		return false
	}
	var v byte
	for i := range b {
		v |= b[i] ^ want[i]
	}
	return subtle.ConstantTimeByteEq(v, 0) == 1
}

// stateBinding is what the requestState of a request to method with params
// digest parts is bound to; ok is false when the request's authentication
// names no principal (see principalOf), and then nothing may be sealed or
// opened for it.
func stateBinding(env *requestEnv, method string, parts [][]byte) (b reqstate.Binding, ok bool) {
	principal, ok := principalOf(env.authInfo, env.authCtx)
	return mrtrBinding(principal, method, parts...), ok
}

// invalidRequestState is the one answer to a requestState that does not
// verify, whatever the reason, so the answer tells nothing about it.
func invalidRequestState() *jsonrpc.Error {
	return invalidParams("invalid requestState: it was altered, expired in an unexpected way, or belongs to another request")
}
