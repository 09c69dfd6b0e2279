package everything

import (
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/gopmcp/pmcp"
)

// The app tools as a host sees them: show_app names its view (and the
// flat key), app_ping is the app's alone; the view is a self-contained
// document of the Apps MIME type speaking the host protocol; both tools
// answer with text for hosts without Apps and structuredContent for the
// view.
func TestAppTools(t *testing.T) {
	c := connect(t)
	c.call(pmcp.MethodInitialize, map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
	metas := map[string]string{}
	for _, x := range c.call(pmcp.MethodToolsList, nil)["tools"].([]any) {
		tl := x.(map[string]any)
		if name := tl["name"].(string); name == AppToolName || name == AppPingName {
			b, _ := json.Marshal(tl["_meta"], json.Deterministic(true))
			metas[name] = string(b)
		}
	}
	if want := `{"ui":{"resourceUri":"ui://everything/app.html"},"ui/resourceUri":"ui://everything/app.html"}`; metas[AppToolName] != want {
		t.Errorf("%s _meta %s, want %s", AppToolName, metas[AppToolName], want)
	}
	if want := `{"ui":{"visibility":["app"]}}`; metas[AppPingName] != want {
		t.Errorf("%s _meta %s, want %s", AppPingName, metas[AppPingName], want)
	}
	content := c.call(pmcp.MethodResourcesRead, map[string]any{"uri": AppViewURI})["contents"].([]any)[0].(map[string]any)
	html, _ := content["text"].(string)
	if content["mimeType"] != pmcp.AppMIMEType || !strings.HasPrefix(html, "<!DOCTYPE html>") {
		t.Fatalf("view: %v", content)
	}
	for _, want := range []string{`"ui/initialize"`, `"ui/notifications/initialized"`, `"ui/notifications/tool-result"`, `request("tools/call", { name: "app_ping"`} {
		if !strings.Contains(html, want) {
			t.Errorf("the view lacks %s", want)
		}
	}
	// No network: nothing the host's CSP would have to allow.
	for _, bad := range []string{"http://", "https://", "src="} {
		if strings.Contains(html, bad) {
			t.Errorf("the view is not self-contained: it has %q", bad)
		}
	}
	show := c.call(pmcp.MethodToolsCall, map[string]any{"name": AppToolName, "arguments": map[string]any{"name": "Ann"}})
	if text := show["content"].([]any)[0].(map[string]any)["text"].(string); !strings.HasPrefix(text, "Hello, Ann!") {
		t.Errorf("show_app text %q", text)
	}
	if sc, _ := json.Marshal(show["structuredContent"], json.Deterministic(true)); string(sc) != `{"era":"legacy","greeting":"Hello, Ann!"}` {
		t.Errorf("show_app structuredContent %s", sc)
	}
	ping := c.call(pmcp.MethodToolsCall, map[string]any{"name": AppPingName, "arguments": map[string]any{"from": "view"}})
	if sc, _ := json.Marshal(ping["structuredContent"], json.Deterministic(true)); string(sc) != `{"answer":"pong to view","calls":1,"era":"legacy"}` {
		t.Errorf("app_ping structuredContent %s", sc)
	}
}
