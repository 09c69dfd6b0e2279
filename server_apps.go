package pmcp

import (
	"context"
	"encoding/base64"
	"maps"
	"strings"
	"unicode/utf8"
)

// AddAppResource registers an MCP Apps view: a static resource whose URI
// must use the ui:// scheme, served as AppMIMEType with html as text (or,
// when html is not valid UTF-8, as a base64 blob). ui, if not nil, is
// written as _meta.ui on the resources/list entry and on the
// resources/read content. Register the view before the tools naming it.
func (s *Server) AddAppResource(r *Resource, ui *AppUI, html []byte) error {
	if r == nil {
		return regErr("nil app resource")
	}
	if !strings.HasPrefix(r.URI, "ui://") || len(r.URI) == len("ui://") {
		return regErr("app resource %q: the URI must use the ui:// scheme", r.URI)
	}
	res := *r
	res.MIMEType = AppMIMEType
	content := ResourceContents{URI: r.URI, MIMEType: AppMIMEType}
	if ui != nil {
		res.Meta = maps.Clone(r.Meta)
		if res.Meta == nil {
			res.Meta = make(Meta, 1)
		}
		res.Meta["ui"] = ui
		content.Meta = Meta{"ui": ui}
	}
	if utf8.Valid(html) {
		content.Text = string(html)
	} else {
		content.Blob = base64.StdEncoding.EncodeToString(html)
	}
	err := s.AddResource(&res, func(context.Context, *RequestHandlerExtra, *ResourceRequest) (*ReadResourceResult, error) {
		c := content
		return &ReadResourceResult{Contents: []*ResourceContents{&c}}, nil
	})
	if err == nil {
		s.apps.Store(true)
	}
	return err
}

// appTool checks a tool's typed _meta.ui (an AppUI or *AppUI; other forms,
// such as a proxied upstream's, pass as they are): its visibility, and its
// resourceUri, which must name a view registered with AddAppResource. It
// returns the tool to register: t itself, or a copy whose _meta also has
// the deprecated flat resourceUri key.
func (s *Server) appTool(t *Tool) (*Tool, error) {
	var ui *AppUI
	switch x := t.Meta["ui"].(type) {
	case *AppUI:
		ui = x
	case AppUI:
		ui = &x
	}
	if ui == nil {
		return t, nil
	}
	for _, v := range ui.Visibility {
		if v != AppVisibilityModel && v != AppVisibilityApp {
			return nil, regErr("tool %q: _meta.ui.visibility %q is neither %q nor %q", t.Name, v, AppVisibilityModel, AppVisibilityApp)
		}
	}
	if ui.ResourceURI == "" {
		return t, nil
	}
	if r, ok := s.resources.get(ui.ResourceURI); !ok || r.res.MIMEType != AppMIMEType {
		return nil, regErr("tool %q: _meta.ui.resourceUri %q names no UI resource registered with AddAppResource", t.Name, ui.ResourceURI)
	}
	tool := *t
	tool.Meta = maps.Clone(t.Meta)
	tool.Meta[metaAppsFlatURI] = ui.ResourceURI
	return &tool, nil
}
