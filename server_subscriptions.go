package pmcp

import "strings"

// subLimits are the resolved subscription bounds; 0 means unbounded.
type subLimits struct {
	count, uriBytes, total int
}

func (s *Server) subLimits() subLimits {
	pick := func(v, def int) int {
		switch {
		case v == 0:
			return def
		case v < 0:
			return 0
		}
		return v
	}
	return subLimits{
		count:    pick(s.opts.MaxResourceSubscriptions, defaultMaxResourceSubscriptions),
		uriBytes: pick(s.opts.MaxResourceURIBytes, defaultMaxResourceURIBytes),
		total:    pick(s.opts.MaxResourceSubscriptionBytes, defaultMaxResourceSubscriptionBytes),
	}
}

// uriSet is a bounded set of subscribed URIs. Its strings are copies: it
// never keeps a request's buffer alive.
type uriSet struct {
	m     map[string]struct{}
	bytes int
}

func (u *uriSet) has(uri string) bool {
	_, ok := u.m[uri]
	return ok
}

// add inserts uri within lim; what names the bound in an error is what.
func (u *uriSet) add(uri string, lim subLimits, what string) error {
	if lim.uriBytes > 0 && len(uri) > lim.uriBytes {
		return invalidParams("%s: a URI of %d bytes exceeds the limit of %d bytes", what, len(uri), lim.uriBytes)
	}
	if u.has(uri) {
		return nil
	}
	if lim.count > 0 && len(u.m) >= lim.count {
		return invalidParams("%s: more than %d subscriptions", what, lim.count)
	}
	if lim.total > 0 && u.bytes+len(uri) > lim.total {
		return invalidParams("%s: the subscribed URIs exceed %d bytes in total", what, lim.total)
	}
	if u.m == nil {
		u.m = make(map[string]struct{})
	}
	u.m[strings.Clone(uri)] = struct{}{}
	u.bytes += len(uri)
	return nil
}

func (u *uriSet) remove(uri string) {
	if _, ok := u.m[uri]; ok {
		delete(u.m, uri)
		u.bytes -= len(uri)
		if len(u.m) == 0 {
			u.m = nil
		}
	}
}

// newURISet builds the set of a listen filter, refusing a list over lim
// before reading it further.
func newURISet(uris []string, lim subLimits) (*uriSet, error) {
	const what = "resourceSubscriptions"
	if lim.count > 0 && len(uris) > lim.count {
		return nil, invalidParams("%s: %d URIs exceed the limit of %d", what, len(uris), lim.count)
	}
	u := &uriSet{}
	for _, uri := range uris {
		if err := u.add(uri, lim, what); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// resourceExists reports whether uri names a registered resource or
// matches a registered template.
func (s *Server) resourceExists(uri string) bool {
	if _, ok := s.resources.get(uri); ok {
		return true
	}
	for _, t := range s.templates.load().byKey {
		if t.parsed.Match(uri) != nil {
			return true
		}
	}
	return false
}

// subscribeResource serves a legacy resources/subscribe: the URI must be
// within the limits and name a resource (or match a template), and the
// session's set stays within its bounds.
func (s *Server) subscribeResource(ss *session, uri string) error {
	lim := s.subLimits()
	if lim.uriBytes > 0 && len(uri) > lim.uriBytes {
		return invalidParams("uri: %d bytes exceed the limit of %d bytes", len(uri), lim.uriBytes)
	}
	// A server with declared Capabilities serves its resources from
	// elsewhere (package proxy): its middleware checked the URI there.
	if s.opts.Capabilities == nil && !s.resourceExists(uri) {
		return resourceNotFound(EraLegacy, uri)
	}
	return ss.subscribe(uri, lim)
}
