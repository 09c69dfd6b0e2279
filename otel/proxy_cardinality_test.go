package otel_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	pmcpotel "github.com/gopmcp/pmcp/otel"
	"github.com/gopmcp/pmcp/proxy"
	"go.opentelemetry.io/otel/attribute"
)

// Behind the bridge the proxy registers no tools of its own, yet the
// tools and prompts its upstreams list are real names: they are attribute
// values of the duration histogram, and a name no upstream lists is
// "_OTHER", in both eras.
func TestBridgedNamesAreLabels(t *testing.T) {
	up, err := pmcp.NewServer(pmcp.ServerOptions{Name: "upstream"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = up.Close() })
	if err := pmcp.AddTool(up, &pmcp.Tool{Name: "echo"}, func(ctx context.Context, extra *pmcp.RequestHandlerExtra, in echoIn) (string, error) {
		return in.Text, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := up.AddPrompt(&pmcp.Prompt{Name: "greet"}, func(ctx context.Context, extra *pmcp.RequestHandlerExtra, p *pmcp.GetPromptParams) (*pmcp.GetPromptResult, error) {
		return &pmcp.GetPromptResult{Messages: []*pmcp.PromptMessage{{Role: "user", Content: pmcp.Text("hi")}}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	uh := pmcp.NewStreamableHTTPHandler(up, pmcp.StreamableHTTPOptions{})
	uts := httptest.NewServer(uh)
	t.Cleanup(func() {
		_ = uh.Close()
		uts.Close()
	})

	tel := newTelemetry(t)
	p, err := proxy.New(proxy.Options{
		Prefix:    true,
		Upstreams: []proxy.Upstream{{Name: "up", Dial: proxy.HTTP(uts.URL, pmcp.HTTPClientOptions{})}},
		Server:    pmcp.ServerOptions{Middleware: []pmcp.Middleware{pmcpotel.ServerMiddleware(tel.opts)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ph := pmcp.NewStreamableHTTPHandler(p.Server(), pmcp.StreamableHTTPOptions{})
	pts := httptest.NewServer(ph)
	t.Cleanup(func() {
		_ = ph.Close()
		pts.Close()
		_ = p.Close()
	})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
		cs := connect(t, pts.URL, pmcp.ClientOptions{Era: era})
		if _, err := cs.ListTools(ctx, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.ListPrompts(ctx, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CallTool(ctx, "up_echo", map[string]any{"text": "x"}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.GetPrompt(ctx, "up_greet", nil); err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			n := fmt.Sprintf("up_nope-%d", i)
			if _, err := cs.CallTool(ctx, n, nil); err == nil {
				t.Fatalf("%s succeeded", n)
			}
			if _, err := cs.GetPrompt(ctx, n, nil); err == nil {
				t.Fatalf("%s succeeded", n)
			}
		}
		_ = cs.Close()
	}
	_, values := serverSeries(t, tel)
	want := map[string][]string{
		string(pmcpotel.KeyToolName):   {"up_echo", "_OTHER"},
		string(pmcpotel.KeyPromptName): {"up_greet", "_OTHER"},
	}
	for k, vs := range want {
		got := values[attribute.Key(k)]
		if len(got) != len(vs) {
			t.Errorf("%s values %v, want %v", k, got, vs)
		}
		for _, v := range vs {
			if !got[v] {
				t.Errorf("%s values %v lack %q", k, got, v)
			}
		}
	}
}
