package proxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/internal/rpcconn"
	"github.com/gopmcp/pmcp/jsonrpc"
	"github.com/gopmcp/pmcp/reqstate"
)

// A job is one downstream tools/call, prompts/get or resources/read
// forwarded upstream. The upstream call of a modern downstream request
// runs in its own goroutine, and the request (each round of it) waits
// for its outcome and answers the upstream's requests for input
// meanwhile; a legacy downstream request runs the call itself
// (runLegacy), and its requests for input are answered by the goroutines
// that ask:
//
//   - legacy downstream: with real requests to the downstream client
//     (RequestHandlerExtra.Peer);
//   - modern downstream: by ending the round with an input_required result
//     whose sealed requestState names the parked job, and resuming it when
//     the client retries with inputResponses.
//
// The upstream's era does not matter: a modern upstream's input_required
// rounds and a legacy upstream's server-to-client requests both reach the
// client handlers of the slot, which call job.ask.
type job struct {
	// ctx is jc: the call's context, which carries the job (jobKey).
	ctx  context.Context
	jc   jobCtx
	stop context.CancelCauseFunc
	// sl and call are what the pool's goroutine runs (Proxy.runJob).
	sl   *slot
	call func(ctx context.Context, j *job) (pmcp.Result, error)
	asks chan *ask
	done chan struct{}
	res  pmcp.Result
	err  error
	// round is the downstream request currently waiting for the job: its
	// progress and log sinks. Nil while parked.
	round atomic.Pointer[round]
	// asking counts the requests for input the job is waiting on.
	asking atomic.Int32
	// ended is set by Proxy.endJob, under Proxy.parked.mu: no request
	// parks on the job any more.
	ended bool
	// direct marks a job run on its legacy downstream request's own
	// goroutine (Proxy.runLegacy), which cannot take requests for input
	// meanwhile: they are answered by the goroutines that ask (d).
	direct bool
	d      directAsks
}

// directAsks answers the requests for input of a job run by runLegacy,
// each on the goroutine that asks, through the downstream request's peer:
// one at a time (turn), as a driver would, and never after the call ended
// (ended); the downstream request waits for those in flight (answers).
type directAsks struct {
	ctx     context.Context // the downstream request's
	peer    pmcp.Peer
	mu      sync.Mutex
	turn    chan struct{} // capacity 1; made by the first request
	ended   bool
	answers sync.WaitGroup
}

type jobKey struct{}

// jobCtx is a job's context: its cancelable context, whose value for
// jobKey is the job. Kept in the job, it costs no allocation of its own
// (context.WithValue did, on every call).
type jobCtx struct {
	context.Context
	j *job
}

func (c *jobCtx) Value(key any) any {
	if _, ok := key.(jobKey); ok {
		return c.j
	}
	return c.Context.Value(key)
}

// cancel ends the job's call.
func (j *job) cancel() { j.stop(context.Canceled) }

// round is what the current downstream request offers the upstream call.
type round struct {
	progress pmcp.ProgressReporter
	log      pmcp.LogSink
	level    pmcp.LoggingLevel
}

type ask struct {
	req *pmcp.InputRequest
	// guessed: the request carries no link to its call (a legacy
	// upstream's), so slot.jobFor chose the job by guess; when that job
	// ends before the request is answered, the request is routed again.
	guessed bool
	reply   chan answer // buffered, 1: see answer
	once    sync.Once
}

// answer replies to the request; only the first reply counts, so a request
// that was routed away from a parked round (Proxy.endJob) may still be
// answered there by a client coming back late, without effect.
func (a *ask) answer(x answer) {
	a.once.Do(func() { a.reply <- x })
}

type answer struct {
	raw jsontext.Value
	err error
}

// errCallEnded is the reply to a request for input routed to a call that
// ended before answering it (see Proxy.endJob); slot.askAs routes a
// guessed one again.
var errCallEnded = errors.New("proxy: the downstream call this request for input was routed to ended before answering it")

