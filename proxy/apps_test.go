package proxy

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// newAppsUpstream returns a server of era (EraUnknown: both) with an MCP
// Apps view at ui://main, views at ui://item/{id}, and its tools: "show" (model and app), "refresh"
// (app only), "caps" (answers with the mimeTypes its client declared for
// the extension, "none" when it declared none) and a plain resource.
func newAppsUpstream(t *testing.T, era pmcp.Era, label string) *pmcp.Server {
	t.Helper()
	var mw []pmcp.Middleware
	if era != pmcp.EraUnknown {
		mw = append(mw, onlyEra(era))
	}
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "apps-" + label, Middleware: mw})
	if err != nil {
		t.Fatal(err)
	}
	border := true
	view := &pmcp.AppUI{CSP: &pmcp.AppCSP{ConnectDomains: []string{"https://" + label + ".example"}}, PrefersBorder: &border}
	if err := srv.AddAppResource(&pmcp.Resource{URI: "ui://main", Name: "main"}, view, []byte("<!doctype html><p>view "+label+"</p>")); err != nil {
		t.Fatal(err)
	}
	if err := srv.AddResource(&pmcp.Resource{URI: "test://" + label + "/r", Name: "r"},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, r *pmcp.ResourceRequest) (*pmcp.ReadResourceResult, error) {
			return &pmcp.ReadResourceResult{Contents: []*pmcp.ResourceContents{{URI: r.URI, Text: label + ": body"}}}, nil
		}); err != nil {
		t.Fatal(err)
	}
	if err := srv.AddResourceTemplate(&pmcp.ResourceTemplate{URITemplate: "ui://item/{id}", Name: "item", MIMEType: pmcp.AppMIMEType},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, r *pmcp.ResourceRequest) (*pmcp.ReadResourceResult, error) {
			return &pmcp.ReadResourceResult{Contents: []*pmcp.ResourceContents{{URI: r.URI, MIMEType: pmcp.AppMIMEType, Text: label + ": item " + r.Vars["id"]}}}, nil
		}); err != nil {
		t.Fatal(err)
	}
	tool := func(name string, vis []string, h func(*pmcp.RequestHandlerExtra) string) {
		tl := &pmcp.Tool{Name: name, InputSchema: objectSchema}
		if vis != nil {
			tl.Meta = pmcp.Meta{"ui": &pmcp.AppUI{ResourceURI: "ui://main", Visibility: vis}}
		}
		if err := srv.AddRawTool(tl, func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ *pmcp.CallToolParams) (*pmcp.CallToolResult, error) {
			return text(h(extra)), nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	tool("show", []string{pmcp.AppVisibilityModel, pmcp.AppVisibilityApp}, func(*pmcp.RequestHandlerExtra) string { return label + ": shown" })
	tool("refresh", []string{pmcp.AppVisibilityApp}, func(*pmcp.RequestHandlerExtra) string { return label + ": refreshed" })
	tool("caps", nil, func(extra *pmcp.RequestHandlerExtra) string {
		caps := extra.ClientCapabilities()
		if caps == nil || caps.Extensions[pmcp.ExtensionApps] == nil {
			return "none"
		}
		b, _ := pmcp.Marshal(caps.Extensions[pmcp.ExtensionApps]["mimeTypes"])
		return string(b)
	})
	return srv
}

// testMIMETypes is what the downstream host of the tests renders: more
// than pmcp.AppMIMEType, so that its declaration is told apart from the
// proxy's default.
var testMIMETypes = []string{pmcp.AppMIMEType, "text/html;profile=test"}

// TestBridgeAppsAggregated: two upstreams both serving ui://main behind
// one endpoint, for every era pair and transport: the views are listed,
// named by their tools (both keys) and read as ui://a_main and
// ui://b_main, visibility passes and app-only tools stay callable, a
// namespaced URI no upstream owns answers as an unknown resource, updates
// name the namespaced URI, the extension is declared downstream, and the
// downstream host's mimeTypes reach the upstream.
func TestBridgeAppsAggregated(t *testing.T) {
	forEachBridge(t, func(t *testing.T, tc eraCase, down string, upDial func(*pmcp.Server, *sync.WaitGroup) DialFunc) {
		a, b := newAppsUpstream(t, tc.upstreamEr, "a"), newAppsUpstream(t, tc.upstreamEr, "b")
		var wg sync.WaitGroup
		p := newProxy(t, Options{Upstreams: []Upstream{{Name: "a", Dial: upDial(a, &wg)}, {Name: "b", Dial: upDial(b, &wg)}}}, &wg)
		updated := make(chan string, 16)
		acked := make(chan struct{}, 1)
		cs := downstream(t, p, down, pmcp.ClientOptions{Era: tc.clientEra, AppMIMETypes: testMIMETypes, Notifications: pmcp.ClientNotificationHandlers{
			ResourceUpdated:          func(_ context.Context, u *pmcp.ResourceUpdatedParams) { updated <- u.URI },
			SubscriptionAcknowledged: func(context.Context, *pmcp.SubscriptionsAckParams) { acked <- struct{}{} },
		}})
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if _, ok := cs.ServerCapabilities().Extensions[pmcp.ExtensionApps]; !ok {
			t.Errorf("the bridge does not declare %s: %+v", pmcp.ExtensionApps, cs.ServerCapabilities().Extensions)
		}

		res, err := cs.AllResources(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var uris []string
		for _, r := range res {
			uris = append(uris, r.URI+" "+r.MIMEType)
		}
		slices.Sort(uris)
		want := []string{"test://a/r ", "test://b/r ", "ui://a_main " + pmcp.AppMIMEType, "ui://b_main " + pmcp.AppMIMEType}
		if !slices.Equal(uris, want) {
			t.Fatalf("resources %q\nwant %q", uris, want)
		}

		templates, err := cs.AllResourceTemplates(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var tpls []string
		for _, tp := range templates {
			tpls = append(tpls, tp.URITemplate)
		}
		slices.Sort(tpls)
		if want := []string{"ui://a_item/{id}", "ui://b_item/{id}"}; !slices.Equal(tpls, want) {
			t.Errorf("resource templates %q, want %q", tpls, want)
		}
		if r, err := cs.ReadResource(ctx, "ui://b_item/7"); err != nil || len(r.Contents) != 1 || r.Contents[0].URI != "ui://b_item/7" || r.Contents[0].Text != "b: item 7" {
			t.Errorf("read ui://b_item/7: %+v, %v", r, err)
		}

		tools, err := cs.AllTools(ctx)
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]*pmcp.Tool{}
		for _, tl := range tools {
			byName[tl.Name] = tl
		}
		for _, up := range []string{"a", "b"} {
			for _, c := range []struct {
				tool string
				vis  []string
			}{{"show", []string{"model", "app"}}, {"refresh", []string{"app"}}} {
				name := up + "_" + c.tool
				tl := byName[name]
				if tl == nil {
					t.Fatalf("%s is not listed: %v", name, tools)
				}
				ui := pmcp.MetaAppUI(tl.Meta)
				if ui == nil || ui.ResourceURI != "ui://"+up+"_main" || !slices.Equal(ui.Visibility, c.vis) {
					t.Errorf("%s _meta.ui %+v, want resourceUri ui://%s_main and visibility %v", name, ui, up, c.vis)
				}
				if flat := tl.Meta["ui/resourceUri"]; flat != "ui://"+up+"_main" {
					t.Errorf("%s flat ui/resourceUri %v, want ui://%s_main", name, flat, up)
				}
				// app-only or not, the tool is callable
				r, err := cs.CallTool(ctx, name, nil)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if got, want := resultText(t, r), up+": "+map[string]string{"show": "shown", "refresh": "refreshed"}[c.tool]; got != want {
					t.Errorf("%s: %q, want %q", name, got, want)
				}
			}
			content, ui, err := cs.ReadAppResource(ctx, byName[up+"_show"])
			if err != nil {
				t.Fatalf("the view of %s_show: %v", up, err)
			}
			if content.URI != "ui://"+up+"_main" || content.MIMEType != pmcp.AppMIMEType || !strings.Contains(content.Text, "view "+up) {
				t.Errorf("the view of %s_show: %+v", up, content)
			}
			if ui == nil || ui.CSP == nil || !slices.Equal(ui.CSP.ConnectDomains, []string{"https://" + up + ".example"}) || ui.PrefersBorder == nil || !*ui.PrefersBorder {
				t.Errorf("the view of %s_show: _meta.ui %+v", up, ui)
			}
			// The downstream host's declaration reached the upstream: in
			// the initialize of a session of its own, in each request to a
			// modern upstream; a legacy upstream shared by modern
			// requests has the proxy's default.
			wantCaps := `["text/html;profile=mcp-app","text/html;profile=test"]`
			if tc.clientEra == pmcp.EraModern && tc.upstreamEr == pmcp.EraLegacy {
				wantCaps = `["text/html;profile=mcp-app"]`
			}
			r, err := cs.CallTool(ctx, up+"_caps", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := resultText(t, r); got != wantCaps {
				t.Errorf("%s saw the mimeTypes %s, want %s", up, got, wantCaps)
			}
		}

		// Names no upstream owns, or its owner lacks, answer as any
		// unknown resource.
		for _, uri := range []string{"ui://main", "ui://c_main", "ui://a_nope", "ui://b_item"} {
			_, err := cs.ReadResource(ctx, uri)
			wantNotFound(t, err, tc.clientEra, uri)
		}
		// A non-ui URI is never rewritten.
		if r, err := cs.ReadResource(ctx, "test://b/r"); err != nil || r.Contents[0].URI != "test://b/r" {
			t.Errorf("read test://b/r: %+v, %v", r, err)
		}

		// An update of b's ui://main names ui://b_main.
		defer subscribeDownstream(t, ctx, cs, tc.clientEra, "ui://b_main", acked)()
		for {
			b.NotifyResourceUpdated("ui://main")
			select {
			case got := <-updated:
				if got != "ui://b_main" {
					t.Fatalf("update of %q, want ui://b_main", got)
				}
				return
			case <-ctx.Done():
				t.Fatal("no resource update reached the downstream")
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
}

// wantNotFound checks err is the answer of a pmcp server in era to a read
// of a resource it does not have.
func wantNotFound(t *testing.T, err error, era pmcp.Era, uri string) {
	t.Helper()
	code := int64(jsonrpc.CodeInvalidParams)
	if era == pmcp.EraLegacy {
		code = jsonrpc.CodeResourceNotFound
	}
	var je *jsonrpc.Error
	if !errorsAs(err, &je) || je.Code != code || je.Message != "Resource not found" || string(je.Data) != `{"uri":"`+uri+`"}` {
		t.Errorf("read %s: %v, want %d Resource not found", uri, err, code)
	}
}

// TestBridgeAppsNoHost: a downstream client that does not render Apps
// declares no extension, and neither does the upstream session made for it
// (nor any request to a modern upstream); the views keep their URIs with
// one unprefixed upstream.
func TestBridgeAppsNoHost(t *testing.T) {
	for _, tc := range translations {
		t.Run(tc.name, func(t *testing.T) {
			srv := newAppsUpstream(t, tc.upstreamEr, "u")
			var wg sync.WaitGroup
			p := newProxy(t, Options{Upstreams: []Upstream{{Name: "u", Dial: memDial(srv, &wg)}}}, &wg)
			cs := downstream(t, p, "http", pmcp.ClientOptions{Era: tc.clientEra})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			r, err := cs.CallTool(ctx, "caps", nil)
			if err != nil {
				t.Fatal(err)
			}
			want := "none"
			if tc.clientEra == pmcp.EraModern && tc.upstreamEr == pmcp.EraLegacy {
				want = `["text/html;profile=mcp-app"]` // shared: the proxy's default
			}
			if got := resultText(t, r); got != want {
				t.Errorf("the upstream saw %s, want %s", got, want)
			}
			tools, err := cs.AllTools(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, tl := range tools {
				if tl.Name == "show" {
					if ui := pmcp.MetaAppUI(tl.Meta); ui == nil || ui.ResourceURI != "ui://main" || tl.Meta["ui/resourceUri"] != "ui://main" {
						t.Errorf("show: _meta %v", tl.Meta)
					}
				}
			}
			c, _, err := cs.ReadAppResource(ctx, &pmcp.Tool{Name: "show", Meta: pmcp.Meta{"ui": pmcp.AppUI{ResourceURI: "ui://main"}}})
			if err != nil || c.URI != "ui://main" {
				t.Fatalf("read ui://main: %+v, %v", c, err)
			}
		})
	}
}
