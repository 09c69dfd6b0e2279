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

// view is a self-contained document: no network, so its CSP declares no
// origins.
const view = `<!DOCTYPE html><html><body><p id="n">…</p></body></html>`

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
