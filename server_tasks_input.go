package pmcp

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/tasks"
)

// Input inside a task: the task Peer, the 2026-07-28 input rounds through
// the store (inputRequests, tasks/update) and the 2025-11-25 requests sent
// on a waiting tasks/result.

// newKey returns an input key unused by the task so far, close to want.
func (r *taskRunner) newKey(want string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := want
	for k == "" || r.used[k] {
		r.seq++
		k = fmt.Sprintf("%s~%d", want, r.seq)
		if want == "" {
			k = fmt.Sprintf("%s%d", autoKeyPrefix, r.seq)
		}
	}
	r.used[k] = true
	return k
}

// askModern puts reqs on the task (input_required) and waits until every
// one is answered through tasks/update; the answers come back under the
// caller's keys.
func (r *taskRunner) askModern(ctx context.Context, reqs map[string]*InputRequest) (InputResponses, error) {
	store, owner, id := r.ts.store, r.owner, r.taskID()
	keys := make(map[string]string, len(reqs)) // store key -> caller key
	raw := make(map[string]jsontext.Value, len(reqs))
	for k, req := range reqs {
		b, err := Marshal(modernInput(req))
		if err != nil {
			return nil, fmt.Errorf("pmcp: encode input request %q: %w", k, err)
		}
		sk := r.newKey(k)
		keys[sk] = k
		raw[sk] = b
	}
	t, err := store.Update(ctx, owner, id, tasks.Change{Holder: r.ts.replica, To: tasks.StatusInputRequired, InputRequests: raw})
	if err != nil {
		return nil, err
	}
	r.notifyStatus(t)
	w, err := store.Watch(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	for t := range w {
		if t.Status.Terminal() || t.CancelRequested {
			r.mu.Lock()
			r.cancelRequested = true
			r.mu.Unlock()
			r.cancel()
			return nil, context.Canceled
		}
		if len(t.InputResponses) == 0 {
			continue
		}
		all := true
		for sk := range keys {
			if _, ok := t.InputResponses[sk]; !ok {
				all = false
				break
			}
		}
		if !all {
			continue
		}
		out := make(InputResponses, len(keys))
		consume := make([]string, 0, len(keys))
		for sk, k := range keys {
			out[k] = t.InputResponses[sk]
			consume = append(consume, sk)
		}
		ch := tasks.Change{Holder: r.ts.replica, ConsumeInputs: consume}
		if t2, err := store.Update(ctx, owner, id, ch); err == nil {
			r.notifyStatus(t2)
		}
		return out, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, errors.New("pmcp: the task ended while waiting for input")
}

func (r *taskRunner) taskID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.id
}

// askLegacy sends a server-to-client request for a 2025-11-25 task: it
// waits for the client's tasks/result on the task and sends the request on
// that request's back-channel, tagged with the related-task _meta, while
// the task shows input_required.
func (r *taskRunner) askLegacy(ctx context.Context, method string, params any, out any) error {
	store, owner, id := r.ts.store, r.owner, r.taskID()
	if t, err := store.Update(ctx, owner, id, tasks.Change{Holder: r.ts.replica, To: tasks.StatusInputRequired}); err == nil {
		r.notifyStatus(t)
	}
	defer func() {
		if t, err := store.Update(context.Background(), owner, id, tasks.Change{Holder: r.ts.replica, To: tasks.StatusWorking}); err == nil {
			r.notifyStatus(t)
		}
	}()
	var call func(ctx context.Context, method string, params any) (jsontext.Value, error)
	for call == nil {
		r.mu.Lock()
		ch := r.waiterCh
		if n := len(r.waiters); n > 0 {
			call = r.waiters[n-1].call // the most recent tasks/result
		}
		r.mu.Unlock()
		if call != nil {
			break
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	tagged, err := withRelatedTask(params, id)
	if err != nil {
		return err
	}
	if d := r.s.peerTimeout(); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	raw, err := call(ctx, method, tagged)
	if err != nil {
		return fmt.Errorf("pmcp: %s: %w", method, err)
	}
	if err := Unmarshal(raw, out); err != nil {
		return fmt.Errorf("pmcp: %s: malformed result from client: %w", method, err)
	}
	return nil
}

// addWaiter registers the back-channel of a legacy tasks/result; the
// returned func removes it.
func (r *taskRunner) addWaiter(call func(ctx context.Context, method string, params any) (jsontext.Value, error)) func() {
	w := &taskWaiter{call: call}
	r.mu.Lock()
	r.waiters = append(r.waiters, w)
	close(r.waiterCh)
	r.waiterCh = make(chan struct{})
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		r.waiters = slices.DeleteFunc(r.waiters, func(x *taskWaiter) bool { return x == w })
		r.mu.Unlock()
	}
}

// withRelatedTask returns params as a JSON object with the related-task
// _meta key added.
func withRelatedTask(params any, id string) (any, error) {
	b, err := Marshal(params)
	if err != nil {
		return nil, err
	}
	var m map[string]jsontext.Value
	if err := Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if m == nil {
		m = make(map[string]jsontext.Value)
	}
	meta := map[string]jsontext.Value{}
	if raw, ok := m["_meta"]; ok {
		_ = Unmarshal(raw, &meta)
	}
	rt, _ := Marshal(RelatedTask{TaskID: id})
	meta[MetaRelatedTask] = rt
	mb, err := Marshal(meta)
	if err != nil {
		return nil, err
	}
	m["_meta"] = mb
	return m, nil
}

// taskPeer is the Peer of a handler running as a task.
type taskPeer struct {
	r     *taskRunner
	extra *RequestHandlerExtra
}

func (p *taskPeer) ask(ctx context.Context, method string, params any, out any) error {
	req := &InputRequest{Method: method, Params: params}
	if err := checkInputCapability(p.extra.ClientCapabilities(), req); err != nil {
		return err
	}
	// Input through the task needs the task.
	if _, err := p.r.commit(); err != nil {
		return err
	}
	if p.r.era != EraModern {
		return p.r.askLegacy(ctx, method, req.Params, out)
	}
	key := p.r.newKey("")
	got, err := p.r.askModern(ctx, map[string]*InputRequest{key: req})
	if err != nil {
		return err
	}
	return Unmarshal(got[key], out)
}

func (p *taskPeer) Sample(ctx context.Context, params *CreateMessageParams) (*CreateMessageResult, error) {
	var v CreateMessageResult
	if err := p.ask(ctx, MethodSamplingCreateMessage, params, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

func (p *taskPeer) ListRoots(ctx context.Context) (*ListRootsResult, error) {
	var v ListRootsResult
	if err := p.ask(ctx, MethodRootsList, &ListRootsParams{}, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

func (p *taskPeer) Elicit(ctx context.Context, params *ElicitParams) (*ElicitResult, error) {
	var v ElicitResult
	if err := p.ask(ctx, MethodElicitationCreate, params, &v); err != nil {
		return nil, err
	}
	if !validAction(v.Action) {
		return nil, fmt.Errorf("pmcp: elicitation/create: client answered with unknown action %q", v.Action)
	}
	return &v, nil
}

// NotifyProgress is dropped: a task's progress is its status.
func (p *taskPeer) NotifyProgress(ctx context.Context, params *ProgressParams) error { return nil }
