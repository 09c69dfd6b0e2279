// Package eventstoretest is the contract every pmcp.EventStore must pass:
// the behaviour a legacy client relies on when it resumes an SSE stream
// with Last-Event-ID, whichever replica or store serves it.
//
// A store's test runs it with one line:
//
//	func TestContract(t *testing.T) {
//		eventstoretest.Run(t, func(t *testing.T, l eventstoretest.Limits) pmcp.EventStore {
//			return mystore.New(..., l.MaxStreamEvents, l.MaxSessionBytes)
//		})
//	}
//
// The suite checks behaviour only (what After returns), never a store's
// bookkeeping, so stores may charge their own overheads against
// MaxSessionBytes.
package eventstoretest

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/gopmcp/pmcp"
)

// Limits are the bounds a subtest needs; the factory must honour them. Zero
// means the store's default, negative means no bound.
type Limits struct {
	// MaxStreamEvents caps the events kept per stream; the oldest go first.
	MaxStreamEvents int
	// MaxSessionBytes caps what one session keeps (payloads plus the
	// store's own per-event overhead); the session's oldest events go
	// first, and other sessions are never touched.
	MaxSessionBytes int64
}

// Factory returns a new, empty store with the given limits. The suite
// closes nothing: the factory registers its own cleanup.
type Factory func(t *testing.T, l Limits) pmcp.EventStore

// Run runs the contract suite against stores made by newStore.
func Run(t *testing.T, newStore Factory) {
	tests := []struct {
		name   string
		limits Limits
		run    func(*env)
	}{
		{"AppendAndAfter", Limits{}, testAppendAfter},
		{"StreamsAndSessionsApart", Limits{}, testApart},
		{"BinaryData", Limits{}, testBinary},
		{"StreamCap", Limits{MaxStreamEvents: 3}, testStreamCap},
		{"DeleteSession", Limits{}, testDeleteSession},
		{"SessionShare", Limits{MaxSessionBytes: sessionShareBytes, MaxStreamEvents: -1}, testSessionShare},
		{"OversizeEventNotKept", Limits{MaxSessionBytes: 4 << 10}, testOversize},
		{"ConcurrentStreams", Limits{}, testConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(&env{t: t, s: newStore(t, tc.limits), ctx: t.Context()})
		})
	}
}

type env struct {
	t   *testing.T
	s   pmcp.EventStore
	ctx context.Context
}

func (e *env) append(sess, stream string, seq uint64, data string) {
	e.t.Helper()
	if err := e.s.Append(e.ctx, sess, stream, seq, []byte(data)); err != nil {
		e.t.Fatalf("Append(%s, %s, %d): %v", sess, stream, seq, err)
	}
}

func (e *env) after(sess, stream string, after uint64) []pmcp.StoredEvent {
	e.t.Helper()
	evs, err := e.s.After(e.ctx, sess, stream, after)
	if err != nil {
		e.t.Fatalf("After(%s, %s, %d): %v", sess, stream, after, err)
	}
	return evs
}

// seqs renders events as "seq:data" for messages and comparisons.
func seqs(evs []pmcp.StoredEvent) string {
	s := ""
	for _, ev := range evs {
		if len(ev.Data) <= 8 {
			s += fmt.Sprintf(" %d:%s", ev.Seq, ev.Data)
		} else {
			s += fmt.Sprintf(" %d:<%dB>", ev.Seq, len(ev.Data))
		}
	}
	return s
}

func (e *env) want(sess, stream string, after uint64, want string) {
	e.t.Helper()
	if got := seqs(e.after(sess, stream, after)); got != want {
		e.t.Fatalf("After(%s, %s, %d) =%s, want%s", sess, stream, after, got, want)
	}
}

func testAppendAfter(e *env) {
	for i := uint64(1); i <= 5; i++ {
		e.append("s", "1", i, fmt.Sprintf("e%d", i))
	}
	e.want("s", "1", 0, " 1:e1 2:e2 3:e3 4:e4 5:e5")
	e.want("s", "1", 3, " 4:e4 5:e5")
	e.want("s", "1", 5, "")
	e.want("s", "1", 99, "")
	e.want("s", "2", 0, "")
	e.want("nobody", "1", 0, "")
}

func testApart(e *env) {
	for i := uint64(1); i <= 3; i++ {
		e.append("s", "a", i, fmt.Sprintf("sa%d", i))
		e.append("s", "b", i, fmt.Sprintf("sb%d", i))
		e.append("t", "a", i, fmt.Sprintf("ta%d", i))
	}
	e.want("s", "a", 0, " 1:sa1 2:sa2 3:sa3")
	e.want("s", "b", 1, " 2:sb2 3:sb3")
	e.want("t", "a", 2, " 3:ta3")
}

func testBinary(e *env) {
	odd := []byte("a\nb\x00c\xff\r\n\"}{")
	big := bytes.Repeat([]byte("0123456789abcdef"), 4<<10) // 64 KiB
	if err := e.s.Append(e.ctx, "s", "1", 1, odd); err != nil {
		e.t.Fatal(err)
	}
	if err := e.s.Append(e.ctx, "s", "1", 2, big); err != nil {
		e.t.Fatal(err)
	}
	evs := e.after("s", "1", 0)
	if len(evs) != 2 || !bytes.Equal(evs[0].Data, odd) || !bytes.Equal(evs[1].Data, big) {
		e.t.Fatalf("payloads changed in the store:%s", seqs(evs))
	}
}

