package pmcp

import (
	"context"
	"encoding/base64"
	"errors"

	"github.com/gopmcp/pmcp/jsonrpc"
	"github.com/yosida95/uritemplate/v3"
)

// ResourceRequest is what a resource handler is asked to read. Vars holds
// the template variables when the URI matched a resource template.
type ResourceRequest struct {
	URI    string
	Vars   map[string]string
	Params *ReadResourceParams
}

// ResourceHandler reads a resource.
type ResourceHandler func(ctx context.Context, extra *RequestHandlerExtra, r *ResourceRequest) (*ReadResourceResult, error)

// ErrResourceNotFound can be returned (wrapped) by a resource handler; the
// client then gets the era's resource-not-found error.
var ErrResourceNotFound = errors.New("pmcp: resource not found")

type serverResource struct {
	res     *Resource
	handler ResourceHandler
	scopes  []string
}

type serverTemplate struct {
	tmpl    *ResourceTemplate
	parsed  *uritemplate.Template
	handler ResourceHandler
	scopes  []string
}

// AddResource registers a static resource. A resource with the same URI is
// replaced.
func (s *Server) AddResource(r *Resource, h ResourceHandler) error {
	if r == nil || h == nil {
		return regErr("nil resource or handler")
	}
	if r.URI == "" || r.Name == "" {
		return regErr("resource needs a uri and a name")
	}
	scopes, err := checkScopes("resource "+r.URI, r.Scopes)
	if err != nil {
		return err
	}
	s.noteScoped(scopes)
	s.mu.Lock()
	s.resources.put(r.URI, &serverResource{res: r, handler: h, scopes: scopes})
	s.mu.Unlock()
	s.notifyListChanged(listResources)
	return nil
}

// AddResourceTemplate registers an RFC 6570 resource template.
func (s *Server) AddResourceTemplate(t *ResourceTemplate, h ResourceHandler) error {
	if t == nil || h == nil {
		return regErr("nil template or handler")
	}
	if t.Name == "" {
		return regErr("resource template needs a name")
	}
	parsed, err := uritemplate.New(t.URITemplate)
	if err != nil {
		return regErr("resource template %q: %v", t.URITemplate, err)
	}
	scopes, err := checkScopes("resource template "+t.URITemplate, t.Scopes)
	if err != nil {
		return err
	}
	s.noteScoped(scopes)
	s.mu.Lock()
	s.templates.put(t.URITemplate, &serverTemplate{tmpl: t, parsed: parsed, handler: h, scopes: scopes})
	s.mu.Unlock()
	s.notifyListChanged(listResources)
	return nil
}

// RemoveResources unregisters static resources by URI.
func (s *Server) RemoveResources(uris ...string) int {
	s.mu.Lock()
	n := s.resources.remove(uris...)
	s.mu.Unlock()
	if n > 0 {
		s.notifyListChanged(listResources)
	}
	return n
}

// RemoveResourceTemplates unregisters templates by their URI template.
func (s *Server) RemoveResourceTemplates(templates ...string) int {
	s.mu.Lock()
	n := s.templates.remove(templates...)
	s.mu.Unlock()
	if n > 0 {
		s.notifyListChanged(listResources)
	}
	return n
}

// lookupResource finds what serves uri: a static resource, else the
// first template, in the order of their URI templates, that matches it
// (t, with its match m); scopes are the registration's. All are nil when
// nothing serves uri. The order is fixed so that the HTTP transport's
// scope check and the read itself pick the same template.
func (s *Server) lookupResource(uri string) (h ResourceHandler, t *serverTemplate, m uritemplate.Values, scopes []string) {
	if r, ok := s.resources.get(uri); ok {
		return r.handler, nil, nil, r.scopes
	}
	snap := s.templates.load()
	for _, k := range snap.keys {
		t := snap.byKey[k]
		if m := t.parsed.Match(uri); m != nil {
			return t.handler, t, m, t.scopes
		}
	}
	return nil, nil, nil, nil
}

func (s *Server) readResource(ctx context.Context, extra *RequestHandlerExtra, p *ReadResourceParams) (Result, error) {
	req := &ResourceRequest{URI: p.URI, Params: p}
	h, t, m, scopes := s.lookupResource(p.URI)
	if h == nil {
		return nil, resourceNotFound(extra.Era(), p.URI)
	}
	if err := authorize(extra, scopes); err != nil {
		return nil, err
	}
	if t != nil {
		vars := make(map[string]string, len(m))
		for _, name := range t.parsed.Varnames() {
			if v := m.Get(name); v.Valid() {
				vars[name] = v.String()
			}
		}
		req.Vars = vars
	}
	res, err := h(ctx, extra, req)
	if err != nil {
		if errors.Is(err, ErrResourceNotFound) {
			return nil, resourceNotFound(extra.Era(), p.URI)
		}
		return nil, err
	}
	if res == nil || len(res.Contents) == 0 {
		// An empty contents list must never stand for "not found".
		return nil, resourceNotFound(extra.Era(), p.URI)
	}
	return res, nil
}

func resourceNotFound(era Era, uri string) error {
	data, _ := Marshal(map[string]string{"uri": uri})
	code := int64(jsonrpc.CodeInvalidParams)
	if era == EraLegacy {
		code = jsonrpc.CodeResourceNotFound
	}
	return &jsonrpc.Error{Code: code, Message: "Resource not found", Data: data}
}

func encodeCursor(k string) string { return base64.RawURLEncoding.EncodeToString([]byte(k)) }

func decodeCursor(c string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return "", invalidParams("invalid cursor")
	}
	return string(b), nil
}
