package proxy

import (
	"sync"

	"github.com/gopmcp/pmcp"
)

// Names behind the bridge as metric labels. The proxy registers no tools
// or prompts of its own, so pmcp.Request.NameRegistered (which keeps
// made-up names out of metric labels) would be false for every bridged
// name. The proxy answers for them instead (ServerOptions.NameKnown): a
// name is known when its upstream last listed it, as the downstream sees
// it, and the tool globs allow it. Each upstream keeps at most
// maxKnownNames names of each kind, so the labels stay bounded whatever
// an upstream lists.

// maxKnownNames bounds the names of one kind kept for one upstream.
const maxKnownNames = 4096

// knownNames are the tool and prompt names an upstream last listed.
type knownNames struct {
	mu      sync.RWMutex
	tools   map[string]struct{}
	prompts map[string]struct{}
}

// note records names listed for method's kind (pmcp.MethodToolsCall or
// pmcp.MethodPromptsGet); fresh (a full list, or its first page) replaces
// what was known, a later page adds to it.
func (k *knownNames) note(method string, names []string, fresh bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	m := &k.tools
	if method == pmcp.MethodPromptsGet {
		m = &k.prompts
	}
	if fresh || *m == nil {
		*m = make(map[string]struct{}, min(len(names), maxKnownNames))
	}
	for _, n := range names {
		if len(*m) >= maxKnownNames {
			return
		}
		(*m)[n] = struct{}{}
	}
}

func (k *knownNames) has(method, name string) bool {
	k.mu.RLock()
	defer k.mu.RUnlock()
	m := k.tools
	if method == pmcp.MethodPromptsGet {
		m = k.prompts
	}
	_, ok := m[name]
	return ok
}

// nameKnown answers ServerOptions.NameKnown for the proxy's server.
func (p *Proxy) nameKnown(method, name string) bool {
	switch method {
	case pmcp.MethodToolsCall:
		if p.filtered && !ToolAllowed(p.opts.AllowTools, p.opts.DenyTools, name) {
			return false
		}
	case pmcp.MethodPromptsGet:
	default:
		return false
	}
	up, _, ok := p.route(name)
	return ok && up.known.has(method, name)
}