func testStreamCap(e *env) {
	for i := uint64(1); i <= 5; i++ {
		e.append("s", "1", i, fmt.Sprintf("e%d", i))
	}
	e.append("s", "2", 1, "x")
	e.want("s", "1", 0, " 3:e3 4:e4 5:e5")
	e.want("s", "1", 4, " 5:e5")
	e.want("s", "2", 0, " 1:x")
}

func testDeleteSession(e *env) {
	e.append("s", "1", 1, "a")
	e.append("s", "2", 1, "b")
	e.append("t", "1", 1, "c")
	if err := e.s.DeleteSession(e.ctx, "s"); err != nil {
		e.t.Fatal(err)
	}
	e.want("s", "1", 0, "")
	e.want("s", "2", 0, "")
	e.want("t", "1", 0, " 1:c")
	if err := e.s.DeleteSession(e.ctx, "nobody"); err != nil {
		e.t.Fatalf("DeleteSession of an unknown session: %v", err)
	}
	// The id may be used again afterwards.
	e.append("s", "1", 1, "again")
	e.want("s", "1", 0, " 1:again")
}

const (
	sessionShareBytes = 64 << 10
	shareEvent        = 1 << 10
	shareStreams      = 4
	shareEvents       = 1024 // 16x the share
)

func testSessionShare(e *env) {
	// The quiet session stores a few events first.
	for i := uint64(1); i <= 4; i++ {
		e.append("quiet", "1", i, fmt.Sprintf("q%d", i))
	}
	// The loud one floods 16x its share over several streams.
	type key struct {
		stream string
		seq    uint64
	}
	order := map[key]int{}
	next := map[string]uint64{}
	var last key
	for i := range shareEvents {
		st := fmt.Sprint(i % shareStreams)
		next[st]++
		k := key{st, next[st]}
		order[k] = i
		last = k
		if err := e.s.Append(e.ctx, "loud", st, k.seq, bytes.Repeat([]byte{'x'}, shareEvent)); err != nil {
			e.t.Fatal(err)
		}
	}
	e.want("quiet", "1", 0, " 1:q1 2:q2 3:q3 4:q4")

	kept, newestEvicted, oldestKept, total := 0, -1, shareEvents, 0
	for s := range shareStreams {
		st := fmt.Sprint(s)
		evs := e.after("loud", st, 0)
		for j, ev := range evs {
			if j > 0 && ev.Seq != evs[j-1].Seq+1 {
				e.t.Fatalf("stream %s kept a gap:%s", st, seqs(evs))
			}
			total += len(ev.Data)
			oldestKept = min(oldestKept, order[key{st, ev.Seq}])
		}
		if len(evs) > 0 && evs[len(evs)-1].Seq != next[st] {
			e.t.Fatalf("stream %s lost its newest event", st)
		}
		first := next[st] + 1
		if len(evs) > 0 {
			first = evs[0].Seq
		}
		if first > 1 {
			newestEvicted = max(newestEvicted, order[key{st, first - 1}])
		}
		kept += len(evs)
	}
	e.t.Logf("the loud session kept %d events, %d payload bytes, of a %d-byte share", kept, total, sessionShareBytes)
	if total > sessionShareBytes {
		e.t.Fatalf("the loud session keeps %d payload bytes, over its %d-byte share", total, sessionShareBytes)
	}
	if total < sessionShareBytes/4 {
		e.t.Fatalf("the loud session keeps only %d bytes of its %d-byte share", total, sessionShareBytes)
	}
	if newestEvicted > oldestKept {
		e.t.Fatalf("event %d was evicted while the older event %d was kept: eviction is not oldest first", newestEvicted, oldestKept)
	}
	if order[last] != shareEvents-1 {
		e.t.Fatal("bookkeeping of the test is off")
	}
}

func testOversize(e *env) {
	e.append("s", "1", 1, "small")
	if err := e.s.Append(e.ctx, "s", "1", 2, bytes.Repeat([]byte{'x'}, 8<<10)); err != nil {
		e.t.Fatalf("an oversize event is delivered live only, not an error: %v", err)
	}
	e.want("s", "1", 0, " 1:small")
	e.append("s", "1", 3, "after")
	e.want("s", "1", 0, " 1:small 3:after")
}

func testConcurrent(e *env) {
	const streams, events = 8, 50
	var wg sync.WaitGroup
	errs := make(chan error, streams*2)
	for i := range streams {
		for _, sess := range []string{"s", "t"} {
			wg.Go(func() {
				for n := uint64(1); n <= events; n++ {
					if err := e.s.Append(e.ctx, sess, fmt.Sprint(i), n, fmt.Appendf(nil, "%s%d-%d", sess, i, n)); err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		e.t.Fatal(err)
	}
	for i := range streams {
		for _, sess := range []string{"s", "t"} {
			evs := e.after(sess, fmt.Sprint(i), 0)
			if len(evs) != events {
				e.t.Fatalf("%s/%d kept %d of %d events", sess, i, len(evs), events)
			}
			for j, ev := range evs {
				if ev.Seq != uint64(j+1) || string(ev.Data) != fmt.Sprintf("%s%d-%d", sess, i, j+1) {
					e.t.Fatalf("%s/%d event %d is %d:%s", sess, i, j, ev.Seq, ev.Data)
				}
			}
		}
	}
}
