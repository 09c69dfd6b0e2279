package proxy

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
)

// TestAggregateAmbiguousNames: upstream names of which one, joined with
// the separator, begins the other's prefix are refused at start-up: with
// upstream "a" listing tool "b_x" and upstream "a_b" listing tool "x" both
// would be listed as "a_b_x", and a call could reach only one of them.
func TestAggregateAmbiguousNames(t *testing.T) {
	never := func(context.Context, *pmcp.Client, Downstream) (Conn, error) {
		return Conn{}, errors.New("never dialed")
	}
	for _, c := range []struct {
		sep   string
		names []string
		clash string // "" when the names are fine
	}{
		{"", []string{"a", "a_b"}, `"a" and "a_b"`},
		{"_", []string{"a_b", "c", "a"}, `"a_b" and "a"`},
		{"__", []string{"a", "a_"}, `"a" and "a_"`}, // "a___x" is a's "_x" and a_'s "x"
		{"-", []string{"x", "db", "db-ro"}, `"db" and "db-ro"`},
		{"_", []string{"a", "b", "a"}, `"a" is given twice`},
		{".", []string{"a", "a_b"}, ""},
		{"_", []string{"ab", "a", "b_a"}, ""},
		{"_", []string{"a_b", "a_c"}, ""},
	} {
		var ups []Upstream
		for _, n := range c.names {
			ups = append(ups, Upstream{Name: n, Dial: never})
		}
		p, err := New(Options{Upstreams: ups, Separator: c.sep})
		if p != nil {
			_ = p.Close()
		}
		if c.clash == "" {
			if err != nil {
				t.Errorf("%q sep %q: %v", c.names, c.sep, err)
			}
			continue
		}
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), c.clash) {
			t.Errorf("%q sep %q: error %v, want ErrInvalidOptions naming %s", c.names, c.sep, err, c.clash)
		}
	}
}

// dupLists makes a server list every tool and prompt twice, as a buggy
// upstream might.
func dupLists(next pmcp.MethodHandler) pmcp.MethodHandler {
	return func(ctx context.Context, req *pmcp.Request) (pmcp.Result, error) {
		res, err := next(ctx, req)
		switch r := res.(type) {
		case *pmcp.ListToolsResult:
			r.Tools = append(r.Tools, r.Tools...)
		case *pmcp.ListPromptsResult:
			r.Prompts = append(r.Prompts, r.Prompts...)
		}
		return res, err
	}
}

// TestAggregateListsEachNameOnce: whatever the upstreams list, the
// downstream never sees a name (or a resource URI) twice: an upstream
// listing a tool or prompt twice, and two upstreams listing the same
// resource, give one entry each, the first; the log names what was left
// out. Both eras, both downstream transports.
func TestAggregateListsEachNameOnce(t *testing.T) {
	for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
		for _, down := range []string{"stream", "http"} {
			t.Run(era.String()+"/"+down, func(t *testing.T) {
				a, _ := newUpstream(t, pmcp.EraLegacy, "same")
				c, _ := newUpstream(t, pmcp.EraModern, "same")
				b, err := pmcp.NewServer(pmcp.ServerOptions{Name: "dup", Middleware: []pmcp.Middleware{dupLists}})
				if err != nil {
					t.Fatal(err)
				}
				if err := b.AddRawTool(&pmcp.Tool{Name: "x", InputSchema: objectSchema}, func(context.Context, *pmcp.RequestHandlerExtra, *pmcp.CallToolParams) (*pmcp.CallToolResult, error) {
					return text("b: x"), nil
				}); err != nil {
					t.Fatal(err)
				}
				if err := b.AddPrompt(&pmcp.Prompt{Name: "p"}, func(context.Context, *pmcp.RequestHandlerExtra, *pmcp.GetPromptParams) (*pmcp.GetPromptResult, error) {
					return &pmcp.GetPromptResult{Messages: []*pmcp.PromptMessage{{Role: "user", Content: pmcp.Text("b: p")}}}, nil
				}); err != nil {
					t.Fatal(err)
				}
				logs := &syncBuffer{}
				log := slog.New(slog.NewTextHandler(logs, nil))
				var wg sync.WaitGroup
				p := newProxy(t, Options{Logger: log, Upstreams: []Upstream{
					{Name: "a", Dial: memDial(a, &wg)}, {Name: "b", Dial: memDial(b, &wg)}, {Name: "c", Dial: memDial(c, &wg)},
				}}, &wg)
				cs := downstream(t, p, down, pmcp.ClientOptions{Era: era})
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				tools, err := cs.AllTools(ctx)
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, tl := range tools {
					names = append(names, tl.Name)
				}
				if n := countOf(names, "b_x"); n != 1 {
					t.Errorf("tools list b_x %d times: %q", n, names)
				}
				prompts, err := cs.AllPrompts(ctx)
				if err != nil {
					t.Fatal(err)
				}
				names = names[:0]
				for _, pr := range prompts {
					names = append(names, pr.Name)
				}
				if !slices.Equal(names, []string{"a_greet", "b_p", "c_greet"}) {
					t.Errorf("prompts %q", names)
				}
				res, err := cs.AllResources(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if len(res) != 1 || res[0].URI != "test://same/r" {
					t.Errorf("resources %+v, want test://same/r once", res)
				}
				tpl, err := cs.AllResourceTemplates(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if len(tpl) != 1 {
					t.Errorf("templates %+v, want one", tpl)
				}
				if r, err := cs.CallTool(ctx, "b_x", nil); err != nil || resultText(t, r) != "b: x" {
					t.Errorf("b_x: %v", err)
				}
				l := logs.String()
				for _, want := range []string{`name=b_x`, `name=test://same/r`} {
					if !strings.Contains(l, want) {
						t.Errorf("log lacks %s:\n%s", want, l)
					}
				}
			})
		}
	}
}

func countOf(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}
