package gateway

import (
	"context"
	"testing"

	"github.com/gopmcp/pmcp"
)

// The gateway's own cost per request: its middleware around a handler
// that answers at once, with the policy `pmcp gateway`'s bench leg
// configures (everyone may call every tool) and no audit. The budget is
// exact: a change that allocates more per request fails here.
//
//	go test -count=1 -run AllocBudget ./gateway
func gatewayCallRig(t testing.TB) (pmcp.MethodHandler, *pmcp.Request) {
	g, err := New(Options{
		Config:    Config{Policies: []Policy{{Match: Match{}, AllowTools: []string{"*"}}}},
		Upstreams: []string{"bare"},
	})
	if err != nil {
		t.Fatal(err)
	}
	res := &pmcp.CallToolResult{Content: []pmcp.Content{pmcp.Text("hello")}}
	h := g.Middleware()(func(ctx context.Context, req *pmcp.Request) (pmcp.Result, error) { return res, nil })
	req := &pmcp.Request{Method: pmcp.MethodToolsCall, Name: "bare_echo", Params: []byte(`{"name":"bare_echo","arguments":{"text":"hello"}}`), Extra: &pmcp.RequestHandlerExtra{}}
	return h, req
}

func TestAllocBudgetGatewayCall(t *testing.T) {
	h, req := gatewayCallRig(t)
	ctx := context.Background()
	var err error
	var res pmcp.Result
	f := func() { res, err = h(ctx, req) }
	f()
	got := testing.AllocsPerRun(200, f)
	if err != nil || res == nil {
		t.Fatalf("the call answered %v, %v", res, err)
	}
	if raceEnabled {
		return
	}
	const budget = 1 // the context value of the grants
	t.Logf("gateway middleware, tools/call: %.1f allocations per request (budget %d)", got, budget)
	if got > budget {
		t.Errorf("gateway middleware, tools/call: %.1f allocations per request, budget %d", got, budget)
	}
}

func BenchmarkGatewayCall(b *testing.B) {
	h, req := gatewayCallRig(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}
