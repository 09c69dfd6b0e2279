package gateway

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
	"github.com/gopmcp/pmcp/transport/memory"
)

// asCaller is a middleware that authenticates every request as sub with
// scopes, as an HTTP Authenticate hook would.
func asCaller(sub string, scopes ...string) pmcp.Middleware {
	return func(next pmcp.MethodHandler) pmcp.MethodHandler {
		return func(ctx context.Context, req *pmcp.Request) (pmcp.Result, error) {
			req.Extra.AuthContext = &pmcp.AuthContext{Subject: sub, ClientID: "app", Scopes: scopes,
				Claims: pmcp.Attributes{"sub": sub}, Token: pmcp.Secret("tok-" + sub)}
			return next(ctx, req)
		}
	}
}

type auditLog struct {
	mu   sync.Mutex
	recs []AuditRecord
}

func (a *auditLog) add(r AuditRecord) { a.mu.Lock(); a.recs = append(a.recs, r); a.mu.Unlock() }
func (a *auditLog) last() AuditRecord {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.recs[len(a.recs)-1]
}

// session serves srv over an in-memory pipe to a client of era.
func session(t *testing.T, srv *pmcp.Server, era pmcp.Era) *pmcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	a, b := memory.NewPipe()
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ctx, a) }()
	cs, err := pmcp.NewClient(pmcp.ClientOptions{Era: era}).Connect(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close(); cancel(); <-done })
	return cs
}

func newServer(t *testing.T, mw ...pmcp.Middleware) *pmcp.Server {
	t.Helper()
	complete := func(context.Context, *pmcp.RequestHandlerExtra, *pmcp.CompleteParams) (*pmcp.CompleteResult, error) {
		return &pmcp.CompleteResult{Completion: pmcp.Completion{Values: []string{"leak"}}}, nil
	}
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "t", Version: "1", Middleware: mw, Completion: complete})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ts_add", "ts_secret", "web_get"} {
		if err := pmcp.AddTool(srv, &pmcp.Tool{Name: name}, func(context.Context, *pmcp.RequestHandlerExtra, map[string]any) (string, error) { return "ok", nil }); err != nil {
			t.Fatal(err)
		}
	}
	return srv
}

// TestMiddlewareAuditAndLimits: per-caller lists, a hidden call answered
// as an unknown one, a rate-limited call with retryAfterMs, and one audit
// record per request with the decision, upstream, code and redacted
// arguments (never the token).
func TestMiddlewareAuditAndLimits(t *testing.T) {
	var log auditLog
	gw, err := New(Options{
		Config: Config{
			Policies:   []Policy{{Match: Match{Claims: map[string]any{"sub": "alice"}}, AllowTools: []string{"ts_*"}, DenyTools: []string{"ts_secret"}}},
			RateLimits: []RateLimit{{Match: Match{}, Tools: []string{"ts_add"}, PerSecond: 0.001, Burst: 1}},
			Audit:      &AuditConfig{IncludeArguments: true},
		},
		Upstreams: []string{"ts", "web"},
		Audit:     log.add,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, era := range []pmcp.Era{pmcp.EraLegacy, pmcp.EraModern} {
		t.Run(era.String(), func(t *testing.T) {
			cs := session(t, newServer(t, asCaller("alice-"+era.String()), gw.Middleware()), era)
			ctx := context.Background()
			// alice-<era> matches no policy: nothing listed.
			tools, err := cs.AllTools(ctx)
			if err != nil || len(tools) != 0 {
				t.Fatalf("unmatched caller listed %d tools (%v)", len(tools), err)
			}
			_, errHidden := cs.CallTool(ctx, "ts_add", nil)
			denied := log.last()
			_, errUnknown := cs.CallTool(ctx, "zz_nope", nil)
			var h, u *jsonrpc.Error
			if !errors.As(errHidden, &h) || !errors.As(errUnknown, &u) || h.Code != u.Code || h.Message != `unknown tool "ts_add"` {
				t.Fatalf("hidden %v, unknown %v", errHidden, errUnknown)
			}
			if r := denied; r.Decision != DecisionDenied || r.Upstream != "ts" || r.Code != jsonrpc.CodeInvalidParams || r.Subject != "alice-"+era.String() {
				t.Fatalf("denied record %+v", r)
			}
		})
	}
	cs := session(t, newServer(t, asCaller("alice"), gw.Middleware()), pmcp.EraModern)
	ctx := context.Background()
	tools, err := cs.AllTools(ctx)
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if err != nil || !slices.Equal(names, []string{"ts_add"}) {
		t.Fatalf("alice lists %v (%v)", names, err)
	}
	if _, err := cs.CallTool(ctx, "ts_add", map[string]any{"a": 1, "password": "hunter2"}); err != nil {
		t.Fatal(err)
	}
	r := log.last()
	if r.Decision != DecisionAllowed || r.Outcome != "ok" || r.Target != "ts_add" || r.Upstream != "ts" || r.ClientID != "app" ||
		r.Arguments["a"] != float64(1) || r.Arguments["password"] != "[REDACTED]" || r.Duration <= 0 || r.Time.IsZero() {
		t.Fatalf("allowed record %+v", r)
	}
	_, err = cs.CallTool(ctx, "ts_add", nil)
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeRateLimited || !jsonHas(je.Data, "retryAfterMs") {
		t.Fatalf("second call: %v", err)
	}
	if r := log.last(); r.Decision != DecisionRateLimited || r.Code != jsonrpc.CodeRateLimited {
		t.Fatalf("rate-limited record %+v", r)
	}
	// Completing a hidden prompt's argument shows none of its values.
	c, err := cs.Complete(ctx, &pmcp.CompleteParams{Ref: pmcp.CompleteReference{Type: "ref/prompt", Name: "ts_p"}})
	if err != nil || len(c.Completion.Values) != 0 || log.last().Decision != DecisionDenied {
		t.Fatalf("completion of a hidden prompt: %+v %v", c, err)
	}
	// A reload swaps the policy at once; an invalid one is refused and
	// the old one kept.
	if err := gw.Update(Config{Policies: []Policy{{AllowTools: []string{"web_*"}}}}, []string{"ts", "web"}); err != nil {
		t.Fatal(err)
	}
	if tools, _ := cs.AllTools(ctx); len(tools) != 1 || tools[0].Name != "web_get" {
		t.Fatalf("after reload: %v", tools)
	}
	if err := gw.Update(Config{RateLimits: []RateLimit{{PerSecond: -1, Burst: 1}}}, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("invalid update: %v", err)
	}
	if tools, _ := cs.AllTools(ctx); len(tools) != 1 || tools[0].Name != "web_get" {
		t.Fatalf("after a refused reload: %v", tools)
	}
}

func jsonHas(data []byte, key string) bool {
	var m map[string]any
	return pmcp.Unmarshal(data, &m) == nil && m[key] != nil
}