// ask hands req to the downstream request waiting for the job and waits
// for the answer; handed reports whether the job took req and answered it
// (false when the job ended first). The caller counted req in j.asking
// (see slot.jobFor); guessed is whether it chose j by guess.
func (j *job) ask(ctx context.Context, req *pmcp.InputRequest, guessed bool) (_ jsontext.Value, handed bool, _ error) {
	defer j.asking.Add(-1)
	if j.direct {
		return j.askDirect(ctx, req)
	}
	a := &ask{req: req, guessed: guessed, reply: make(chan answer, 1)}
	select {
	case j.asks <- a:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	case <-j.ctx.Done():
		return nil, false, context.Cause(j.ctx)
	}
	// Handed over, the question waits for a downstream client (a modern
	// one may take minutes to come back while the round is parked): a
	// legacy upstream's request gives its slot of the upstream connection
	// back meanwhile, or a few parked rounds would stop that connection
	// from reading (the answers to every other call on it included). The
	// questions waiting this way are bounded by the jobs' drivers, each
	// taking one at a time, and by Options.MaxParked.
	defer rpcconn.Wait(ctx)()
	// Every driver that took a replies to it (at once, or when its parked
	// round is resumed, times out or the proxy closes), and the job's end
	// replies errCallEnded to a guessed request still parked on it (see
	// Proxy.endJob), so the job's end is not waited for here.
	select {
	case r := <-a.reply:
		if errors.Is(r.err, errCallEnded) {
			return nil, false, r.err
		}
		return r.raw, true, r.err
	case <-ctx.Done():
		return nil, true, ctx.Err()
	}
}

