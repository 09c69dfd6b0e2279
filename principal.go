package pmcp

import (
	"crypto/sha256"
	"encoding/hex"

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
	switch {
	case info == nil && actx == nil:
		return "", true
	case actx != nil && actx.Subject != "":
		return "sub:" + actx.Subject, true
	case info != nil && info.Token != "":
		return tokenPrincipal(info.Token), true
	case actx != nil && actx.Token != "":
		return tokenPrincipal(actx.Token), true
	case info != nil && info.ClientID != "":
		return "client:" + info.ClientID, true
	case actx != nil && actx.ClientID != "":
		return "client:" + actx.ClientID, true
	}
	return "", false
}

func tokenPrincipal(tok Secret) string {
	sum := sha256.Sum256([]byte(tok.Reveal()))
	return "token-sha256:" + hex.EncodeToString(sum[:])
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
