package proxy

import (
	"fmt"
	"log/slog"
	"strings"
)

// The naming rule of aggregation, in one place. An upstream's tools and
// prompts (and any other name the proxy namespaces) are listed as its
// prefix, Upstream.Name + Options.Separator, followed by the name the
// upstream knows, and a name is routed back by the prefix it begins with.
//
// Upstream names are known at start-up, item names are not (they change
// with every list_changed), so New refuses two upstream names of which one
// prefix begins the other ("a" and "a_b" with "_": "a_b_x" would be a's
// "b_x" and a_b's "x"). Then no name begins with two prefixes: joining is
// injective and routing unique, whatever the upstreams list later.

// checkPrefixes refuses upstreams whose prefixes are ambiguous (see above),
// naming the two upstreams and a name both would claim.
func checkPrefixes(ups []*upstream, sep string) error {
	for i, a := range ups {
		for _, b := range ups[i+1:] {
			short, long := a, b
			if len(short.prefix) > len(long.prefix) {
				short, long = long, short
			}
			if !strings.HasPrefix(long.prefix, short.prefix) {
				continue
			}
			if a.prefix == b.prefix {
				return fmt.Errorf("%w: upstream name %q is given twice (names must be unique)", ErrInvalidOptions, a.name)
			}
			example := long.prefix + "x"
			return fmt.Errorf("%w: upstream names %q and %q are ambiguous with separator %q (%q would be %q of %q and %q of %q): rename one or choose another separator",
				ErrInvalidOptions, a.name, b.name, sep, example, example[len(short.prefix):], short.name, "x", long.name)
		}
	}
	return nil
}

// qualify is the name the downstream sees for the upstream's name.
func (up *upstream) qualify(name string) string { return up.prefix + name }

// route finds the upstream of a prefixed tool or prompt name and the name
// the upstream knows. At most one prefix matches (checkPrefixes).
func (p *Proxy) route(name string) (*upstream, string, bool) {
	for _, u := range p.upstreams() {
		if strings.HasPrefix(name, u.prefix) {
			return u, name[len(u.prefix):], true
		}
	}
	return nil, "", false
}

// listed keeps one list free of repeated names (tool and prompt names as
// the downstream sees them, resource URIs, URI templates): the first item
// of a name is kept and a later one left out with a warning, since a
// request can reach only one item by its name. Only a misbehaving upstream
// lists a name twice, or two upstreams the same resource.
type listed struct {
	log  *slog.Logger
	kind string
	seen map[string]*upstream
}

func (p *Proxy) listed(kind string) *listed {
	return &listed{log: p.log, kind: kind, seen: make(map[string]*upstream)}
}

// keep reports whether the item name of up is listed.
func (l *listed) keep(up *upstream, name string) bool {
	if first, dup := l.seen[name]; dup {
		l.log.Warn("proxy: a name listed twice is listed once", "kind", l.kind, "name", name, "upstream", up.name, "first", first.name)
		return false
	}
	l.seen[name] = up
	return true
}

// The same rule names MCP Apps views (ui:// resources, see apps.go): with
// a prefix, an upstream's ui://rest is listed as ui://<prefix>rest, its
// name followed by the separator at the start of the authority
// (ui://get-time/app.html of upstream "a" is ui://a_get-time/app.html), so
// the result is still a ui:// URI and two upstreams' ui://main never
// collide. outURI and inURI are the one pair that rewrites them, both ways,
// for lists, reads, subscriptions, updates and tools' _meta; every other
// URI (and every URI of an unprefixed upstream) keeps its form and may be
// served by any upstream.

// uiScheme begins the URI of an MCP Apps view.
const uiScheme = "ui://"

// outURI is the URI the downstream sees for up's uri.
func (up *upstream) outURI(uri string) string {
	rest, ok := strings.CutPrefix(uri, uiScheme)
	if !ok || up.prefix == "" {
		return uri
	}
	return uiScheme + up.qualify(rest)
}

// inURI is the URI up knows for uri as the downstream names it; false when
// uri is a ui:// URI of another upstream (or of none).
func (up *upstream) inURI(uri string) (string, bool) {
	rest, ok := strings.CutPrefix(uri, uiScheme)
	if !ok || up.prefix == "" {
		return uri, true
	}
	if rest, ok = strings.CutPrefix(rest, up.prefix); !ok {
		return "", false
	}
	return uiScheme + rest, true
}
