package proxy

import (
	"context"
	"maps"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// What the proxy declares as its upstreams do, and the skills extension.
// The downstream server declares tasks statically (in each era's form), so
// that tasks/* always reach the proxy; the results of initialize and
// server/discover then show tasks only when an upstream serves them, and
// the skills extension when an upstream declares it. Skills keep their
// skill:// URIs (their files are resources, read like any other):
// skills/list is the upstreams' lists, skills/get asks each in order.

// capsProbeTimeout bounds the connecting to the upstreams that initialize
// and server/discover wait for; an upstream not ready by then is left out
// of the declared capabilities (its calls still work once it is).
const capsProbeTimeout = 10 * time.Second

// advertise fixes the capabilities of an initialize or server/discover
// result by what the upstreams declare.
func (p *Proxy) advertise(ctx context.Context, req *pmcp.Request, res pmcp.Result) {
	var caps *pmcp.ServerCapabilities
	switch r := res.(type) {
	case *pmcp.InitializeResult:
		caps = &r.Capabilities
	case *pmcp.DiscoverResult:
		caps = &r.Capabilities
	default:
		return
	}
	ctx, cancel := context.WithTimeout(ctx, capsProbeTimeout)
	defer cancel()
	tasks, skills := false, false
	for _, up := range p.ups {
		if _, l, err := p.conn(ctx, req, up); err == nil {
			tasks = tasks || l.tasks
			skills = skills || l.skills
		}
	}
	ext := maps.Clone(caps.Extensions) // the declared map is shared
	if !tasks {
		caps.Tasks = nil
		delete(ext, pmcp.ExtensionTasks)
	}
	if skills {
		if ext == nil {
			ext = make(map[string]pmcp.Object, 1)
		}
		ext[pmcp.ExtensionSkills] = pmcp.Object{}
	}
	if len(ext) == 0 {
		ext = nil
	}
	caps.Extensions = ext
}

// listSkills serves skills/list from the upstreams that declare skills.
func (p *Proxy) listSkills(ctx context.Context, req *pmcp.Request) (pmcp.Result, error) {
	cur, err := p.cursor(req)
	if err != nil {
		return nil, err
	}
	out := &pmcp.ListSkillsResult{Skills: []*pmcp.SkillEntry{}}
	err = p.eachUpstream(ctx, req, func(l *live) bool { return l.skills }, func(up *upstream, l *live) error {
		c := cur
		for range maxListPages {
			page, err := l.conn.Session.ListSkills(ctx, c)
			if err != nil {
				return err
			}
			out.Skills = append(out.Skills, page.Skills...)
			if len(p.ups) == 1 {
				out.NextCursor = page.NextCursor
				return nil
			}
			if c = page.NextCursor; c == "" {
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// getSkill serves skills/get: the first upstream that knows the skill.
func (p *Proxy) getSkill(ctx context.Context, req *pmcp.Request) (pmcp.Result, error) {
	var sp pmcp.SkillURIParams
	if err := pmcp.Unmarshal(req.Params, &sp); err != nil || sp.URI == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing uri"}
	}
	var first error
	for _, up := range p.ups {
		_, l, err := p.conn(ctx, req, up)
		if err != nil || !l.skills {
			continue
		}
		e, err := l.conn.Session.GetSkill(ctx, sp.URI)
		if err == nil {
			return &pmcp.GetSkillResult{Skill: e}, nil
		}
		if first == nil {
			first = p.upstreamError(ctx, up, l, err)
		}
	}
	if first == nil {
		first = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown skill " + sp.URI}
	}
	return nil, first
}
