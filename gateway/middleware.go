package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
)

// Options configures a Gateway.
type Options struct {
	// Config is the first configuration (see Gateway.Update for later
	// ones).
	Config Config
	// Upstreams are the names of the upstreams, whose prefix (name +
	// Separator) names a tool's or prompt's upstream in AuditRecord.
	Upstreams []string
	// Separator joins an upstream's name and its tools' and prompts';
	// "" means "_" (as package proxy).
	Separator string
	// Buckets hold the rate limits' tokens; nil means a MemoryBuckets.
	Buckets Buckets
	// Audit receives one record per request; nil means none. It is
	// called on the request's goroutine: it must not block (hand the
	// record to a bounded queue).
	Audit func(AuditRecord)
	// Logger receives the gateway's diagnostics (a Buckets failure); nil
	// means discard.
	Logger *slog.Logger
}

// Gateway is the policy layer: its Middleware filters, limits and audits
// every request of a pmcp.Server (a proxy.Proxy's, in `pmcp gateway`). Its
// configuration can be replaced while it serves (Update).
type Gateway struct {
	opts Options
	log  *slog.Logger
	cfg  atomic.Pointer[compiled]
}

// New checks opts.Config and returns a Gateway.
func New(opts Options) (*Gateway, error) {
	if opts.Buckets == nil {
		opts.Buckets = &MemoryBuckets{}
	}
	if opts.Separator == "" {
		opts.Separator = "_"
	}
	g := &Gateway{opts: opts, log: opts.Logger}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if err := g.Update(opts.Config, opts.Upstreams); err != nil {
		return nil, err
	}
	return g, nil
}

// Update replaces the configuration and the upstream names at once: a
// request sees the old one or the new one, never a mix. An invalid cfg is
// refused (ErrInvalidConfig) and the old one kept.
func (g *Gateway) Update(cfg Config, upstreams []string) error {
	c, err := compile(&cfg)
	if err != nil {
		return err
	}
	for _, u := range upstreams {
		c.upstreams = append(c.upstreams, upstreamPrefix{name: u, prefix: u + g.opts.Separator})
	}
	g.cfg.Store(c)
	return nil
}

// Audit reports the audit settings in force (nil when the configuration
// has none).
func (g *Gateway) Audit() *AuditConfig {
	if a := g.cfg.Load().audit; a != nil {
		c := *a
		return &c
	}
	return nil
}

// grantsKey is the context key of a request's grants.
type grantsKey struct{}

// The request's grants (a *grants, nil: everything) are put in its
// context by the outer middleware for the deny middleware inside it.

// Middleware returns the gateway's middleware. For each request it:
//
//   - works out what the caller may see and use (the policies matching
//     its claims and scopes) and hides the rest with pmcp.DenyTools,
//     pmcp.DenyPrompts and pmcp.DenyResources: lists are filtered (their
//     cursors never name a hidden item) and a call, get, read or
//     subscribe of a hidden item answers exactly as for an unknown one;
//   - takes a token from every rate limit that applies, refusing the
//     request with a *pmcp.RateLimitedError when one is empty;
//   - marks modern list results cacheScope "private" (they are per
//     caller);
//   - hands one AuditRecord to Options.Audit.
func (g *Gateway) Middleware() pmcp.Middleware {
	deny := func(kind pmcp.TargetKind) func(context.Context, *pmcp.Request, string) bool {
		return func(ctx context.Context, _ *pmcp.Request, name string) bool {
			gr, ok := ctx.Value(grantsKey{}).(*grants)
			return !ok || !gr.allows(kind, name) // fail closed
		}
	}
	tools := pmcp.DenyTools(deny(pmcp.TargetTool))
	prompts := pmcp.DenyPrompts(deny(pmcp.TargetPrompt))
	resources := pmcp.DenyResources(deny(pmcp.TargetResource))
	return func(next pmcp.MethodHandler) pmcp.MethodHandler {
		inner := tools(prompts(resources(next)))
		return func(ctx context.Context, req *pmcp.Request) (pmcp.Result, error) {
			return g.serve(ctx, req, inner)
		}
	}
}

func (g *Gateway) serve(ctx context.Context, req *pmcp.Request, next pmcp.MethodHandler) (pmcp.Result, error) {
	start := time.Now()
	cfg := g.cfg.Load()
	who := callerOf(req.Extra)
	gr := cfg.grantsFor(who)
	kind := pmcp.TargetOf(req.Method)
	decision := DecisionAllowed
	var res pmcp.Result
	var err error
	switch {
	case kind != pmcp.TargetNone && req.Name != "" && !gr.allows(kind, req.Name):
		decision = DecisionDenied
	case req.Method == pmcp.MethodCompletionComplete && !completionAllowed(req, gr):
		// Completing a hidden prompt's or template's argument would show
		// its values: the answer is the empty completion.
		decision = DecisionDenied
		res = &pmcp.CompleteResult{Completion: pmcp.Completion{Values: []string{}}}
	default:
		if wait := g.limit(ctx, cfg, req, who, kind); wait > 0 {
			decision = DecisionRateLimited
			err = &pmcp.RateLimitedError{RetryAfter: wait}
		}
	}
	if err == nil && res == nil {
		res, err = next(context.WithValue(ctx, grantsKey{}, gr), req)
		privateList(req, res)
	}
	if g.opts.Audit != nil {
		g.opts.Audit(g.record(cfg, req, kind, decision, res, err, start))
	}
	return res, err
}

