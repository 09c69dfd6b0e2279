package proxy

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
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

// guessingUpstream is a 2025-11-25 upstream, whose requests for input
// carry no link to their call, so that the proxy guesses it (slot.jobFor):
// "ask" asks for a name; "hold" closes holding, after asking for a name
// when askFirst, and returns once release is closed.
func guessingUpstream(t *testing.T, askFirst bool) (srv *pmcp.Server, holding, release chan struct{}) {
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "up", Middleware: []pmcp.Middleware{onlyEra(pmcp.EraLegacy)}})
	if err != nil {
		t.Fatal(err)
	}
	holding, release = make(chan struct{}), make(chan struct{})
	ask := func(ctx context.Context, extra *pmcp.RequestHandlerExtra) (string, error) {
		res, err := extra.Peer.Elicit(ctx, &pmcp.ElicitParams{Message: "your name?",
			RequestedSchema: jsontext.Value(`{"type":"object","properties":{"name":{"type":"string"}}}`)})
		if err != nil {
			return "", err
		}
		name, _ := res.Content["name"].(string)
		return name, nil
	}
	add := func(name string, h pmcp.ToolHandler) {
		if err := srv.AddRawTool(&pmcp.Tool{Name: name, InputSchema: objectSchema}, h); err != nil {
			t.Fatal(err)
		}
	}
	add("hold", func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ *pmcp.CallToolParams) (*pmcp.CallToolResult, error) {
		if askFirst {
			if _, err := ask(ctx, extra); err != nil {
				return nil, err
			}
		}
		close(holding)
		select {
		case <-release:
			return text("held"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	add("ask", func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ *pmcp.CallToolParams) (*pmcp.CallToolResult, error) {
		name, err := ask(ctx, extra)
		if err != nil {
			return nil, err
		}
		return text("hello " + name), nil
	})
	return srv, holding, release
}

// outcome is how a call made by callAsync ended: its text or its error.
type outcome struct {
	text string
	err  error
}

func (o outcome) String() string { return fmt.Sprintf("text %q, error %v", o.text, o.err) }

func callAsync(ctx context.Context, cs *pmcp.ClientSession, tool string) chan outcome {
	c := make(chan outcome, 1)
	go func() {
		res, err := cs.CallTool(ctx, tool, nil)
		switch {
		case err != nil:
			c <- outcome{err: err}
		case len(res.Content) != 1:
			c <- outcome{err: fmt.Errorf("result %v: want one content block", res)}
		default:
			tc, _ := res.Content[0].(*pmcp.TextContent)
			if tc == nil {
				c <- outcome{err: fmt.Errorf("content %T, want text", res.Content[0])}
				return
			}
			c <- outcome{text: tc.Text}
		}
	}()
	return c
}

// await waits for the outcome of a call made by callAsync.
func await(ctx context.Context, t *testing.T, c chan outcome, what string) outcome {
	t.Helper()
	select {
	case o := <-c:
		return o
	case <-ctx.Done():
		t.Fatalf("%s never completed", what)
		return outcome{}
	}
}

// startHold calls the guessingUpstream's "hold" on cs and waits until it
// holds upstream.
func startHold(ctx context.Context, t *testing.T, cs *pmcp.ClientSession, holding chan struct{}) chan outcome {
	t.Helper()
	held := callAsync(ctx, cs, "hold")
	select {
	case <-holding:
	case o := <-held:
		t.Fatalf("hold ended early: %v", o)
	case <-ctx.Done():
		t.Fatal("hold never reached the upstream")
	}
	return held
}

// TestBridgeInputRoutedToEndedCall: a 2025-11-25 upstream's request for
// input carries no link to its call, so with two modern calls in flight it
// goes to the older one, "hold", whose client is shown it on an
// input_required round. Then "hold" ends upstream while its client has not
// come back (it may never: out of rounds, or gone). The question belongs to
// the other call, "ask", which waits for it: it must reach "ask"'s client
// at once, not wait Options.ParkTimeout for a client that need not return;
// and "hold"'s client, coming back after all, still gets its result. Both
// transports on both sides.
func TestBridgeInputRoutedToEndedCall(t *testing.T) {
	forEachTransport(t, func(t *testing.T, down string, upDial func(*pmcp.Server, *sync.WaitGroup) DialFunc) {
		srv, holding, release := guessingUpstream(t, false)
		var wg sync.WaitGroup
		p := newProxy(t, Options{Upstreams: []Upstream{{Dial: upDial(srv, &wg)}}}, &wg)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shown, back := make(chan string, 1), make(chan struct{})
		var backOnce sync.Once
		comeBack := func() { backOnce.Do(func() { close(back) }) }
		defer comeBack() // on failure too: no client handler stays blocked
		holder := downstream(t, p, down, pmcp.ClientOptions{Era: pmcp.EraModern, Elicitation: func(ctx context.Context, ep *pmcp.ElicitParams) (*pmcp.ElicitResult, error) {
			shown <- ep.Message
			select {
			case <-back:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return answerer(ctx, ep)
		}})
		asker := downstream(t, p, down, pmcp.ClientOptions{Era: pmcp.EraModern, Elicitation: answerer})

		held := startHold(ctx, t, holder, holding) // the older call
		asked := callAsync(ctx, asker, "ask")
		select {
		case m := <-shown: // the misrouting this test is about
			if m != "your name?" {
				t.Fatalf("holder shown %q", m)
			}
		case o := <-asked:
			t.Fatalf("the question went to its own call (%v): the routing under test changed", o)
		case <-ctx.Done():
			t.Fatal("the question reached no client")
		}
		close(release) // "hold" ends upstream; its client is still away
		if o := await(ctx, t, asked, "ask (its question stayed on the round of a call that had ended)"); o.err != nil || o.text != "hello Ada" {
			t.Fatalf("ask: %v", o)
		}
		comeBack()
		if o := await(ctx, t, held, "hold"); o.err != nil || o.text != "held" {
			t.Fatalf("hold: %v", o)
		}
	})
}

// TestBridgeInputRoutedToCallOutOfRounds: as above, but the older call,
// "hold", has used its one input round (Server.MaxInputRounds 1) on its own
// question when the other call's question is routed to it. "hold" fails
// with too many rounds; the question, not its own, must go on to "ask",
// not fail with it.
func TestBridgeInputRoutedToCallOutOfRounds(t *testing.T) {
	forEachTransport(t, func(t *testing.T, down string, upDial func(*pmcp.Server, *sync.WaitGroup) DialFunc) {
		srv, holding, release := guessingUpstream(t, true)
		defer close(release)
		var wg sync.WaitGroup
		p := newProxy(t, Options{Upstreams: []Upstream{{Dial: upDial(srv, &wg)}}, Server: pmcp.ServerOptions{MaxInputRounds: 1}}, &wg)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		holder := downstream(t, p, down, pmcp.ClientOptions{Era: pmcp.EraModern, Elicitation: answerer})
		asker := downstream(t, p, down, pmcp.ClientOptions{Era: pmcp.EraModern, Elicitation: answerer})

		held := startHold(ctx, t, holder, holding) // its one round used
		asked := callAsync(ctx, asker, "ask")
		if o := await(ctx, t, held, "hold"); o.err == nil || !strings.Contains(o.err.Error(), "too many input rounds") {
			t.Fatalf("hold: %v, want too many input rounds", o)
		}
		if o := await(ctx, t, asked, "ask"); o.err != nil || o.text != "hello Ada" {
			t.Fatalf("ask: %v, want its answer: the question failed with the call it was routed to", o)
		}
	})
}
