package tasks

import (
	"fmt"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// Record is what a store persists for one task: the Task clients see plus
// bookkeeping they never see.
type Record struct {
	Task
	// InputKeysUsed holds every input-request key the task ever issued, so
	// that no key is reused during its life.
	InputKeysUsed map[string]struct{}
	// Rev grows with every write, lease writes included. Stores that keep
	// records in a plain key-value backend use it for their own
	// compare-and-swap; Task.Version is the client-visible counterpart.
	Rev uint64
}

// Clone returns a deep copy of rec.
func (rec Record) Clone() Record {
	c := Record{Task: rec.Task.Clone(), Rev: rec.Rev}
	if rec.InputKeysUsed != nil {
		c.InputKeysUsed = make(map[string]struct{}, len(rec.InputKeysUsed))
		for k := range rec.InputKeysUsed {
			c.InputKeysUsed[k] = struct{}{}
		}
	}
	return c
}

// Rules are the storage-free semantics every store shares: they validate
// and apply creates, changes, deliveries, cancels, leases and sweeps to a
// Record in memory. A store only has to load the record, call one method
// and save the result atomically (for Redis: a Lua compare-and-swap on
// Rev), which keeps the behaviour identical across stores. Every method
// either applies completely or leaves the record untouched.
type Rules struct {
	opts Options
}

// NewRules resolves opts (see Options) and returns the rules for them.
func NewRules(opts Options) (*Rules, error) {
	o, err := opts.resolved()
	if err != nil {
		return nil, err
	}
	return &Rules{opts: o}, nil
}

// Options returns the resolved options.
func (r *Rules) Options() Options { return r.opts }

// Now reads the clock.
func (r *Rules) Now() time.Time { return r.opts.Now() }

// CheckOwner rejects an owner no task may be bound to.
func (r *Rules) CheckOwner(owner string) error {
	if owner == "" {
		return invalid("empty owner: bind tasks to a principal or session")
	}
	if len(owner) > MaxOwnerBytes {
		return invalid("owner longer than %d bytes", MaxOwnerBytes)
	}
	return nil
}

// WellFormedID reports whether id is shaped like an id of this store.
func (r *Rules) WellFormedID(id string) bool { return WellFormedID(r.opts.IDPrefix, id) }

// stamp is now in UTC with millisecond precision, the resolution of the
// wire and of Redis.
func stamp(now time.Time) time.Time { return now.UTC().Truncate(time.Millisecond) }

// ceilMilli rounds t up to a whole millisecond, so that deadlines derived
// from it are never earlier than asked.
func ceilMilli(t time.Time) time.Time {
	t = t.UTC()
	if tr := t.Truncate(time.Millisecond); !tr.Equal(t) {
		return tr.Add(time.Millisecond)
	}
	return t
}

// New validates spec and returns the record of a new working task with the
// given id, created at now.
func (r *Rules) New(owner, id string, spec Spec, now time.Time) (Record, error) {
	if err := r.CheckOwner(owner); err != nil {
		return Record{}, err
	}
	if spec.PollInterval < 0 {
		return Record{}, invalid("negative poll interval")
	}
	if spec.LeaseTTL < 0 {
		return Record{}, invalid("negative lease TTL")
	}
	if err := r.checkMessage(spec.StatusMessage); err != nil {
		return Record{}, err
	}
	if err := checkHolder(spec.Holder, true); err != nil {
		return Record{}, err
	}
	ttl := r.opts.ChooseTTL(spec.TTL)
	poll := spec.PollInterval
	if poll == 0 {
		poll = r.opts.PollInterval
	}
	created := stamp(now)
	t := Task{
		ID:            id,
		Owner:         owner,
		Status:        StatusWorking,
		StatusMessage: spec.StatusMessage,
		CreatedAt:     created,
		UpdatedAt:     created,
		TTL:           ttl,
		PollInterval:  poll,
		Version:       1,
	}
	if ttl > 0 {
		t.ExpiresAt = ceilMilli(now.Add(ttl))
	}
	if spec.Holder != "" {
		t.LeaseHolder = spec.Holder
		t.LeaseExpiry = ceilMilli(now.Add(r.leaseTTL(spec.LeaseTTL)))
	}
	return Record{Task: t, Rev: 1}, nil
}

func (r *Rules) leaseTTL(ttl time.Duration) time.Duration {
	if ttl <= 0 {
		return r.opts.LeaseTTL
	}
	return ttl
}

func (r *Rules) checkMessage(m string) error {
	if len(m) > r.opts.MaxStatusMessageBytes {
		return &LimitError{What: "status message bytes", Limit: r.opts.MaxStatusMessageBytes}
	}
	return nil
}

func checkHolder(h string, mayBeEmpty bool) error {
	if h == "" && !mayBeEmpty {
		return invalid("empty lease holder")
	}
	if len(h) > MaxHolderBytes {
		return invalid("lease holder longer than %d bytes", MaxHolderBytes)
	}
	return nil
}

func checkJSON(what string, v jsontext.Value) error {
	if len(v) == 0 || !v.IsValid() {
		return invalid("%s is not valid JSON", what)
	}
	return nil
}

// checkChange validates what can be validated without the record.
func (r *Rules) checkChange(ch *Change) error {
	if ch.To != "" && !ch.To.Valid() {
		return invalid("unknown status %q", ch.To)
	}
	if ch.From != "" && !ch.From.Valid() {
		return invalid("unknown status %q", ch.From)
	}
	if err := checkHolder(ch.Holder, true); err != nil {
		return err
	}
	if ch.StatusMessage != nil {
		if err := r.checkMessage(*ch.StatusMessage); err != nil {
			return err
		}
	}
	switch {
	case ch.ResultIsError && ch.Result == nil:
		return invalid("ResultIsError needs a result")
	case ch.Result != nil && ch.To != StatusCompleted:
		return invalid("a result needs To: completed")
	case ch.To == StatusCompleted && ch.Result == nil:
		return invalid("completing a task needs a result")
	case ch.Error != nil && ch.To != StatusFailed:
		return invalid("an error needs To: failed")
	case ch.To == StatusFailed && ch.Error == nil:
		return invalid("failing a task needs an error")
	}
	if ch.Result != nil {
		if len(ch.Result) > r.opts.MaxResultBytes {
			return &LimitError{What: "result bytes", Limit: r.opts.MaxResultBytes}
		}
		if err := checkJSON("result", ch.Result); err != nil {
			return err
		}
	}
	if ch.Error != nil {
		if len(ch.Error.Message)+len(ch.Error.Data) > r.opts.MaxResultBytes {
			return &LimitError{What: "result bytes", Limit: r.opts.MaxResultBytes}
		}
		if ch.Error.Data != nil {
			if err := checkJSON("error data", ch.Error.Data); err != nil {
				return err
			}
		}
	}
	for k, v := range ch.InputRequests {
		if k == "" || len(k) > MaxInputKeyBytes {
			return invalid("input request key must be 1 to %d bytes", MaxInputKeyBytes)
		}
		if err := checkJSON(fmt.Sprintf("input request %q", k), v); err != nil {
			return err
		}
	}
	return nil
}

func valuesBytes(m map[string]jsontext.Value) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v)
	}
	return n
}