// limit takes a token from every rule that applies to req and returns the
// longest wait of the empty ones (0: admitted). A Buckets failure admits
// the request and is logged: rate limits must not take the gateway down
// with their store.
func (g *Gateway) limit(ctx context.Context, cfg *compiled, req *pmcp.Request, who caller, kind pmcp.TargetKind) time.Duration {
	var wait time.Duration
	var principal string
	for i := range cfg.limits {
		r := &cfg.limits[i]
		if !r.applies(req, kind) || !r.Match.matches(who) {
			continue
		}
		if principal == "" {
			principal = principalKey(req.Extra)
		}
		w, err := g.opts.Buckets.Take(ctx, "pmcp-gw:"+r.id+":"+principal, r.PerSecond, r.Burst)
		if err != nil {
			g.log.Warn("gateway: rate limit store failed; request admitted", "error", err)
			continue
		}
		wait = max(wait, w)
	}
	return wait
}

// applies reports whether r's globs name req's target (a rule without
// globs applies to every request).
func (r *limitRule) applies(req *pmcp.Request, kind pmcp.TargetKind) bool {
	if len(r.Tools) == 0 && len(r.Prompts) == 0 && len(r.Resources) == 0 {
		return true
	}
	var globs []string
	switch kind { // the method table's target: tools/call, prompts/get, resources/*
	case pmcp.TargetTool:
		globs = r.Tools
	case pmcp.TargetPrompt:
		globs = r.Prompts
	case pmcp.TargetResource:
		if req.Method == pmcp.MethodResourcesRead { // not subscribe/unsubscribe
			globs = r.Resources
		}
	}
	for _, gl := range globs {
		if globMatch(gl, req.Name) {
			return true
		}
	}
	return false
}

// principalKey is the caller's part of a bucket key: a digest of the
// principal the server binds state to (pmcp.RequestHandlerExtra.Principal),
// so a key's length is fixed whatever the token says.
func principalKey(extra *pmcp.RequestHandlerExtra) string {
	id, ok := extra.Principal()
	if !ok {
		id = "\x00nobody"
	}
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:16])
}

// completionAllowed reports whether the prompt or resource template a
// completion/complete refers to is visible to the caller.
func completionAllowed(req *pmcp.Request, gr *grants) bool {
	if gr == nil {
		return true
	}
	var p pmcp.CompleteParams
	if pmcp.Unmarshal(req.Params, &p) != nil {
		return true // the server refuses it as it would anyway
	}
	switch p.Ref.Type {
	case "ref/prompt":
		return gr.allows(pmcp.TargetPrompt, p.Ref.Name)
	case "ref/resource":
		return gr.allows(pmcp.TargetResource, p.Ref.URI)
	}
	return true
}

// privateList marks a modern list result as per caller.
func privateList(req *pmcp.Request, res pmcp.Result) {
	if req.Extra == nil || req.Extra.Era() != pmcp.EraModern {
		return
	}
	switch r := res.(type) {
	case *pmcp.ListToolsResult:
		r.CacheScope = pmcp.CacheScopePrivate
	case *pmcp.ListPromptsResult:
		r.CacheScope = pmcp.CacheScopePrivate
	case *pmcp.ListResourcesResult:
		r.CacheScope = pmcp.CacheScopePrivate
	case *pmcp.ListResourceTemplatesResult:
		r.CacheScope = pmcp.CacheScopePrivate
	}
}

// maxAuditTarget bounds AuditRecord.Target (a caller-chosen name).
const maxAuditTarget = 512

// record builds the audit record of req.
func (g *Gateway) record(cfg *compiled, req *pmcp.Request, kind pmcp.TargetKind, decision string, res pmcp.Result, err error, start time.Time) AuditRecord {
	rec := AuditRecord{Time: start.UTC(), Method: req.Method, Decision: decision, Outcome: "ok", Duration: time.Since(start)}
	if x := req.Extra; x != nil {
		if a := x.AuthContext; a != nil {
			rec.Subject, rec.ClientID = a.Subject, a.ClientID
		}
		if rec.ClientID == "" && x.AuthInfo != nil {
			rec.ClientID = x.AuthInfo.ClientID
		}
	}
	if kind != pmcp.TargetNone {
		rec.Target = req.Name
		if len(rec.Target) > maxAuditTarget {
			rec.Target = rec.Target[:maxAuditTarget]
		}
		if kind != pmcp.TargetResource {
			rec.Upstream = cfg.upstreamOf(req.Name)
		}
	}
	if err != nil {
		rec.Outcome = "error"
		rec.Code = int(pmcp.ErrorCode(err)) // the code the client is sent
	} else if r, ok := res.(*pmcp.CallToolResult); ok && r.IsError {
		rec.Outcome = "error"
	}
	if cfg.audit != nil && cfg.audit.IncludeArguments && (req.Method == pmcp.MethodToolsCall || req.Method == pmcp.MethodPromptsGet) {
		rec.Arguments = redactedArguments(req.Params)
	}
	return rec
}

// redactedArguments are the params' arguments as logs print them: every
// value under a sensitive name, at any depth, replaced (pmcp.Attributes'
// JSON form); nil when there are none.
func redactedArguments(params jsontext.Value) map[string]any {
	var p struct {
		Arguments map[string]any `json:"arguments"`
	}
	if pmcp.Unmarshal(params, &p) != nil || len(p.Arguments) == 0 {
		return nil
	}
	b, err := json.Marshal(pmcp.Attributes(p.Arguments))
	if err != nil {
		return nil
	}
	var out map[string]any
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}
