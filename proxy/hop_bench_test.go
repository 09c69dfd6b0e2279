package proxy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/gopmcp/pmcp"
)

// BenchmarkHopHTTP is the gateway leg of bench/ in one process: one
// tools/call from a raw HTTP client to an upstream pmcp server, called
// directly, through net/http/httputil.ReverseProxy (one plain HTTP hop)
// and through the proxy. What a hop adds is its figure minus direct's;
// counted in instructions (bench/icount.sh's method) the proxy's addition
// over the reverse proxy's is the gateway's cost goal measured without
// the noise of a shared machine.
func BenchmarkHopHTTP(b *testing.B) {
	for _, era := range []pmcp.Era{pmcp.EraLegacy, pmcp.EraModern} {
		for _, hop := range []string{"direct", "revproxy", "proxy"} {
			b.Run(era.String()+"/"+hop, func(b *testing.B) {
				r := newHopRig(b, era, hop)
				b.ReportAllocs()
				for b.Loop() {
					r.call(b)
				}
			})
		}
	}
}

// newHopRig is a forwardRig whose hop is hop (direct, revproxy, proxy).
func newHopRig(t testing.TB, era pmcp.Era, hop string) *forwardRig {
	t.Helper()
	up, err := pmcp.NewServer(pmcp.ServerOptions{Name: "up", DisableAccessLog: true})
	if err != nil {
		t.Fatal(err)
	}
	type echoIn struct {
		Text string `json:"text"`
	}
	if err := pmcp.AddTool(up, &pmcp.Tool{Name: "echo"}, func(ctx context.Context, extra *pmcp.RequestHandlerExtra, in echoIn) (string, error) {
		return in.Text, nil
	}); err != nil {
		t.Fatal(err)
	}
	uh := pmcp.NewStreamableHTTPHandler(up, pmcp.StreamableHTTPOptions{})
	uts := httptest.NewServer(uh)
	t.Cleanup(func() {
		_ = uh.Close()
		uts.Close()
	})
	var front string
	tool := "echo"
	switch hop {
	case "direct":
		front = uts.URL
	case "revproxy":
		u, _ := url.Parse(uts.URL)
		rp := httputil.NewSingleHostReverseProxy(u)
		tr := &http.Transport{MaxIdleConnsPerHost: 64}
		rp.Transport = tr
		ts := httptest.NewServer(rp)
		t.Cleanup(func() {
			ts.Close()
			tr.CloseIdleConnections()
		})
		front = ts.URL
	default:
		p := newProxy(t, Options{
			Upstreams:     []Upstream{{Name: "up", Dial: HTTP(uts.URL, pmcp.HTTPClientOptions{})}},
			Prefix:        true,
			AnswerUnknown: true,
			Server:        pmcp.ServerOptions{Name: "gw", DisableAccessLog: true},
		}, nil)
		h := pmcp.NewStreamableHTTPHandler(p.Server(), pmcp.StreamableHTTPOptions{})
		ts := httptest.NewServer(h)
		t.Cleanup(func() {
			_ = h.Close()
			ts.Close()
		})
		front, tool = ts.URL, "up_echo"
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 4}
	t.Cleanup(tr.CloseIdleConnections)
	r := &forwardRig{url: front, client: &http.Client{Transport: tr}}
	if era == pmcp.EraModern {
		r.body = []byte(strings.Replace(fwdEchoModern, "up_echo", tool, 1))
		r.hdr = [][2]string{{"Mcp-Protocol-Version", "2026-07-28"}, {"Mcp-Method", "tools/call"}, {"Mcp-Name", tool}}
	} else {
		r.openLegacy(t, fwdInitialize)
		r.body = []byte(strings.Replace(fwdEchoLegacy, "up_echo", tool, 1))
	}
	if got := r.call(t); !strings.Contains(got, `"text":"hello"`) || strings.Contains(got, `"error"`) {
		t.Fatalf("%s: the call answered %s", hop, got)
	}
	return r
}