// Change applies ch to rec at now (see Store.Update).
func (r *Rules) Change(rec *Record, ch Change, now time.Time) error {
	if err := r.checkChange(&ch); err != nil {
		return err
	}
	t := &rec.Task
	if t.Status.Terminal() {
		return ErrTerminal
	}
	if ch.Holder != "" && (t.LeaseHolder != ch.Holder || now.After(t.LeaseExpiry)) {
		return ErrLeaseLost
	}
	if ch.IfVersion != 0 && ch.IfVersion != t.Version {
		return fmt.Errorf("%w: version is %d, not %d", ErrConflict, t.Version, ch.IfVersion)
	}
	if ch.From != "" && ch.From != t.Status {
		return fmt.Errorf("%w: status is %s, not %s", ErrConflict, t.Status, ch.From)
	}
	to := ch.To
	if to == "" {
		to = t.Status
	}
	if !CanTransition(t.Status, to) {
		return fmt.Errorf("%w: %s to %s", ErrInvalidTransition, t.Status, to)
	}
	if len(ch.InputRequests) > 0 {
		if to != StatusInputRequired {
			return fmt.Errorf("%w: input requests need status input_required, not %s", ErrInvalidTransition, to)
		}
		for k := range ch.InputRequests {
			if _, used := rec.InputKeysUsed[k]; used {
				return invalid("input request key %q was already used by this task", k)
			}
		}
		if n := len(t.InputRequests) + len(ch.InputRequests); n > r.opts.MaxPendingInputs {
			return &LimitError{What: "pending input requests", Limit: r.opts.MaxPendingInputs}
		}
		if n := len(rec.InputKeysUsed) + len(ch.InputRequests); n > r.opts.MaxInputKeys {
			return &LimitError{What: "input request keys per task", Limit: r.opts.MaxInputKeys}
		}
		consumed := 0
		for _, k := range ch.ConsumeInputs {
			if v, ok := t.InputResponses[k]; ok {
				consumed += len(k) + len(v)
			}
		}
		n := valuesBytes(t.InputRequests) + valuesBytes(t.InputResponses) - consumed + valuesBytes(ch.InputRequests)
		if n > r.opts.MaxInputBytes {
			return &LimitError{What: "input bytes per task", Limit: r.opts.MaxInputBytes}
		}
	}

	// Everything is checked; apply.
	changed := to != t.Status
	for _, k := range ch.ConsumeInputs {
		if _, ok := t.InputResponses[k]; ok {
			delete(t.InputResponses, k)
			changed = true
		}
	}
	if len(t.InputResponses) == 0 {
		t.InputResponses = nil
	}
	if len(ch.InputRequests) > 0 {
		if t.InputRequests == nil {
			t.InputRequests = make(map[string]jsontext.Value, len(ch.InputRequests))
		}
		if rec.InputKeysUsed == nil {
			rec.InputKeysUsed = make(map[string]struct{}, len(ch.InputRequests))
		}
		for k, v := range ch.InputRequests {
			t.InputRequests[k] = append(jsontext.Value(nil), v...)
			rec.InputKeysUsed[k] = struct{}{}
		}
		changed = true
	}
	if to == StatusWorking && len(t.InputRequests) > 0 {
		// The runner went on without the answers: the requests are
		// withdrawn (their keys stay used).
		t.InputRequests = nil
	}
	if ch.StatusMessage != nil && *ch.StatusMessage != t.StatusMessage {
		t.StatusMessage = *ch.StatusMessage
		changed = true
	}
	t.Status = to
	if to.Terminal() {
		t.InputRequests, t.InputResponses = nil, nil
		t.LeaseHolder, t.LeaseExpiry = "", time.Time{}
		switch to {
		case StatusCompleted:
			t.Result = append(jsontext.Value(nil), ch.Result...)
			t.ResultIsError = ch.ResultIsError
		case StatusFailed:
			t.Error = ch.Error.clone()
		case StatusCancelled:
			t.CancelRequested = true
		}
	}
	if changed {
		r.touch(rec, now)
	}
	return nil
}

