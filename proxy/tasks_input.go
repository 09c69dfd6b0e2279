package proxy

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// Input of a 2025-11-25 upstream's task for a 2026-07-28 client. The
// upstream asks on the client's blocking tasks/result (its requests tagged
// with the related-task _meta); the modern client expects the questions as
// the task's inputRequests on tasks/get and answers with tasks/update. So
// when tasks/get finds such a task input_required, a pump waits on the
// upstream's tasks/result in a job; each request the upstream sends on it
// is parked like a bridged round's and shown on tasks/get until
// tasks/update answers it. Pumps count against Options.MaxParked too.

// taskPump is the waiting tasks/result of one upstream task. The requests
// it receives are parked (Proxy.park: bounded by Options.MaxParked and
// Options.ParkTimeout, after which the request fails and the pump ends);
// their parking ids are the keys of the task's inputRequests.
type taskPump struct {
	j *job

	mu      sync.Mutex
	pending map[string]*pmcp.InputRequest // parking id -> request
	// arrived is closed (and replaced) when a request arrives.
	arrived chan struct{}
}

// pumpRound marks the jobs of pumps: only requests related to their task
// are theirs (jobFor passes them over otherwise).
var pumpRound = &round{}

type pumpKey struct {
	sl *slot
	id string // the upstream's task id
}

// pumps are the Proxy's task pumps (see taskPump).
type pumps struct {
	mu sync.Mutex
	m  map[pumpKey]*taskPump
}

// relatedTaskKey carries, in the ctx of an upstream's request for input,
// the task the request says it belongs to (the related-task _meta).
type relatedTaskKey struct{}

// withRelatedTask returns ctx naming the task meta relates the request to.
func withRelatedTask(ctx context.Context, meta pmcp.Meta) context.Context {
	rt, ok := meta[pmcp.MetaRelatedTask].(map[string]any)
	if !ok {
		return ctx
	}
	if id, ok := rt["taskId"].(string); ok && id != "" {
		return context.WithValue(ctx, relatedTaskKey{}, id)
	}
	return ctx
}

// pumpJob returns the job of the pump of the task named in ctx, if any.
func (p *Proxy) pumpJob(ctx context.Context, sl *slot) *job {
	id, ok := ctx.Value(relatedTaskKey{}).(string)
	if !ok {
		return nil
	}
	p.pumps.mu.Lock()
	defer p.pumps.mu.Unlock()
	if tp := p.pumps.m[pumpKey{sl, id}]; tp != nil {
		return tp.j
	}
	return nil
}

// firstAskWait bounds how long a tasks/get that started a pump waits for
// the upstream's first request, so that the client sees it at once.
const firstAskWait = 2 * time.Second

// legacyTaskInput puts the requests for input of a 2025-11-25 upstream's
// input_required task on st (as inputRequests), starting its pump.
func (p *Proxy) legacyTaskInput(ctx context.Context, sl *slot, ct *pmcp.ClientTask, st *pmcp.DetailedTask) {
	tp, fresh := p.pump(sl, ct)
	if tp == nil {
		return
	}
	tp.mu.Lock()
	arrived := tp.arrived
	n := len(tp.pending)
	tp.mu.Unlock()
	if fresh && n == 0 {
		t := time.NewTimer(firstAskWait)
		select {
		case <-arrived:
		case <-tp.j.done:
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	tp.mu.Lock()
	defer tp.mu.Unlock()
	for k, r := range tp.pending {
		raw, err := pmcp.Marshal(r)
		if err != nil {
			continue
		}
		if st.InputRequests == nil {
			st.InputRequests = make(map[string]jsontext.Value, len(tp.pending))
		}
		st.InputRequests[k] = raw
	}
}

// pump returns the pump of the upstream task, starting one (fresh) when
// there is none.
func (p *Proxy) pump(sl *slot, ct *pmcp.ClientTask) (*taskPump, bool) {
	key := pumpKey{sl, ct.ID()}
	p.pumps.mu.Lock()
	defer p.pumps.mu.Unlock()
	if tp := p.pumps.m[key]; tp != nil {
		return tp, false
	}
	p.parked.mu.Lock()
	parked := len(p.parked.m)
	p.parked.mu.Unlock()
	if len(p.pumps.m)+parked >= p.maxParked() {
		p.log.Warn("proxy: too many tasks wait for input; not pumping", "upstream", sl.up.name)
		return nil, false
	}
	tp := &taskPump{pending: make(map[string]*pmcp.InputRequest), arrived: make(chan struct{})}
	j, err := p.startJob(p.base, sl, pumpRound, func(ctx context.Context, _ *job) (pmcp.Result, error) {
		_, err := ct.Wait(ctx, nil) // the outcome is read again by tasks/get
		return nil, err
	})
	if err != nil {
		return nil, false
	}
	tp.j = j
	if p.pumps.m == nil {
		p.pumps.m = make(map[pumpKey]*taskPump)
	}
	p.pumps.m[key] = tp
	p.jobs.Add(1)
	go func() {
		defer p.jobs.Done()
		tp.run(p)
		p.pumps.mu.Lock()
		delete(p.pumps.m, key)
		p.pumps.mu.Unlock()
	}()
	return tp, true
}

// run parks the upstream's requests until the upstream's tasks/result
// answered (or the pump's job was cancelled).
func (tp *taskPump) run(p *Proxy) {
	for {
		select {
		case a := <-tp.j.asks:
			id, err := p.park(tp.j, a)
			if err != nil {
				a.answer(answer{err: err})
				continue
			}
			tp.mu.Lock()
			tp.pending[id] = a.req
			close(tp.arrived)
			tp.arrived = make(chan struct{})
			tp.mu.Unlock()
		case <-tp.j.done:
			tp.mu.Lock()
			ids := tp.pending
			tp.pending = nil
			tp.mu.Unlock()
			for id := range ids {
				if x := p.unpark(id); x != nil {
					x.a.answer(answer{err: ErrUpstreamGone})
				}
			}
			return
		}
	}
}

// take removes the request id from the pump, reporting whether it was one
// of the pump's.
func (tp *taskPump) take(id string) bool {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	_, ok := tp.pending[id]
	delete(tp.pending, id)
	return ok
}

// updateLegacyTask hands a 2026-07-28 client's tasks/update answers to
// the requests the pump of the 2025-11-25 upstream's task holds.
func (p *Proxy) updateLegacyTask(req *pmcp.Request, sl *slot, id string, responses map[string]jsontext.Value) error {
	if len(req.Params) > pmcp.DefaultMaxInputTotalBytes {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("tasks/update params exceed %d bytes", pmcp.DefaultMaxInputTotalBytes)}
	}
	if len(responses) > pmcp.DefaultMaxInputResponses {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("inputResponses has more than %d entries", pmcp.DefaultMaxInputResponses)}
	}
	p.pumps.mu.Lock()
	tp := p.pumps.m[pumpKey{sl, id}]
	p.pumps.mu.Unlock()
	if tp == nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the task is not waiting for input"}
	}
	for id, raw := range responses {
		if !tp.take(id) { // not this task's: left alone
			continue
		}
		if x := p.unpark(id); x != nil {
			x.a.answer(answer{raw: raw})
		}
	}
	return nil
}