// askDirect is ask for a job of runLegacy: the downstream client is asked
// from here. Its answer may be abandoned by either side: the upstream's
// request (ctx) or the downstream one ending.
func (j *job) askDirect(ctx context.Context, req *pmcp.InputRequest) (_ jsontext.Value, handed bool, _ error) {
	d := &j.d
	d.mu.Lock()
	if d.ended {
		d.mu.Unlock()
		return nil, false, errCallEnded
	}
	if d.turn == nil {
		d.turn = make(chan struct{}, 1)
	}
	turn := d.turn
	d.answers.Add(1)
	d.mu.Unlock()
	defer d.answers.Done()
	// Waiting for the turn and for the downstream client gives the slot of
	// the upstream connection back, as ask does.
	defer rpcconn.Wait(ctx)()
	select {
	case turn <- struct{}{}:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	case <-j.ctx.Done():
		return nil, false, context.Cause(j.ctx)
	}
	defer func() { <-turn }()
	actx, cancel := context.WithCancel(d.ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	x := legacyAnswer(actx, d.peer, req)
	if x.err != nil && ctx.Err() != nil {
		return nil, true, ctx.Err()
	}
	return x.raw, true, x.err
}

// runLegacy runs call upstream on the legacy downstream request's own
// goroutine, which would only wait for it otherwise: no goroutine of the
// pool, no hand-over in either direction. The upstream's requests for
// input are answered through peer as they come (askDirect).
func (p *Proxy) runLegacy(ctx context.Context, sl *slot, r *round, peer pmcp.Peer, call func(ctx context.Context, j *job) (pmcp.Result, error)) (pmcp.Result, error) {
	p.mu.Lock()
	if p.closed { // Close waits for the jobs: none may start after it
		p.mu.Unlock()
		return nil, fmt.Errorf("%w: the proxy is closed", ErrUpstreamGone)
	}
	p.jobs.Add(1)
	p.mu.Unlock()
	defer p.jobs.Done()
	jctx, stop := context.WithCancelCause(ctx)
	j := &job{stop: stop, sl: sl, direct: true}
	j.d.ctx, j.d.peer = ctx, peer
	j.jc = jobCtx{Context: jctx, j: j}
	j.ctx = &j.jc
	j.round.Store(r)
	sl.addJob(j)
	res, err := call(j.ctx, j)
	sl.removeJob(j) // from now on no request may be routed here
	p.endJob(j)
	j.d.mu.Lock()
	j.d.ended = true
	j.d.mu.Unlock()
	j.d.answers.Wait() // the downstream request ends after its answers
	stop(nil)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return res, err
}

// startJob runs call upstream. parent is the ctx the call runs under: the
// downstream request's in the legacy era, the proxy's in the modern era
// (the call outlives the round that started it).
func (p *Proxy) startJob(parent context.Context, sl *slot, r *round, call func(ctx context.Context, j *job) (pmcp.Result, error)) (*job, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed { // Close waits for the jobs: none may start after it
		return nil, fmt.Errorf("%w: the proxy is closed", ErrUpstreamGone)
	}
	ctx, stop := context.WithCancelCause(parent)
	j := &job{stop: stop, sl: sl, call: call, asks: make(chan *ask), done: make(chan struct{})}
	j.jc = jobCtx{Context: ctx, j: j}
	j.ctx = &j.jc
	j.round.Store(r)
	sl.addJob(j)
	p.jobs.Add(1)
	p.workers.Go(j)
	return j, nil
}

// runJob runs a job's call on a goroutine of the pool.
func (p *Proxy) runJob(j *job) {
	defer p.jobs.Done()
	j.res, j.err = j.call(j.ctx, j)
	j.call = nil
	// Leave the slot first: from now on no request may be routed here.
	j.sl.removeJob(j)
	p.endJob(j)
	close(j.done)
	j.stop(nil)
}

// endJob hands back the guessed requests for input still parked on the
// rounds of j, whose call has ended: such a request belongs to another
// call, which waits for it, while j's client need not come back for j's
// result (it may be out of rounds, or gone). Each is answered
// errCallEnded, so slot.askAs routes it to a call still in flight. The
// entry stays parked: j's client, coming back, resumes it to get j's
// result, its late answer going nowhere (ask.answer). From now on park
// refuses j, so no guessed request waits on an ended call.
func (p *Proxy) endJob(j *job) {
	pk := &p.parked
	pk.mu.Lock()
	defer pk.mu.Unlock()
	j.ended = true
	for _, e := range pk.m {
		if e.j == j && e.a.guessed {
			e.a.answer(answer{err: errCallEnded})
		}
	}
}

// driveLegacy waits for the job, answering its requests for input through
// the downstream client's peer.
func (p *Proxy) driveLegacy(ctx context.Context, extra *pmcp.RequestHandlerExtra, j *job) (pmcp.Result, error) {
	for {
		select {
		case <-j.done:
			return j.res, j.err
		case a := <-j.asks:
			a.answer(legacyAnswer(ctx, extra.Peer, a.req))
		case <-ctx.Done():
			j.cancel()
			<-j.done
			return nil, ctx.Err()
		}
	}
}

func legacyAnswer(ctx context.Context, peer pmcp.Peer, req *pmcp.InputRequest) answer {
	if peer == nil {
		return answer{err: pmcp.ErrNoPeer}
	}
	var (
		v   any
		err error
	)
	switch p := req.Params.(type) {
	case *pmcp.ElicitParams:
		v, err = peer.Elicit(ctx, p)
	case *pmcp.CreateMessageParams:
		v, err = peer.Sample(ctx, p)
	default:
		v, err = peer.ListRoots(ctx)
	}
	if err != nil {
		return answer{err: err}
	}
	raw, err := pmcp.Marshal(v)
	return answer{raw: raw, err: err}
}

// inputKey is the key of the one input request of a bridged round.
const inputKey = "upstream"

// continuation is what the sealed requestState of a bridged round holds.
type continuation struct {
	Job string `json:"job"`
}

type parked struct {
	j     *job
	a     *ask
	timer *time.Timer
}

// parking holds the jobs of modern downstream requests between rounds,
// bounded in number (Options.MaxParked) and time (Options.ParkTimeout).
type parking struct {
	mu     sync.Mutex
	m      map[string]*parked
	closed bool
}

// ErrTooManyParked is returned (as -32603) when Options.MaxParked bridged
// requests already wait for their client's input.
var ErrTooManyParked = errors.New("proxy: too many requests are waiting for input")

func (p *Proxy) park(j *job, a *ask) (string, error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	pk := &p.parked
	pk.mu.Lock()
	defer pk.mu.Unlock()
	if pk.closed {
		return "", ErrUpstreamGone
	}
	if j.ended {
		return "", errCallEnded
	}
	if len(pk.m) >= p.maxParked() {
		return "", ErrTooManyParked
	}
	if pk.m == nil {
		pk.m = make(map[string]*parked)
	}
	e := &parked{j: j, a: a}
	e.timer = time.AfterFunc(p.parkTimeout(), func() {
		if x := p.unpark(id); x != nil {
			x.a.answer(answer{err: errors.New("proxy: the downstream client did not answer in time")})
			x.j.cancel()
		}
	})
	pk.m[id] = e
	return id, nil
}

func (p *Proxy) unpark(id string) *parked {
	pk := &p.parked
	pk.mu.Lock()
	defer pk.mu.Unlock()
	e := pk.m[id]
	if e != nil {
		delete(pk.m, id)
		e.timer.Stop()
	}
	return e
}

// closeParked cancels every parked job (Proxy.Close).
func (p *Proxy) closeParked() {
	pk := &p.parked
	pk.mu.Lock()
	pk.closed = true
	m := pk.m
	pk.m = nil
	pk.mu.Unlock()
	for _, e := range m {
		e.timer.Stop()
		e.a.answer(answer{err: ErrUpstreamGone})
		e.j.cancel()
	}
}

// mrtrParams are the multi-round-trip members of a modern request.
type mrtrParams struct {
	InputResponses map[string]jsontext.Value `json:"inputResponses"`
	RequestState   *string                   `json:"requestState"`
}

// binding binds a bridged requestState to the caller, the method and the
// request's target and arguments.
func binding(req *pmcp.Request, target string, args jsontext.Value) reqstate.Binding {
	return reqstate.Binding{Principal: principal(req.Extra), Method: req.Method, ParamsDigest: reqstate.DigestParams([]byte(target), canonical(args))}
}

// principal names the authenticated caller a requestState is bound to, as
// the server does for its own (RequestHandlerExtra.Principal).
func principal(e *pmcp.RequestHandlerExtra) string {
	id, _ := e.Principal()
	return id
}

// lazyBinding is a request's binding, computed when first needed: only a
// round that opens or seals a requestState needs it, and the digest
// decodes and re-encodes the arguments.
type lazyBinding struct {
	req    *pmcp.Request
	target string
	args   jsontext.Value
	done   bool
	b      reqstate.Binding
}

func (l *lazyBinding) get() reqstate.Binding {
	if !l.done {
		l.b, l.done = binding(l.req, l.target, l.args), true
	}
	return l.b
}

func canonical(v jsontext.Value) []byte {
	if len(v) == 0 {
		return nil
	}
	var x any
	if json.Unmarshal(v, &x) != nil {
		return v
	}
	b, err := json.Marshal(x, json.Deterministic(true))
	if err != nil {
		return v
	}
	return b
}

func invalidState() error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid requestState: it was altered, expired, or belongs to another request"}
}

