package examples_test

import (
	"strings"
	"testing"
)

// The apps example declares the extension, lists its app tools with
// _meta.ui and the flat key, reads its view with the Apps MIME type and
// _meta.ui, and answers the app-only tool's tools/call: with
// structuredContent for a client declaring the extension, text only for
// one that does not (modern era, per request).
func TestApps(t *testing.T) {
	cmd, in, out, stderr := start(t, build(t, "apps"))
	const apps = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}}}`
	for i, c := range []struct{ req, want string }{
		{`"method":"server/discover","params":{` + modernMeta + `}`, `"extensions":{"io.modelcontextprotocol/ui":{}}`},
		// _meta is a map: its two keys come in either order.
		{`"method":"tools/list","params":{` + apps + `}`, `"ui":{"resourceUri":"ui://apps/counter","visibility":["app"]}`},
		{`"method":"tools/list","params":{` + apps + `}`, `"ui/resourceUri":"ui://apps/counter"`},
		{`"method":"resources/read","params":{"uri":"ui://apps/counter",` + apps + `}`, `"mimeType":"text/html;profile=mcp-app","text":"<!DOCTYPE html>`},
		{`"method":"resources/read","params":{"uri":"ui://apps/counter",` + apps + `}`, `"_meta":{"ui":{"prefersBorder":true}}`},
		{`"method":"tools/call","params":{"name":"bump",` + apps + `}`, `"structuredContent":{"n":1}`},
		{`"method":"tools/call","params":{"name":"counter",` + modernMeta + `}`, `"resultType":"complete","content":[{"type":"text","text":"The counter is at 1."}]}`},
	} {
		id := i + 1
		r := send(t, in, out, id, `{"jsonrpc":"2.0","id":`+itoa(id)+`,`+c.req+`}`)
		if !strings.Contains(string(r.Raw), c.want) {
			t.Fatalf("%s\ngot  %s\nwant %s", c.req, r.Raw, c.want)
		}
	}
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil || stderr.Len() > 0 {
		t.Fatalf("apps at the end of stdin: %v (stderr %q)", err, stderr)
	}
}
