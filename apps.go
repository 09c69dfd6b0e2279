package pmcp

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// MCP Apps (extension io.modelcontextprotocol/ui, SEP-1865): a tool comes
// with an HTML view, a ui:// resource, that a host renders in a sandbox.
// This file owns every Apps fact of the SDK: the identifiers, the typed
// _meta.ui, the server's registration and checks, the client's
// advertisement and the helpers to read a tool's view.
const (
	// ExtensionApps is the MCP Apps extension identifier, declared in the
	// capabilities' extensions by a server with UI resources (both eras)
	// and by a client that renders them (ClientOptions.AppMIMETypes).
	ExtensionApps = "io.modelcontextprotocol/ui"
	// AppMIMEType is the MIME type of an MCP Apps HTML view.
	AppMIMEType = "text/html;profile=mcp-app"
	// AppVisibilityModel and AppVisibilityApp are the members of
	// AppUI.Visibility: the tool is offered to the model, or callable by
	// the view. Omitted, a tool is both.
	AppVisibilityModel = "model"
	AppVisibilityApp   = "app"
)

// metaAppsFlatURI is the deprecated flat _meta key older hosts read a
// tool's view from; written next to _meta.ui.resourceUri.
const metaAppsFlatURI = "ui/resourceUri"

// AppUI is the typed _meta.ui of MCP Apps. On a tool it carries
// ResourceURI and Visibility; on a UI resource (its list entry and its
// read content) CSP, Permissions, Domain and PrefersBorder. Set it as
// Meta{"ui": &AppUI{...}}; read one with MetaAppUI.
type AppUI struct {
	ResourceURI   string          `json:"resourceUri,omitempty"`
	Visibility    []string        `json:"visibility,omitempty"`
	CSP           *AppCSP         `json:"csp,omitempty"`
	Permissions   *AppPermissions `json:"permissions,omitempty"`
	Domain        string          `json:"domain,omitempty"`
	PrefersBorder *bool           `json:"prefersBorder,omitempty"`
}

// AppCSP lists the origins a view may reach, per CSP directive; the host
// builds the view's Content Security Policy from them (empty: none).
type AppCSP struct {
	ConnectDomains  []string `json:"connectDomains,omitempty"`
	ResourceDomains []string `json:"resourceDomains,omitempty"`
	FrameDomains    []string `json:"frameDomains,omitempty"`
	BaseURIDomains  []string `json:"baseUriDomains,omitempty"`
}

// AppPermissions are the browser features a view asks for. On the wire
// each requested feature is an empty object ("camera":{}).
type AppPermissions struct {
	Camera, Microphone, Geolocation, ClipboardWrite bool
}

var appPermissionNames = [...]string{"camera", "microphone", "geolocation", "clipboardWrite"}

func (p *AppPermissions) flags() [4]*bool {
	return [4]*bool{&p.Camera, &p.Microphone, &p.Geolocation, &p.ClipboardWrite}
}

// MarshalJSON writes each requested permission as an empty object.
func (p AppPermissions) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, f := range p.flags() {
		if *f {
			if b.Len() > 1 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%q:{}", appPermissionNames[i])
		}
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

// UnmarshalJSON sets the permissions present as members.
func (p *AppPermissions) UnmarshalJSON(data []byte) error {
	var m map[string]jsontext.Value
	if err := Unmarshal(data, &m); err != nil {
		return err
	}
	for i, f := range p.flags() {
		_, *f = m[appPermissionNames[i]]
	}
	return nil
}

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

// AppsSupported reports whether capabilities (a client's, e.g.
// RequestHandlerExtra.ClientCapabilities() in either era) declare the MCP
// Apps extension with AppMIMEType, so a handler can answer with a
// text-only result when the host cannot render the view.
func AppsSupported(caps *ClientCapabilities) bool {
	if caps == nil {
		return false
	}
	switch mt := caps.Extensions[ExtensionApps]["mimeTypes"].(type) {
	case []string:
		return slices.Contains(mt, AppMIMEType)
	case []any:
		return slices.Contains(mt, any(AppMIMEType))
	}
	return false
}

// MetaAppUI is the typed view of m's _meta.ui (a tool's, a resource's or
// a read content's), falling back to the deprecated flat ui/resourceUri
// key for the resource URI. It is nil when m has neither.
func MetaAppUI(m Meta) *AppUI {
	var ui AppUI
	v, ok := m["ui"]
	switch x := v.(type) {
	case *AppUI:
		if x != nil {
			ui = *x
		}
	case AppUI:
		ui = x
	case nil:
	default:
		if b, err := Marshal(x); err == nil {
			_ = Unmarshal(b, &ui)
		}
	}
	if ui.ResourceURI == "" {
		if flat, isStr := m[metaAppsFlatURI].(string); isStr && flat != "" {
			ui.ResourceURI, ok = flat, true
		}
	}
	if !ok {
		return nil
	}
	return &ui
}

// ReadAppResource reads the view of tool t (its _meta.ui.resourceUri, or
// the flat key) and returns its content with the content's _meta.ui (CSP,
// permissions, domain, border; nil when it has none). It fails when t has
// no view or the server answers without AppMIMEType content for it.
func (s *ClientSession) ReadAppResource(ctx context.Context, t *Tool) (*ResourceContents, *AppUI, error) {
	ui := MetaAppUI(t.Meta)
	if ui == nil || ui.ResourceURI == "" {
		return nil, nil, fmt.Errorf("pmcp: tool %q has no MCP Apps view", t.Name)
	}
	res, err := s.ReadResource(ctx, ui.ResourceURI)
	if err != nil {
		return nil, nil, err
	}
	for _, c := range res.Contents {
		if c.URI == ui.ResourceURI && c.MIMEType == AppMIMEType {
			if m := MetaAppUI(c.Meta); m != nil {
				return c, m, nil
			}
			return c, nil, nil
		}
	}
	return nil, nil, fmt.Errorf("pmcp: %s has no %s content", ui.ResourceURI, AppMIMEType)
}
