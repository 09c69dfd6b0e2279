package pmcp

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// httpScopeCheck is the HTTP transport's check, before dispatch, of the
// scopes the request's operation needs (requiredScopes, subscriptionScopes:
// the rule the dispatcher applies too). It runs after the transport's
// header and session checks and before any handler or middleware. It
// answers the request and returns false when the caller lacks one: 403
// with the step-up challenge (StreamableHTTPOptions.InsufficientScope,
// else a Bearer challenge without resource_metadata) and, as body, the
// JSON-RPC error a stream transport answers (scopeRefusal); the refusal is
// logged as every authorization refusal is (logAuthRefusal).
func (h *StreamableHTTPHandler) httpScopeCheck(w http.ResponseWriter, era Era, req *jsonrpc.Request, rs *reqState, auth authResult) bool {
	if !h.s.scoped.Load() || !rs.params.ok {
		return true // the dispatcher refuses params it cannot read
	}
	row := rs.row // set by servePost from its peek
	if row == nil || !row.eras.has(era) {
		return true // the dispatcher answers that the era has no such method
	}
	var required []string
	if req.Method == MethodSubscriptionsListen {
		p, err := decodeParams[ListenParams](req.Params)
		if err != nil {
			return true
		}
		if _, err := newURISet(p.Notifications.ResourceSubscriptions, h.s.subLimits()); err != nil {
			return true // over the limits: refused before any lookup
		}
		required = h.s.subscriptionScopes(p.Notifications.ResourceSubscriptions)
	} else if _, target := rs.params.target(row); target != "" {
		required = h.s.requiredScopes(row, target)
	}
	if len(required) == 0 || hasScopes(required, grantedScopes(auth.info, auth.ctx)) {
		return true
	}
	var err error
	if h.opts.InsufficientScope != nil {
		err = h.opts.InsufficientScope(auth.ctx, required...)
	}
	var ae *AuthError
	if !errors.As(err, &ae) || ae.status() != http.StatusForbidden {
		err = &AuthError{
			Status:     http.StatusForbidden,
			Challenges: []string{`Bearer error="insufficient_scope", scope="` + strings.Join(required, " ") + `"`},
			Err:        ErrInsufficientScope,
		}
	}
	client := ""
	if auth.ctx != nil {
		client = auth.ctx.ClientID
	} else if auth.info != nil {
		client = auth.info.ClientID
	}
	logAuthRefusal(rs.env.httpReq.Context(), h.s.logger, rs.env.httpReq, err, client)
	refuseInsufficientScope.withStatus(setChallenges(w, err)).write(w, &h.refusals, req.ID, scopeRefusal(required))
	return false
}

// logAuthRefusal logs a request that Authenticate or the scope check
// refused, at Info: the status, the reason (the cause, with the request's
// credentials cut out should an authenticator have put them in it,
// capped), the client id when known (AuthError.ClientID, else client),
// and the HTTP peer. The token is never logged.
func logAuthRefusal(ctx context.Context, log *slog.Logger, r *http.Request, err error, client string) {
	// A request with no credentials at all is how every OAuth client
	// starts (the 401 tells it where to get a token): Debug. A credential
	// that was refused is what an operator looks for: Info.
	level := slog.LevelInfo
	if r.Header.Get("Authorization") == "" {
		level = slog.LevelDebug
	}
	if !log.Enabled(ctx, level) {
		return
	}
	status, clientID, cause := http.StatusUnauthorized, client, err
	var ae *AuthError
	if errors.As(err, &ae) {
		status = ae.status()
		if ae.ClientID != "" {
			clientID = ae.ClientID
		}
		if ae.Err != nil {
			cause = ae.Err
		}
	}
	reason := "refused"
	if cause != nil {
		reason = cause.Error()
	}
	for _, v := range r.Header.Values("Authorization") {
		_, cred, _ := strings.Cut(strings.TrimSpace(v), " ")
		if cred = strings.TrimSpace(cred); len(cred) >= 8 {
			reason = strings.ReplaceAll(reason, cred, "[REDACTED]")
		}
	}
	attrs := make([]slog.Attr, 0, 6)
	attrs = append(attrs, slog.Int("status", status), slog.String("reason", capPeerString(reason)))
	if clientID != "" {
		attrs = append(attrs, slog.String("client_id", capPeerString(clientID)))
	}
	attrs = append(attrs, slog.String("http_method", r.Method), slog.String("path", capPeerString(r.URL.Path)), slog.String("remote", r.RemoteAddr))
	log.LogAttrs(ctx, level, "pmcp: request refused by authorization", attrs...)
}

// writeAuthError answers a request that Authenticate refused, counted
// in n.
func writeAuthError(w http.ResponseWriter, n *refusalCounts, err error) {
	status := setChallenges(w, err)
	refuseAuthenticate.withStatus(status).write(w, n, noID, http.StatusText(status))
}

// setChallenges sets the WWW-Authenticate challenges of an authorization
// refusal and returns its HTTP status: err's, when it is an *AuthError,
// else 401 with a bare Bearer challenge.
func setChallenges(w http.ResponseWriter, err error) int {
	status, challenges := http.StatusUnauthorized, []string{"Bearer"}
	var ae *AuthError
	if errors.As(err, &ae) {
		status = ae.status()
		if len(ae.Challenges) > 0 {
			challenges = ae.Challenges
		}
	}
	for _, c := range challenges {
		w.Header().Add("WWW-Authenticate", c)
	}
	return status
}
