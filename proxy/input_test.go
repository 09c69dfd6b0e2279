package proxy

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
)

// TestBridgeManyParkedRounds: more modern requests than a connection
// serves at once (pmcp.DefaultMaxConcurrentRequests) park on the shared
// upstream's elicitation, and neither they nor another client's echo
// freeze: every one parks, the echo is answered meanwhile, and all
// complete once their client answers. Both upstream eras and transports,
// both downstream transports.
func TestBridgeManyParkedRounds(t *testing.T) {
	const n = pmcp.DefaultMaxConcurrentRequests + 8
	for _, upEra := range []pmcp.Era{pmcp.EraLegacy, pmcp.EraModern} {
		for _, down := range []string{"stream", "http"} {
			for _, upT := range []string{"stream", "http"} {
				t.Run(upEra.String()+"-upstream/down-"+down+"/up-"+upT, func(t *testing.T) {
					srv, _ := newUpstream(t, upEra, "u")
					var wg sync.WaitGroup
					dial := memDial(srv, &wg)
					if upT == "http" {
						dial = httpDial(t, srv)
					}
					p := newProxy(t, Options{Upstreams: []Upstream{{Dial: dial}}}, &wg)
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					release := make(chan struct{})
					var once sync.Once
					releaseAll := func() { once.Do(func() { close(release) }) }
					asked := make(chan struct{}, n)
					parkedClient := downstream(t, p, down, pmcp.ClientOptions{Era: pmcp.EraModern, Elicitation: func(ctx context.Context, ep *pmcp.ElicitParams) (*pmcp.ElicitResult, error) {
						if ep.Message == "your name?" {
							asked <- struct{}{}
							select {
							case <-release:
							case <-ctx.Done():
								return nil, ctx.Err()
							}
						}
						return answerer(ctx, ep)
					}})
					errc := make(chan error, n)
					for range n {
						go func() {
							res, err := parkedClient.CallTool(ctx, "ask", nil)
							if err == nil && resultText(t, res) != "u: hello Ada (happy)" {
								err = errUnexpected(resultText(t, res))
							}
							errc <- err
						}()
					}
					defer releaseAll() // on failure too: no client handler stays blocked
					for i := range n {
						select {
						case <-asked:
						case err := <-errc:
							t.Fatalf("after %d parked rounds a call ended: %v", i, err)
						case <-time.After(10 * time.Second):
							t.Fatalf("only %d of %d rounds parked: the bridge stopped", i, n)
						}
					}
					other := downstream(t, p, down, pmcp.ClientOptions{Era: pmcp.EraModern})
					ectx, ecancel := context.WithTimeout(ctx, 10*time.Second)
					defer ecancel()
					res, err := other.CallTool(ectx, "echo", nil)
					if err != nil {
						t.Fatalf("echo with %d rounds parked: %v", n, err)
					}
					if got := resultText(t, res); got != "u: echo" {
						t.Fatalf("echo %q", got)
					}
					releaseAll()
					for range n {
						select {
						case err := <-errc:
							// A legacy upstream's questions carry no link to
							// their call, so with many calls at once a
							// round may carry another call's question, and
							// a call may run out of rounds; none may hang.
							if err != nil && upEra == pmcp.EraModern {
								t.Fatal(err)
							}
						case <-ctx.Done():
							t.Fatal("a parked call never completed")
						}
					}
				})
			}
		}
	}
}

type errUnexpected string

func (e errUnexpected) Error() string { return "unexpected result " + string(e) }