// touch records a client-visible change.
func (r *Rules) touch(rec *Record, now time.Time) {
	rec.Version++
	rec.Rev++
	if s := stamp(now); s.After(rec.UpdatedAt) {
		rec.UpdatedAt = s
	}
}

// Deliver applies input responses to rec at now (see Store.DeliverInputs)
// and returns the accepted keys, sorted.
func (r *Rules) Deliver(rec *Record, responses map[string]jsontext.Value, now time.Time) ([]string, error) {
	for k, v := range responses {
		if err := checkJSON(fmt.Sprintf("input response %q", k), v); err != nil {
			return nil, err
		}
	}
	t := &rec.Task
	if t.Status.Terminal() {
		return nil, nil
	}
	var accepted []string
	bytes := valuesBytes(t.InputRequests) + valuesBytes(t.InputResponses)
	for _, k := range sortedKeys(responses) {
		if req, ok := t.InputRequests[k]; ok {
			accepted = append(accepted, k)
			bytes += len(responses[k]) - len(req)
		}
	}
	if len(accepted) == 0 {
		return nil, nil
	}
	if bytes > r.opts.MaxInputBytes {
		return nil, &LimitError{What: "input bytes per task", Limit: r.opts.MaxInputBytes}
	}
	if t.InputResponses == nil {
		t.InputResponses = make(map[string]jsontext.Value, len(accepted))
	}
	for _, k := range accepted {
		delete(t.InputRequests, k)
		t.InputResponses[k] = append(jsontext.Value(nil), responses[k]...)
	}
	if len(t.InputRequests) == 0 {
		t.InputRequests = nil
		if t.Status == StatusInputRequired {
			t.Status = StatusWorking
		}
	}
	r.touch(rec, now)
	return accepted, nil
}

