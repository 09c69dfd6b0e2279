package proxy

import (
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// countDials counts the dials of d.
func countDials(d DialFunc, n *atomic.Int32) DialFunc {
	return func(ctx context.Context, c *pmcp.Client, ds Downstream) (Conn, error) {
		n.Add(1)
		return d(ctx, c, ds)
	}
}

// TestSlotGivesUp: a child that always exits at once is started at most
// 1+MaxRestarts times however many requests come; once the slot gave up,
// every request fails at once with -32603 naming the upstream. Both eras
// (a legacy downstream session has its own slot, modern requests share
// one), both downstream transports.
func TestSlotGivesUp(t *testing.T) {
	for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
		for _, down := range []string{"stream", "http"} {
			t.Run(era.String()+"/"+down, func(t *testing.T) {
				d, err := Command(os.Args[0], nil, CommandOptions{Env: []string{childEnv + "=exit", noRaceExitSleep}})
				if err != nil {
					t.Fatal(err)
				}
				var dials atomic.Int32
				p := newProxy(t, Options{Upstreams: []Upstream{{Name: "child", Dial: countDials(d, &dials)}}, MaxRestarts: 2}, nil)
				cs := downstream(t, p, down, pmcp.ClientOptions{Era: era})
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				for i := 0; i < 12; i++ {
					_, err := cs.CallTool(ctx, "echo", nil)
					var je *jsonrpc.Error
					if !asRPC(err, &je) || je.Code != jsonrpc.CodeInternalError || !strings.Contains(je.Message, `upstream "child"`) {
						t.Fatalf("call %d: %v, want -32603 naming the upstream", i, err)
					}
				}
				if n := dials.Load(); n > 3 {
					t.Fatalf("%d dials for 12 requests, want at most 1+MaxRestarts = 3", n)
				}
			})
		}
	}
}
