package pmcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// The _meta.ui wire forms, written by hand from the MCP Apps specification
// (2026-01-26): csp holds four arrays of origins, each permission is an
// empty object, domain a string, prefersBorder a boolean; a tool's ui holds
// resourceUri and visibility.
func TestAppUIWireForm(t *testing.T) {
	border := false
	cases := []struct {
		name string
		ui   AppUI
		want string
	}{
		{"empty", AppUI{}, `{}`},
		{"csp", AppUI{CSP: &AppCSP{
			ConnectDomains:  []string{"https://api.example.com", "wss://rt.example.com"},
			ResourceDomains: []string{"https://cdn.example.com"},
			FrameDomains:    []string{"https://www.youtube.com"},
			BaseURIDomains:  []string{"https://base.example.com"},
		}}, `{"csp":{"connectDomains":["https://api.example.com","wss://rt.example.com"],"resourceDomains":["https://cdn.example.com"],"frameDomains":["https://www.youtube.com"],"baseUriDomains":["https://base.example.com"]}}`},
		{"permissions", AppUI{Permissions: &AppPermissions{Camera: true, Microphone: true, Geolocation: true, ClipboardWrite: true}},
			`{"permissions":{"camera":{},"microphone":{},"geolocation":{},"clipboardWrite":{}}}`},
		{"one permission", AppUI{Permissions: &AppPermissions{ClipboardWrite: true}}, `{"permissions":{"clipboardWrite":{}}}`},
		{"domain", AppUI{Domain: "a904794854a047f6.claudemcpcontent.com"}, `{"domain":"a904794854a047f6.claudemcpcontent.com"}`},
		{"prefersBorder false", AppUI{PrefersBorder: &border}, `{"prefersBorder":false}`},
		{"tool", AppUI{ResourceURI: "ui://w/dash", Visibility: []string{AppVisibilityApp}}, `{"resourceUri":"ui://w/dash","visibility":["app"]}`},
		{"tool both", AppUI{ResourceURI: "ui://w/dash", Visibility: []string{AppVisibilityModel, AppVisibilityApp}}, `{"resourceUri":"ui://w/dash","visibility":["model","app"]}`},
	}
	for _, c := range cases {
		b, err := Marshal(&c.ui)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if string(b) != c.want {
			t.Errorf("%s: got %s, want %s", c.name, b, c.want)
		}
		var back AppUI
		if err := json.Unmarshal([]byte(c.want), &back); err != nil {
			t.Fatalf("%s: decode: %v", c.name, err)
		}
		if b2, _ := Marshal(&back); string(b2) != c.want {
			t.Errorf("%s: round trip %s, want %s", c.name, b2, c.want)
		}
	}
	if ExtensionApps != "io.modelcontextprotocol/ui" || AppMIMEType != "text/html;profile=mcp-app" {
		t.Fatalf("extension %q, MIME %q", ExtensionApps, AppMIMEType)
	}
}

const appHTML = "<!DOCTYPE html><html><body>view</body></html>"

