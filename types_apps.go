package pmcp

import (
	"fmt"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// MCP Apps (extension io.modelcontextprotocol/ui, SEP-1865): a tool comes
// with an HTML view, a ui:// resource, that a host renders in a sandbox.
// This file owns the Apps wire facts (the identifiers and the typed
// _meta.ui); server_apps.go registers and checks views and app tools,
// client_apps.go reads a tool's view.
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
