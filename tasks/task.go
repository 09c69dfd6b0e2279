package tasks

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// Status is where a task is in its life. The zero value is not a status.
type Status string

// The five statuses. Working and InputRequired are live; Completed, Failed
// and Cancelled are terminal and never change again.
const (
	StatusWorking       Status = "working"
	StatusInputRequired Status = "input_required"
	StatusCompleted     Status = "completed"
	StatusFailed        Status = "failed"
	StatusCancelled     Status = "cancelled"
)

// Valid reports whether s is one of the five statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusWorking, StatusInputRequired, StatusCompleted, StatusFailed, StatusCancelled:
		return true
	}
	return false
}

// Terminal reports whether s is Completed, Failed or Cancelled.
func (s Status) Terminal() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled
}

// CanTransition reports whether a task in status from may move to status to.
// The graph is the same in both protocol eras:
//
//	working        -> working, input_required, completed, failed, cancelled
//	input_required -> working, input_required, completed, failed, cancelled
//	completed, failed, cancelled -> nothing
//
// A live status may "move" to itself; that is how the status message or the
// pending input requests change without a status change.
func CanTransition(from, to Status) bool {
	switch from {
	case StatusWorking, StatusInputRequired:
		return to.Valid()
	}
	return false
}

// Error is the JSON-RPC error a failed task ended with.
type Error struct {
	Code    int64          `json:"code"`
	Message string         `json:"message"`
	Data    jsontext.Value `json:"data,omitempty"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("tasks: task failed: %d %s", e.Code, e.Message)
}

func (e *Error) clone() *Error {
	if e == nil {
		return nil
	}
	c := *e
	c.Data = slices.Clone(e.Data)
	return &c
}

// Task is an era-neutral snapshot of a task. Stores hand out copies: changing
// a Task changes nothing in the store.
//
// The era adapters render it: 2025-11-25 as Task{ttl, pollInterval} with
// tasks/result returning Result or Error, 2026-07-28 as DetailedTask{ttlMs,
// pollIntervalMs, inputRequests, result | error}.
type Task struct {
	// ID is the task id: at least 128 random bits, base64url, optionally
	// after Options.IDPrefix.
	ID string
	// Owner is the principal the task is bound to (token subject, or the
	// legacy session when there is no authentication). Every request about
	// the task must come from the same owner.
	Owner string
	// Status and StatusMessage are what the client sees.
	Status        Status
	StatusMessage string
	// CreatedAt and UpdatedAt have millisecond precision, in UTC.
	// UpdatedAt changes with every Version.
	CreatedAt time.Time
	UpdatedAt time.Time
	// TTL is the lifetime counted from CreatedAt; 0 means unlimited (null
	// on the wire). ExpiresAt is the instant after which the task may be
	// deleted (zero when TTL is 0). It is never before CreatedAt+TTL, and a
	// task is never deleted while the clock reads ExpiresAt or earlier.
	TTL       time.Duration
	ExpiresAt time.Time
	// PollInterval is the suggested delay between polls.
	PollInterval time.Duration
	// InputRequests are the outstanding requests for client input (the
	// 2026-07-28 inputRequests map), keyed by a key that is unique for the
	// task's whole life. Answered keys leave this map.
	InputRequests map[string]jsontext.Value
	// InputResponses are answers delivered by the client and not yet
	// consumed by the runner (see Change.ConsumeInputs).
	InputResponses map[string]jsontext.Value
	// Result is the raw result of a completed task; Error the error of a
	// failed one. At most one is set, and only in a terminal status.
	Result jsontext.Value
	Error  *Error
	// ResultIsError marks a completed task whose Result is a tool result
	// with isError: true. The 2026-07-28 era reports such a task as
	// completed; the 2025-11-25 adapter reports it as failed and still
	// returns Result from tasks/result.
	ResultIsError bool
	// CancelRequested is set once cancellation was asked for; the runner
	// should stop and move the task to cancelled.
	CancelRequested bool
	// LeaseHolder names the runner that holds the task's lease, empty when
	// none does; LeaseExpiry is when that lease lapses. Lease operations do
	// not change Version.
	LeaseHolder string
	LeaseExpiry time.Time
	// Version starts at 1 and grows by one with every change of what a
	// client can see (status, message, inputs, result, cancel request). It
	// is the compare-and-set token of Change.IfVersion.
	Version uint64
}

// Clone returns a deep copy of t.
func (t Task) Clone() Task {
	c := t
	c.InputRequests = cloneValues(t.InputRequests)
	c.InputResponses = cloneValues(t.InputResponses)
	c.Result = slices.Clone(t.Result)
	c.Error = t.Error.clone()
	return c
}

// Expired reports whether the task's TTL has run out at now. It is false up
// to and including ExpiresAt.
func (t Task) Expired(now time.Time) bool {
	return !t.ExpiresAt.IsZero() && now.After(t.ExpiresAt)
}

func cloneValues(m map[string]jsontext.Value) map[string]jsontext.Value {
	if m == nil {
		return nil
	}
	c := make(map[string]jsontext.Value, len(m))
	for k, v := range m {
		c[k] = slices.Clone(v)
	}
	return c
}

// Spec describes a task to create.
type Spec struct {
	// TTL is the requested lifetime. 0 uses Options.DefaultTTL; a negative
	// value asks for an unlimited lifetime. Either way the store clamps it
	// to Options.MaxTTL and reports the TTL it chose in the Task.
	TTL time.Duration
	// PollInterval is the suggested poll interval; 0 uses
	// Options.PollInterval.
	PollInterval time.Duration
	// Holder, when set, is given the task's lease in the same atomic step
	// as the creation, for LeaseTTL (0 = Options.LeaseTTL), so that no task
	// is ever left without a runner by a crash between create and acquire.
	Holder   string
	LeaseTTL time.Duration
	// StatusMessage is the initial status message.
	StatusMessage string
}

// Change is one atomic update of a task, applied all or nothing by
// [Store.Update]. The zero Change changes nothing but still checks its
// preconditions (and fails with ErrTerminal on a terminal task).
type Change struct {
	// IfVersion, when non-zero, makes the update conditional: it fails
	// with ErrConflict unless the task's Version equals it.
	IfVersion uint64
	// From, when set, makes the update conditional on the current status:
	// it fails with ErrConflict unless the task is in From.
	From Status
	// Holder, when set, fences the update with the lease: it fails with
	// ErrLeaseLost unless Holder holds an unexpired lease on the task.
	Holder string

	// To is the new status; empty keeps the current one. Moving to
	// Completed requires Result, to Failed requires Error, and moving to
	// any terminal status drops pending inputs and the lease.
	To Status
	// StatusMessage, when non-nil, replaces the status message.
	StatusMessage *string
	// InputRequests adds outstanding input requests. The task must end up
	// in input_required, and every key must be new for the task's life.
	InputRequests map[string]jsontext.Value
	// ConsumeInputs removes these keys from InputResponses once the runner
	// has used them. Unknown keys are ignored.
	ConsumeInputs []string
	// Result is the result of a task moving to Completed.
	Result jsontext.Value
	// ResultIsError says Result is a tool result with isError: true (see
	// Task.ResultIsError). Only with Result.
	ResultIsError bool
	// Error is the error of a task moving to Failed.
	Error *Error
}

// Delivery is the outcome of [Store.DeliverInputs].
type Delivery struct {
	// Accepted are the keys that answered an outstanding request, sorted.
	// All other keys (unknown, already answered, or a terminal task) were
	// ignored.
	Accepted []string
	// Task is the task after the delivery.
	Task Task
}

// Page is one page of [Store.List].
type Page struct {
	Tasks []Task
	// NextCursor is empty on the last page.
	NextCursor string
}

// Lease is what [Store.Acquire] and [Store.Renew] return.
type Lease struct {
	ID      string
	Holder  string
	Expires time.Time
}

// SweepStats counts what one [Store.Sweep] did.
type SweepStats struct {
	// Expired tasks were deleted because their TTL ran out.
	Expired int
	// LeaseLost tasks were live with a lapsed lease and are now failed.
	LeaseLost int
}

// LeaseLostCode and LeaseLostMessage make up the error a sweeper stores in a
// task whose runner stopped renewing its lease: an internal error, because
// the client did nothing wrong.
const (
	LeaseLostCode    = -32603
	LeaseLostMessage = "task runner stopped before the task finished (lease expired)"
)

// Errors returned by stores. Check them with errors.Is: stores may wrap them
// with detail.
var (
	// ErrNotFound: no such task for this owner. A task of another owner,
	// an expired task and a malformed id all give exactly this error.
	ErrNotFound = errors.New("tasks: task not found")
	// ErrConflict: a compare-and-set precondition (IfVersion, From) no
	// longer holds; another writer won. Re-read and decide again.
	ErrConflict = errors.New("tasks: task changed concurrently")
	// ErrInvalidTransition: the status graph does not allow the change.
	ErrInvalidTransition = errors.New("tasks: invalid status transition")
	// ErrTerminal: the task is completed, failed or cancelled already.
	ErrTerminal = errors.New("tasks: task already terminal")
	// ErrInvalid: a malformed argument (empty owner, bad key, a result
	// without completed, bad JSON, ...).
	ErrInvalid = errors.New("tasks: invalid argument")
	// ErrInvalidCursor: a List cursor that this store did not issue.
	ErrInvalidCursor = errors.New("tasks: invalid cursor")
	// ErrLimit: a bound was reached; errors.As gives a *LimitError.
	ErrLimit = errors.New("tasks: limit reached")
	// ErrLeaseHeld: another holder has an unexpired lease.
	ErrLeaseHeld = errors.New("tasks: lease held by another runner")
	// ErrLeaseLost: the caller does not hold the lease (it expired or was
	// never theirs).
	ErrLeaseLost = errors.New("tasks: lease not held")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("tasks: store closed")
)

// LimitError says which bound was hit. It matches ErrLimit with errors.Is.
type LimitError struct {
	// What names the bound, e.g. "tasks per owner" or "result bytes".
	What  string
	Limit int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("tasks: limit reached: at most %d %s", e.Limit, e.What)
}

// Is makes errors.Is(err, ErrLimit) true.
func (e *LimitError) Is(target error) bool { return target == ErrLimit }

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
