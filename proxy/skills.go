package proxy

import (
	"context"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// Skills across the bridge. The proxy declares the skills extension and
// serves skills/list from the upstreams that declare it (an empty list
// when none does); skills/get asks each of them in order. Skills keep
// their skill:// URIs: their files are resources, read like any other.

// listSkills serves skills/list from the upstreams that declare skills.
func (p *Proxy) listSkills(ctx context.Context, req *pmcp.Request) (pmcp.Result, error) {
	cur, err := p.cursor(req)
	if err != nil {
		return nil, err
	}
	out := &pmcp.ListSkillsResult{Skills: []*pmcp.SkillEntry{}}
	err = p.eachUpstream(ctx, req, func(l *live) bool { return l.skills }, func(ctx context.Context, up *upstream, l *live) error {
		c := cur
		for range maxListPages {
			page, err := l.conn.Session.ListSkills(ctx, c)
			if err != nil {
				return err
			}
			out.Skills = append(out.Skills, page.Skills...)
			if len(p.upstreams()) == 1 {
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
	for _, up := range p.upstreams() {
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
