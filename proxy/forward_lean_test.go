package proxy

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
)

// leanResults are upstream tools/call results: the shapes the client's
// lean decoding takes (client_result_decode.go) and many it must leave to
// the typed one.
var leanResults = []string{
	// As pmcp servers write them, modern and legacy.
	`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"0.0.0"}},"resultType":"complete","content":[{"type":"text","text":"hello"}]}`,
	`{"content":[{"type":"text","text":"hello"}]}`,
	`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","title":"Up \"quoted\"","version":"1","description":"d","websiteUrl":"https://example.com"}},"resultType":"complete","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"isError":true}`,
	`{"_meta":{"io.modelcontextprotocol/serverInfo":{}},"content":[]}`,
	`{"resultType":"complete","content":[],"isError":false}`,
	`{"content":[{"type":"text","text":"esc \n\t\"\\ \u00e9 \ud83d\ude00 \/ \u2028 <&>"}],"isError":true}`,
	`{"content":[{"type":"text","text":"caf\u00e9 \u001f"}]}`,
	// Left to the typed decoding.
	`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"1","icons":[{"src":"https://example.com/i.png"}]}},"content":[{"type":"text","text":"icons"}]}`,
	`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"1"},"example.com/k":"v"},"resultType":"complete","content":[{"type":"text","text":"more meta"}]}`,
	`{"_meta":{"example.com/k":"v"},"content":[{"type":"text","text":"other meta"}]}`,
	`{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"}]}`,
	`{"content":[{"type":"resource_link","uri":"ui://app/view.html","name":"view"},{"type":"resource_link","uri":"file:///x","name":"x"}]}`,
	`{"content":[{"type":"resource","resource":{"uri":"ui://app/view.html","mimeType":"text/html;profile=mcp-app","text":"<p>hi</p>"}}]}`,
	`{"content":[{"type":"text","text":"{\"a\":1}"}],"structuredContent":{"a":1}}`,
	`{"content":[{"type":"text","text":"[1]"}],"structuredContent":[1]}`,
	`{"content":[{"type":"text","text":"x","annotations":{"audience":["user"]}}]}`,
	`{"content":[{"type":"text","text":"x","_meta":{"k":"v"}}]}`,
	`{"content":[{"text":"order","type":"text"}],"resultType":"complete"}`,
	`{"isError":true,"content":[{"type":"text","text":"order"}]}`,
	`{"content":[{"type":"text","text":"x"}],"extra":{"a":[1,2]}}`,
	`{"content":[{"type":"text","text":"x"}],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"late","version":"1"}}}`,
	`{}`,
}

