package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
)

// Environment of TestBridgeAppsExamples, set by scripts/test.sh after it
// installed the ext-apps example servers with `scripts/conformance.sh npm`.
const (
	envAppsExamples = "PMCP_APPS_EXAMPLES" // the install directory
	envNode         = "PMCP_NODE"          // the Node binary to run them with
)

// appsExample returns the command line of the ext-apps example server pkg
// (@modelcontextprotocol/<pkg>) over stdio. Without its environment the
// test is skipped locally and fails under CI=true, so CI cannot silently
// lose it.
func appsExample(t *testing.T, pkg string) (string, []string) {
	t.Helper()
	dir, node := os.Getenv(envAppsExamples), os.Getenv(envNode)
	if dir == "" || node == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %s or %s is not set: scripts/test.sh installs the ext-apps examples and sets them", envAppsExamples, envNode)
		}
		t.Skipf("%s and %s not set (scripts/test.sh sets them)", envAppsExamples, envNode)
	}
	js := filepath.Join(dir, "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js")
	if _, err := os.Stat(js); err != nil {
		t.Fatalf("%s: %v", envAppsExamples, err)
	}
	return node, []string{js, "--stdio"}
}

// TestBridgeAppsExamples: two ext-apps example servers from npm (2.0.3),
// both with the tool get-time and its view ui://get-time/mcp-app.html, as
// stdio children of one `pmcp bridge --listen`, aggregated. A host of
// either era lists their app tools with re-namespaced views
// (ui://vanilla_get-time/..., ui://preact_get-time/..., in
// _meta.ui.resourceUri and in the flat key) that resources/read resolves
// to each server's own HTML with the MCP Apps MIME type, and calls them.
func TestBridgeAppsExamples(t *testing.T) {
	servers := map[string]string{"vanilla": "server-basic-vanillajs", "preact": "server-basic-preact"}
	cfg := map[string]any{}
	for name, pkg := range servers {
		node, args := appsExample(t, pkg)
		cfg[name] = map[string]any{"command": node, "args": args}
	}
	body, err := pmcp.Marshal(map[string]any{"mcpServers": cfg})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "apps.json")
	if err := os.WriteFile(file, body, 0o600); err != nil {
		t.Fatal(err)
	}
	url := startBridgeHTTP(t, "--config", file)
	for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
		t.Run(era.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cs, err := pmcp.NewClient(pmcp.ClientOptions{Era: era, AppMIMETypes: []string{pmcp.AppMIMEType}}).ConnectHTTP(ctx, url, pmcp.HTTPClientOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if _, ok := cs.ServerCapabilities().Extensions[pmcp.ExtensionApps]; !ok {
				t.Errorf("the bridge does not declare %s", pmcp.ExtensionApps)
			}
			tools, err := cs.AllTools(ctx)
			if err != nil {
				t.Fatal(err)
			}
			resources, err := cs.AllResources(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var listed []string
			for _, r := range resources {
				listed = append(listed, r.URI)
			}
			pages := map[string]string{}
			for name := range servers {
				want := "ui://" + name + "_get-time/mcp-app.html"
				i := slices.IndexFunc(tools, func(tl *pmcp.Tool) bool { return tl.Name == name+"_get-time" })
				if i < 0 {
					t.Fatalf("no %s_get-time among the tools %v", name, tools)
				}
				tool := tools[i]
				ui := pmcp.MetaAppUI(tool.Meta)
				if ui == nil || ui.ResourceURI != want {
					t.Fatalf("%s: _meta %v, want _meta.ui.resourceUri %s", tool.Name, tool.Meta, want)
				}
				if flat := tool.Meta["ui/resourceUri"]; flat != want { // the servers write both keys
					t.Errorf("%s: the flat ui/resourceUri is %v, want %s", tool.Name, flat, want)
				}
				if !slices.Contains(listed, want) {
					t.Errorf("resources/list %v lacks %s", listed, want)
				}
				content, _, err := cs.ReadAppResource(ctx, tool)
				if err != nil {
					t.Fatalf("the view of %s: %v", tool.Name, err)
				}
				if content.URI != want || content.MIMEType != pmcp.AppMIMEType || !strings.Contains(strings.ToLower(content.Text), "<html") {
					t.Errorf("the view of %s: uri %s, mimeType %s, %d bytes of text", tool.Name, content.URI, content.MIMEType, len(content.Text))
				}
				pages[name] = content.Text
				res, err := cs.CallTool(ctx, tool.Name, map[string]any{})
				if err != nil {
					t.Fatalf("%s: %v", tool.Name, err)
				}
				if res.IsError || len(res.Content) == 0 {
					t.Errorf("%s: %+v", tool.Name, res)
				}
			}
			if pages["vanilla"] == pages["preact"] {
				t.Errorf("both namespaced views read the same page (%d bytes): the URIs collided", len(pages["vanilla"]))
			}
			// The URI both servers know is no view of the bridge's.
			if _, err := cs.ReadResource(ctx, "ui://get-time/mcp-app.html"); err == nil {
				t.Error("ui://get-time/mcp-app.html was read through the aggregating bridge")
			}
			t.Logf("%s: views %s", era, strconv.Quote(strings.Join(listed, " ")))
		})
	}
}