// resume opens a retry's requestState and hands its answer to the parked
// job, after making r the round the job reports to; it returns the job,
// now waiting for this round.
func (p *Proxy) resume(b reqstate.Binding, mp *mrtrParams, r *round) (*job, error) {
	st, err := p.sealer.Open(b, *mp.RequestState)
	if err != nil {
		return nil, invalidState()
	}
	var c continuation
	if pmcp.Unmarshal(st.Continuation, &c) != nil || c.Job == "" {
		return nil, invalidState()
	}
	raw, ok := mp.InputResponses[inputKey]
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("missing inputResponses[%q]", inputKey)}
	}
	if len(raw) > pmcp.DefaultMaxInputResponseBytes {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("inputResponses[%q] exceeds %d bytes", inputKey, pmcp.DefaultMaxInputResponseBytes)}
	}
	e := p.unpark(c.Job)
	if e == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the bridged request is no longer waiting for input (answered already, timed out, or the proxy restarted)"}
	}
	e.j.round.Store(r) // before the upstream can go on and report
	e.a.answer(answer{raw: raw})
	return e.j, nil
}

// driveModern waits for the job; the first request for input ends the
// round with an input_required result (the job is parked).
func (p *Proxy) driveModern(ctx context.Context, req *pmcp.Request, lb *lazyBinding, j *job) (pmcp.Result, error) {
	caps := req.Extra.ClientCapabilities()
	for {
		select {
		case <-j.done:
			return j.res, j.err
		case a := <-j.asks:
			if err := missingCapability(caps, a.req); err != nil {
				a.answer(answer{err: err})
				continue
			}
			id, err := p.park(j, a)
			if errors.Is(err, errCallEnded) {
				a.answer(answer{err: err}) // routed again; j.done is next
				continue
			}
			if err != nil {
				a.answer(answer{err: err})
				j.cancel()
				<-j.done
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
			}
			j.round.Store(nil)
			b := lb.get()
			cont, _ := pmcp.Marshal(continuation{Job: id})
			round := 0
			if req.Extra != nil {
				if r, ok := roundOf(p, b, req); ok {
					round = r + 1
				}
			}
			if limit := p.maxRounds(); round >= limit {
				// The call ends (endJob routes a guessed request on to
				// a call that may be its own); its own request fails.
				j.cancel()
				<-j.done
				if x := p.unpark(id); x != nil {
					x.a.answer(answer{err: errors.New("proxy: too many input rounds")})
				}
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("too many input rounds (limit %d)", limit)}
			}
			tok, err := p.sealer.Seal(b, reqstate.State{Round: uint8(round), Continuation: cont})
			if err != nil {
				if x := p.unpark(id); x != nil {
					x.a.answer(answer{err: err})
				}
				j.cancel()
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "cannot seal request state: " + err.Error()}
			}
			return &pmcp.InputRequiredResult{InputRequests: map[string]*pmcp.InputRequest{inputKey: a.req}, RequestState: tok}, nil
		case <-ctx.Done():
			j.cancel()
			<-j.done
			return nil, ctx.Err()
		}
	}
}

