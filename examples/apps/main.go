// Command apps serves an MCP Apps tool over stdio, in both eras: "counter"
// comes with an HTML view (ui://apps/counter) that hosts able to render
// Apps show, "bump" is callable only by that view, and a host without the
// extension still gets a meaningful text result.
package main

import (
	"context"
	"errors"
	"log"
	"strconv"
	"sync/atomic"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/transport/stdio"
)

// example:view begin

// view is the counter's HTML view, self-contained (inline script, no
// network, so its CSP declares no origins). It speaks the host protocol,
// JSON-RPC over postMessage, by hand: ui/initialize, then
// ui/notifications/initialized; it shows the counter tool's result and
// calls bump through the host.
const view = `<!DOCTYPE html>
<html><body>
<p>Counter: <b id="n">…</b> <button id="bump" disabled>+1</button></p>
<script>
let last = 0; const pending = {};
const post = m => parent.postMessage({jsonrpc: "2.0", ...m}, "*");
const rpc = (method, params) => new Promise((ok, fail) => {
  pending[++last] = {ok, fail};
  post({id: last, method, params});
});
const show = r => { document.getElementById("n").textContent = r.structuredContent?.n ?? "?"; };
addEventListener("message", ({source, data: m}) => {
  if (source !== parent || m?.jsonrpc !== "2.0") return;
  if (!m.method && pending[m.id]) { // a response to rpc
    const p = pending[m.id]; delete pending[m.id];
    m.error ? p.fail(new Error(m.error.message)) : p.ok(m.result);
  } else if (m.method === "ui/notifications/tool-result") {
    show(m.params);
  } else if (m.id !== undefined) { // the host's ping or ui/resource-teardown
    post({id: m.id, result: {}});
  }
});
document.getElementById("bump").onclick = () => rpc("tools/call", {name: "bump", arguments: {}}).then(show);
rpc("ui/initialize", {appInfo: {name: "counter", version: "1.0.0"}, appCapabilities: {}, protocolVersion: "2026-01-26"})
  .then(() => { post({method: "ui/notifications/initialized"}); document.getElementById("bump").disabled = false; });
</script>
</body></html>`

// example:view end

type Count struct {
	N int64 `json:"n"`
}

// example:main begin

func main() {
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "apps", Version: "1.0.0"})
	if err != nil {
		log.Fatal(err)
	}
	var n atomic.Int64
	count := func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ struct{}) (*pmcp.CallToolResult, error) {
		c := Count{N: n.Load()}
		text := "The counter is at " + strconv.FormatInt(c.N, 10) + "."
		if !pmcp.AppsSupported(extra.ClientCapabilities()) {
			return &pmcp.CallToolResult{Content: []pmcp.Content{pmcp.Text(text)}}, nil
		}
		// The model reads the text; the view renders structuredContent.
		return &pmcp.CallToolResult{Content: []pmcp.Content{pmcp.Text(text)}, StructuredContent: c}, nil
	}
	border := true
	err = errors.Join(
		// The view first: a tool's resourceUri must name a registered view.
		srv.AddAppResource(&pmcp.Resource{URI: "ui://apps/counter", Name: "counter view"},
			&pmcp.AppUI{PrefersBorder: &border}, []byte(view)),
		pmcp.AddTool(srv, &pmcp.Tool{Name: "counter", Description: "Shows the counter.",
			Meta: pmcp.Meta{"ui": &pmcp.AppUI{ResourceURI: "ui://apps/counter"}}}, count),
		pmcp.AddTool(srv, &pmcp.Tool{Name: "bump", Description: "Adds one to the counter.",
			Meta: pmcp.Meta{"ui": &pmcp.AppUI{ResourceURI: "ui://apps/counter", Visibility: []string{pmcp.AppVisibilityApp}}}},
			func(ctx context.Context, extra *pmcp.RequestHandlerExtra, in struct{}) (*pmcp.CallToolResult, error) {
				n.Add(1)
				return count(ctx, extra, in)
			}),
	)
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Serve(context.Background(), stdio.Stdio(stdio.Options{})); err != nil {
		log.Fatal(err)
	}
}

// example:main end