func appServer(t *testing.T) *Server {
	t.Helper()
	srv, err := NewServer(ServerOptions{Name: "apps", Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	border := true
	ui := &AppUI{CSP: &AppCSP{ConnectDomains: []string{"https://api.example.com"}}, Permissions: &AppPermissions{Camera: true}, PrefersBorder: &border}
	if err := srv.AddAppResource(&Resource{URI: "ui://apps/view", Name: "view"}, ui, []byte(appHTML)); err != nil {
		t.Fatal(err)
	}
	if err := srv.AddAppResource(&Resource{URI: "ui://apps/bin", Name: "bin"}, nil, []byte{0xff, 0xfe}); err != nil {
		t.Fatal(err)
	}
	h := func(ctx context.Context, extra *RequestHandlerExtra, req *CallToolParams) (*CallToolResult, error) {
		if AppsSupported(extra.ClientCapabilities()) {
			return &CallToolResult{Content: []Content{Text("shown in the view")}, StructuredContent: map[string]any{"n": 1}}, nil
		}
		return &CallToolResult{Content: []Content{Text("text only")}}, nil
	}
	if err := srv.AddRawTool(&Tool{Name: "show", InputSchema: []byte(`{"type":"object"}`), Meta: Meta{"ui": &AppUI{ResourceURI: "ui://apps/view"}}}, h); err != nil {
		t.Fatal(err)
	}
	if err := srv.AddRawTool(&Tool{Name: "refresh", InputSchema: []byte(`{"type":"object"}`), Meta: Meta{"ui": AppUI{ResourceURI: "ui://apps/view", Visibility: []string{AppVisibilityApp}}}}, h); err != nil {
		t.Fatal(err)
	}
	return srv
}

func TestAppRegistrationErrors(t *testing.T) {
	srv, err := NewServer(ServerOptions{Name: "apps", Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	h := func(context.Context, *RequestHandlerExtra, *CallToolParams) (*CallToolResult, error) { return nil, nil }
	for _, c := range []struct {
		name string
		err  error
	}{
		{"http uri", srv.AddAppResource(&Resource{URI: "https://x/view", Name: "v"}, nil, []byte(appHTML))},
		{"no name", srv.AddAppResource(&Resource{URI: "ui://x/view"}, nil, []byte(appHTML))},
		{"nil resource", srv.AddAppResource(nil, nil, []byte(appHTML))},
		{"unknown ui resource", srv.AddRawTool(&Tool{Name: "t", InputSchema: []byte(`{"type":"object"}`), Meta: Meta{"ui": &AppUI{ResourceURI: "ui://x/none"}}}, h)},
		{"bad visibility", srv.AddRawTool(&Tool{Name: "t", InputSchema: []byte(`{"type":"object"}`), Meta: Meta{"ui": &AppUI{Visibility: []string{"user"}}}}, h)},
		{"typed unknown", AddTool(srv, &Tool{Name: "t", Meta: Meta{"ui": &AppUI{ResourceURI: "ui://x/none"}}}, func(context.Context, *RequestHandlerExtra, struct{}) (string, error) { return "", nil })},
	} {
		if !errors.Is(c.err, ErrInvalidRegistration) {
			t.Errorf("%s: got %v, want ErrInvalidRegistration", c.name, c.err)
		}
	}
	if srv.tools.len() != 0 {
		t.Fatalf("%d tools registered after failed registrations", srv.tools.len())
	}
}

var appClientCaps = map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/ui": map[string]any{"mimeTypes": []any{"text/html;profile=mcp-app"}}}}

func TestAppsBothEras(t *testing.T) {
	for _, era := range []string{"legacy", "modern"} {
		t.Run(era, func(t *testing.T) {
			c := startServer(t, appServer(t), nil)
			params := func(p map[string]any, caps map[string]any) map[string]any {
				if era == "modern" {
					return modern(p, caps, nil)
				}
				return p
			}
			var caps map[string]any
			if era == "legacy" {
				caps = c.initialize(appClientCaps)
			} else {
				caps = c.mustCall(MethodDiscover, params(nil, nil))
			}
			if ext := getPath(caps, "capabilities", "extensions", "io.modelcontextprotocol/ui"); ext == nil {
				t.Fatalf("no apps extension in %v", caps)
			}
			tools := c.mustCall(MethodToolsList, params(nil, appClientCaps))
			var show, refresh map[string]any
			for _, x := range tools["tools"].([]any) {
				m := x.(map[string]any)
				switch m["name"] {
				case "show":
					show = m
				case "refresh":
					refresh = m
				}
			}
			b, _ := json.Marshal(show["_meta"])
			if string(b) != `{"ui":{"resourceUri":"ui://apps/view"},"ui/resourceUri":"ui://apps/view"}` {
				t.Errorf("show _meta: %s", b)
			}
			b, _ = json.Marshal(refresh["_meta"])
			if string(b) != `{"ui":{"resourceUri":"ui://apps/view","visibility":["app"]},"ui/resourceUri":"ui://apps/view"}` {
				t.Errorf("refresh _meta: %s", b)
			}
			list := c.mustCall(MethodResourcesList, params(nil, nil))
			b, _ = json.Marshal(list["resources"])
			if !strings.Contains(string(b), `{"_meta":{"ui":{"csp":{"connectDomains":["https://api.example.com"]},"permissions":{"camera":{}},"prefersBorder":true}},"mimeType":"text/html;profile=mcp-app","name":"view","uri":"ui://apps/view"}`) {
				t.Errorf("resources/list: %s", b)
			}
			read := c.mustCall(MethodResourcesRead, params(map[string]any{"uri": "ui://apps/view"}, nil))
			b = jsonNoEscape(t, read["contents"])
			if string(b) != `[{"_meta":{"ui":{"csp":{"connectDomains":["https://api.example.com"]},"permissions":{"camera":{}},"prefersBorder":true}},"mimeType":"text/html;profile=mcp-app","text":"`+appHTML+`","uri":"ui://apps/view"}]` {
				t.Errorf("resources/read: %s", b)
			}
			read = c.mustCall(MethodResourcesRead, params(map[string]any{"uri": "ui://apps/bin"}, nil))
			if got := getPath(read, "contents", 0, "blob"); got != base64.StdEncoding.EncodeToString([]byte{0xff, 0xfe}) {
				t.Errorf("binary view: %v", read)
			}
			// The app-only tool stays callable; the handler sees the
			// client's Apps support (legacy: from initialize).
			res := c.mustCall(MethodToolsCall, params(map[string]any{"name": "refresh"}, appClientCaps))
			if getPath(res, "content", 0, "text") != "shown in the view" || res["isError"] == true {
				t.Errorf("refresh: %v", res)
			}
			if era == "modern" {
				res = c.mustCall(MethodToolsCall, params(map[string]any{"name": "show"}, nil))
				if getPath(res, "content", 0, "text") != "text only" {
					t.Errorf("show without the extension: %v", res)
				}
			}
		})
	}
}

// jsonNoEscape encodes v without HTML escaping, as the wire has it.
func jsonNoEscape(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func TestAppsClient(t *testing.T) {
	for _, tr := range []string{TransportMemory, TransportHTTP} {
		t.Run(tr, func(t *testing.T) {
			srv := appServer(t)
			cli := NewClient(ClientOptions{Name: "host", Version: "1", AppMIMETypes: []string{AppMIMEType}})
			for _, e := range []Era{EraLegacy, EraModern} {
				if !AppsSupported(cli.capabilities(e)) {
					t.Fatalf("%v: client caps %+v lack the apps extension", e, cli.capabilities(e))
				}
			}
			s := connectOver(t, tr, srv, cli)
			ctx := context.Background()
			res, err := s.CallTool(ctx, "show", nil)
			if err != nil || len(res.Content) == 0 || res.Content[0].(*TextContent).Text != "shown in the view" {
				t.Fatalf("show: %+v %v", res, err)
			}
			tools, err := s.ListTools(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			var show *Tool
			for _, x := range tools.Tools {
				if x.Name == "show" {
					show = x
				}
			}
			ui := MetaAppUI(show.Meta)
			if ui == nil || ui.ResourceURI != "ui://apps/view" {
				t.Fatalf("tool ui %+v", ui)
			}
			if MetaAppUI(Meta{"ui/resourceUri": "ui://old"}).ResourceURI != "ui://old" || MetaAppUI(nil) != nil {
				t.Fatal("flat key not read")
			}
			rc, vui, err := s.ReadAppResource(ctx, show)
			if err != nil {
				t.Fatal(err)
			}
			if rc.Text != appHTML || rc.MIMEType != AppMIMEType || vui == nil || vui.CSP == nil || vui.CSP.ConnectDomains[0] != "https://api.example.com" || !vui.Permissions.Camera || vui.Permissions.Microphone || !*vui.PrefersBorder {
				t.Fatalf("read view: %+v %+v", rc, vui)
			}
			if _, _, err := s.ReadAppResource(ctx, &Tool{Name: "plain"}); err == nil {
				t.Fatal("ReadAppResource of a tool without a view: no error")
			}
		})
	}
}
