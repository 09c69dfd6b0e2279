package tasks

import (
	"errors"
	"github.com/go-json-experiment/json/jsontext"
	"strings"
	"testing"
	"time"
)

// fakeClock is a minimal settable clock for package-internal tests.

type chanTime chan time.Time

func newFakeClock(t time.Time) chanTime {
	c := make(chanTime, 1)
	c <- t
	return c
}

func (c chanTime) Now() time.Time  { t := <-c; c <- t; return t }
func (c chanTime) Set(t time.Time) { <-c; c <- t }

func TestJanitorExpiresAndFailsInBackground(t *testing.T) {
	clock := newFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	swept := make(chan SweepStats, 1)
	s, err := newMemoryStore(Options{Now: clock.Now, SweepInterval: time.Millisecond}, func(st SweepStats) {
		if st != (SweepStats{}) {
			select {
			case swept <- st:
			default:
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	expiring, _ := s.Create(ctx, "o", Spec{TTL: time.Second})
	leased, _ := s.Create(ctx, "o", Spec{Holder: "r", LeaseTTL: time.Minute, TTL: time.Hour})

	clock.Set(expiring.ExpiresAt.Add(time.Millisecond))
	if st := waitSweep(t, swept); st.Expired != 1 || st.LeaseLost != 0 {
		t.Fatalf("first background sweep: %+v", st)
	}
	if s.Len() != 1 {
		t.Fatalf("Len = %d after expiry", s.Len())
	}
	clock.Set(leased.LeaseExpiry.Add(time.Millisecond))
	if st := waitSweep(t, swept); st.LeaseLost != 1 {
		t.Fatalf("second background sweep: %+v", st)
	}
	got, err := s.Get(ctx, "o", leased.ID)
	if err != nil || got.Status != StatusFailed || got.Error.Code != LeaseLostCode {
		t.Fatalf("leased task after its lease lapsed: %+v, %v", got, err)
	}
}

// waitSweep waits for the janitor's next non-empty sweep. The timeout only
// turns a janitor that never runs into a failure instead of a hang.
func waitSweep(t *testing.T, swept <-chan SweepStats) SweepStats {
	t.Helper()
	select {
	case st := <-swept:
		return st
	case <-time.After(10 * time.Second):
		t.Fatal("the janitor did not sweep")
		return SweepStats{}
	}
}

func TestNoJanitorWhenSweepIntervalNegative(t *testing.T) {
	s, err := NewMemoryStore(Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if s.stop != nil {
		t.Fatal("a janitor was started")
	}
	_ = s.Close()
}

func TestOptionsValidation(t *testing.T) {
	for _, o := range []Options{
		{DefaultTTL: -1},
		{PollInterval: -1},
		{LeaseTTL: -1},
		{IDPrefix: "no spaces"},
		{IDPrefix: strings.Repeat("p", MaxIDPrefixBytes+1)},
	} {
		if _, err := NewMemoryStore(o); !errors.Is(err, ErrInvalid) {
			t.Errorf("NewMemoryStore(%+v): %v, want ErrInvalid", o, err)
		}
	}
	r, err := NewRules(Options{})
	if err != nil {
		t.Fatal(err)
	}
	o := r.Options()
	if o.MaxTasks != DefaultMaxTasks || o.MaxTasksPerOwner != DefaultMaxTasksPerOwner || o.MaxResultBytes != DefaultMaxResultBytes ||
		o.DefaultTTL != DefaultTTL || o.MaxTTL != DefaultMaxTTL || o.SweepInterval != DefaultSweepInterval ||
		o.PageSize != DefaultPageSize || o.WatchBuffer != DefaultWatchBuffer || o.Now == nil {
		t.Fatalf("zero Options did not resolve to the defaults: %+v", o)
	}
	// DefaultTTL above MaxTTL is clamped, not an error.
	r, _ = NewRules(Options{DefaultTTL: 2 * time.Hour, MaxTTL: time.Hour})
	if r.Options().DefaultTTL != time.Hour {
		t.Fatalf("DefaultTTL %v", r.Options().DefaultTTL)
	}
}

func TestChooseTTL(t *testing.T) {
	o := mustRules(t, Options{DefaultTTL: time.Minute, MaxTTL: time.Hour}).Options()
	for _, c := range []struct{ in, want time.Duration }{
		{0, time.Minute},
		{-1, time.Hour},
		{2 * time.Hour, time.Hour},
		{time.Nanosecond, time.Millisecond},
		{1500 * time.Microsecond, 2 * time.Millisecond},
		{3 * time.Second, 3 * time.Second},
	} {
		if got := o.ChooseTTL(c.in); got != c.want {
			t.Errorf("ChooseTTL(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	o = mustRules(t, Options{MaxTTL: -1}).Options()
	if got := o.ChooseTTL(-1); got != 0 {
		t.Errorf("unlimited with no cap: %v", got)
	}
}

func TestIDs(t *testing.T) {
	id := NewID("s3_")
	if !WellFormedID("s3_", id) || len(id) != 3+24 {
		t.Fatalf("NewID = %q", id)
	}
	for _, bad := range []string{"", id[:len(id)-1], id + "A", "x" + id[1:], id[:5] + "+" + id[6:], id[:5] + "=" + id[6:]} {
		if WellFormedID("s3_", bad) {
			t.Errorf("WellFormedID(%q) = true", bad)
		}
	}
}

func TestRecordRulesAllOrNothing(t *testing.T) {
	// A change that fails a late check (the byte bound) must leave the
	// record exactly as it was, even though earlier parts would apply.
	r, _ := NewRules(Options{MaxInputBytes: 32})
	rec, err := r.New("o", NewID(""), Spec{}, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	before := rec.Clone()
	err = r.Change(&rec, Change{To: StatusInputRequired, StatusMessage: new(string),
		InputRequests: map[string]jsonValue{"k": jsonValue(`"` + strings.Repeat("x", 40) + `"`)}}, time.Unix(1, 0))
	if !errors.Is(err, ErrLimit) {
		t.Fatalf("err = %v", err)
	}
	if rec.Status != before.Status || rec.Version != before.Version || rec.InputRequests != nil || rec.InputKeysUsed != nil || rec.Rev != before.Rev {
		t.Fatalf("record changed by a rejected change: %+v", rec)
	}
}

type jsonValue = jsontext.Value

func mustRules(t *testing.T, o Options) *Rules {
	t.Helper()
	r, err := NewRules(o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