// TestForwardLeanResultAsTyped is the differential test of the lean
// decoding of forwarded results: every result in leanResults goes through
// the proxy as the upstream wrote it and as its typed twin, the same JSON
// with a space after its '{' (which the lean decoding never takes and the
// typed one reads alike), and the downstream must get the same bytes for
// both: in both eras downstream and upstream, with ui:// names
// namespaced or not, from a client that declares Apps support or not.
func TestForwardLeanResultAsTyped(t *testing.T) {
	var mu sync.Mutex
	var current string // the result the upstream's tools/call answers
	up, err := pmcp.NewServer(pmcp.ServerOptions{Name: "up", Version: "0.0.0", DisableAccessLog: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := pmcp.AddTool(up, &pmcp.Tool{Name: "t"}, func(ctx context.Context, extra *pmcp.RequestHandlerExtra, in struct{}) (string, error) {
		return "", nil
	}); err != nil {
		t.Fatal(err)
	}
	uh := pmcp.NewStreamableHTTPHandler(up, pmcp.StreamableHTTPOptions{})
	uts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		var msg struct {
			ID     jsontext.Value `json:"id"`
			Method string         `json:"method"`
		}
		if r.Method == http.MethodPost && pmcp.Unmarshal(body, &msg) == nil && msg.Method == pmcp.MethodToolsCall {
			mu.Lock()
			res := current
			mu.Unlock()
			if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
				w.Header().Set("Mcp-Session-Id", sid)
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"result":`+res+`}`)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		uh.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		_ = uh.Close()
		uts.Close()
	})
	compared := 0
	for _, upEra := range []pmcp.Era{pmcp.EraLegacy, pmcp.EraModern} {
		for _, prefix := range []bool{false, true} {
			p := newProxy(t, Options{
				Upstreams: []Upstream{{Name: "up", Dial: HTTP(uts.URL, pmcp.HTTPClientOptions{})}},
				Prefix:    prefix,
				Client:    pmcp.ClientOptions{Era: upEra},
				Server:    pmcp.ServerOptions{Name: "gw", Version: "1", DisableAccessLog: true},
			}, nil)
			h := pmcp.NewStreamableHTTPHandler(p.Server(), pmcp.StreamableHTTPOptions{})
			ts := httptest.NewServer(h)
			tool := "t"
			if prefix {
				tool = "up_t"
			}
			for _, era := range []pmcp.Era{pmcp.EraLegacy, pmcp.EraModern} {
				for _, apps := range []bool{false, true} {
					r := leanRig(t, ts.URL, era, apps, tool)
					for _, res := range leanResults {
						twin := "{ " + res[1:]
						var got [2]string
						for i, s := range []string{res, twin} {
							mu.Lock()
							current = s
							mu.Unlock()
							got[i] = ssePayload(r.call(t))
						}
						if !strings.Contains(got[0], `"result":{`) {
							t.Errorf("upstream %v, downstream %v: %s was not forwarded: %s", upEra, era, res, got[0])
						}
						if got[0] != got[1] && !sameUnordered(res, got[0], got[1]) {
							t.Errorf("upstream %v, prefix %v, downstream %v, apps %v: %s\nforwarded as %s\ntyped twin  %s", upEra, prefix, era, apps, res, got[0], got[1])
						}
						compared++
					}
				}
			}
			_ = h.Close()
			ts.Close()
		}
	}
	if compared != 2*2*2*2*len(leanResults) {
		t.Errorf("compared %d results", compared)
	}
}

// sameUnordered reports whether a and b, the downstream bytes of the
// upstream result res, are the same JSON but for the order of members
// where the typed path itself does not fix it: a _meta of several
// members (a map, encoded in no set order) when res has a _meta member
// of its own that the proxy keeps.
func sameUnordered(res, a, b string) bool {
	if !strings.Contains(res, `"example.com/k"`) {
		return false
	}
	ca, cb := jsontext.Value(a), jsontext.Value(b)
	return ca.Canonicalize() == nil && cb.Canonicalize() == nil && bytes.Equal(ca, cb)
}

// ssePayload is the data of the last event of a text/event-stream body
// (whose event ids differ from call to call), or body itself.
func ssePayload(body string) string {
	out := body
	for line := range strings.Lines(body) {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			out = strings.TrimRight(d, "\r\n")
		}
	}
	return out
}

// leanRig is a forwardRig calling tool at url in era, from a client that
// declares Apps support or not.
func leanRig(t *testing.T, url string, era pmcp.Era, apps bool, tool string) *forwardRig {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	r := &forwardRig{url: url, client: &http.Client{Transport: tr}}
	caps := `{}`
	if apps {
		caps = `{"extensions":{"` + pmcp.ExtensionApps + `":{"mimeTypes":["` + pmcp.AppMIMEType + `"]}}}`
	}
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}`
	if era == pmcp.EraModern {
		r.body = []byte(call + `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `,"io.modelcontextprotocol/clientInfo":{"name":"lean","version":"1"}}}}`)
		r.hdr = [][2]string{{"Mcp-Protocol-Version", "2026-07-28"}, {"Mcp-Method", "tools/call"}, {"Mcp-Name", tool}}
		return r
	}
	init := strings.Replace(fwdInitialize, `"capabilities":{}`, `"capabilities":`+caps, 1)
	r.openLegacy(t, init)
	r.body = []byte(call + `}}`)
	return r
}
