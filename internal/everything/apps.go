package everything

import (
	"context"
	_ "embed"
	"strconv"
	"sync/atomic"

	"github.com/gopmcp/pmcp"
)

// The MCP Apps part of the everything server: show_app comes with a view
// (AppViewURI) that hosts able to render Apps show; the view renders the
// tool's structuredContent and calls app_ping, a tool only the view may
// call (visibility ["app"]), back through the host. Both answer with a
// meaningful text content for hosts (and models) without Apps, and with
// structuredContent for the view whatever the client declared (the text
// says the same, so a host without Apps loses nothing).
const (
	AppViewURI  = "ui://everything/app.html"
	AppToolName = "show_app"
	AppPingName = "app_ping"
)

// appView is the view: one self-contained document (inline script and
// style, no network), so its _meta.ui declares no CSP origins.
//
//go:embed app.html
var appView []byte

type showAppArgs struct {
	Name string `json:"name,omitempty" jsonschema:"who to greet (default: world)"`
}

type appPingArgs struct {
	From string `json:"from,omitempty" jsonschema:"who is calling (the view says view)"`
}

func (b *builder) appTools() {
	border := true
	b.check(b.s.AddAppResource(&pmcp.Resource{URI: AppViewURI, Name: "everything-app", Title: "Everything app view",
		Description: "The MCP Apps view of show_app: renders its result and calls app_ping through the host."},
		&pmcp.AppUI{PrefersBorder: &border}, appView))
	b.check(pmcp.AddTool(b.s, &pmcp.Tool{Name: AppToolName, Title: "Show the app",
		Description: "Greets someone; hosts that render MCP Apps show the greeting in an HTML view, which calls app_ping back through the host.",
		Meta:        pmcp.Meta{"ui": &pmcp.AppUI{ResourceURI: AppViewURI}}},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, in showAppArgs) (*pmcp.CallToolResult, error) {
			name := in.Name
			if name == "" {
				name = "world"
			}
			greeting := "Hello, " + name + "!"
			// The text is what a model, or a host without Apps, reads; the
			// view renders structuredContent.
			return &pmcp.CallToolResult{
				Content:           []pmcp.Content{pmcp.Text(greeting + " (hosts that render MCP Apps show this in the " + AppViewURI + " view.)")},
				StructuredContent: map[string]any{"greeting": greeting, "era": extra.Era().String()},
			}, nil
		}))
	var calls atomic.Int64
	b.check(pmcp.AddTool(b.s, &pmcp.Tool{Name: AppPingName, Title: "Ping from the app",
		Description: "Answers the show_app view (visible to the app only, not to the model).",
		// No view of its own: the Inspector lists tools with a resourceUri
		// as apps to open.
		Meta: pmcp.Meta{"ui": &pmcp.AppUI{Visibility: []string{pmcp.AppVisibilityApp}}}},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, in appPingArgs) (*pmcp.CallToolResult, error) {
			n := calls.Add(1)
			answer := "pong"
			if in.From != "" {
				answer += " to " + in.From
			}
			return &pmcp.CallToolResult{
				Content:           []pmcp.Content{pmcp.Text(answer + " (call " + strconv.FormatInt(n, 10) + ")")},
				StructuredContent: map[string]any{"answer": answer, "calls": n, "era": extra.Era().String()},
			}, nil
		}))
}