// Cancel records a cancel request on rec at now and reports whether
// anything changed.
func (r *Rules) Cancel(rec *Record, now time.Time) bool {
	if rec.Status.Terminal() || rec.CancelRequested {
		return false
	}
	rec.CancelRequested = true
	r.touch(rec, now)
	return true
}

// Acquire gives holder the lease on rec (see Store.Acquire).
func (r *Rules) Acquire(rec *Record, holder string, ttl time.Duration, now time.Time) (Lease, error) {
	if err := checkHolder(holder, false); err != nil {
		return Lease{}, err
	}
	if rec.Status.Terminal() {
		return Lease{}, ErrTerminal
	}
	if rec.LeaseHolder != "" && rec.LeaseHolder != holder && !now.After(rec.LeaseExpiry) {
		return Lease{}, ErrLeaseHeld
	}
	return r.setLease(rec, holder, ttl, now), nil
}

// Renew extends holder's lease on rec (see Store.Renew).
func (r *Rules) Renew(rec *Record, holder string, ttl time.Duration, now time.Time) (Lease, error) {
	if err := checkHolder(holder, false); err != nil {
		return Lease{}, err
	}
	if rec.Status.Terminal() {
		return Lease{}, ErrTerminal
	}
	if rec.LeaseHolder != holder || now.After(rec.LeaseExpiry) {
		return Lease{}, ErrLeaseLost
	}
	return r.setLease(rec, holder, ttl, now), nil
}

func (r *Rules) setLease(rec *Record, holder string, ttl time.Duration, now time.Time) Lease {
	rec.LeaseHolder = holder
	rec.LeaseExpiry = ceilMilli(now.Add(r.leaseTTL(ttl)))
	rec.Rev++
	return Lease{ID: rec.ID, Holder: holder, Expires: rec.LeaseExpiry}
}

// Release drops holder's lease on rec (see Store.Release). Releasing on a
// terminal task is a no-op: terminal tasks hold no lease.
func (r *Rules) Release(rec *Record, holder string) error {
	if err := checkHolder(holder, false); err != nil {
		return err
	}
	if rec.Status.Terminal() {
		return nil
	}
	if rec.LeaseHolder != holder {
		return ErrLeaseLost
	}
	rec.LeaseHolder, rec.LeaseExpiry = "", time.Time{}
	rec.Rev++
	return nil
}

// SweepAction is what Sweep decided for one record.
type SweepAction int

const (
	// SweepKeep: nothing to do.
	SweepKeep SweepAction = iota
	// SweepDelete: the TTL ran out; delete the record.
	SweepDelete
	// SweepFailed: the lease lapsed; the record was moved to failed and
	// must be saved (and published).
	SweepFailed
)

// Sweep decides what a sweep at now does to rec, applying a lease failure
// to rec itself.
func (r *Rules) Sweep(rec *Record, now time.Time) SweepAction {
	if rec.Expired(now) {
		return SweepDelete
	}
	if rec.Status.Terminal() || rec.LeaseHolder == "" || !now.After(rec.LeaseExpiry) {
		return SweepKeep
	}
	rec.Status = StatusFailed
	rec.Error = &Error{Code: LeaseLostCode, Message: LeaseLostMessage}
	rec.InputRequests, rec.InputResponses = nil, nil
	rec.LeaseHolder, rec.LeaseExpiry = "", time.Time{}
	r.touch(rec, now)
	return SweepFailed
}