// roundOf reads the round of the retry's requestState (0 on a first call).
func roundOf(p *Proxy, b reqstate.Binding, req *pmcp.Request) (int, bool) {
	var mp mrtrParams
	if pmcp.Unmarshal(req.Params, &mp) != nil || mp.RequestState == nil {
		return 0, false
	}
	st, err := p.sealer.Open(b, *mp.RequestState)
	if err != nil {
		return 0, false
	}
	return int(st.Round), true
}

// missingCapability is the capability check of an input request against
// what the downstream client declared.
func missingCapability(caps *pmcp.ClientCapabilities, r *pmcp.InputRequest) error {
	if caps == nil {
		caps = &pmcp.ClientCapabilities{}
	}
	switch p := r.Params.(type) {
	case *pmcp.ElicitParams:
		switch {
		case p.Mode == "url" && !caps.Elicitation.SupportsURL():
			return &pmcp.MissingCapabilityError{Required: map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}}
		case caps.Elicitation == nil:
			return &pmcp.MissingCapabilityError{Required: map[string]any{"elicitation": map[string]any{}}}
		}
	case *pmcp.CreateMessageParams:
		if caps.Sampling == nil {
			return &pmcp.MissingCapabilityError{Required: map[string]any{"sampling": map[string]any{}}}
		}
	default:
		if caps.Roots == nil {
			return &pmcp.MissingCapabilityError{Required: map[string]any{"roots": map[string]any{}}}
		}
	}
	return nil
}
