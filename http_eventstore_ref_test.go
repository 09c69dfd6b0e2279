package pmcp

import (
	"bytes"
	"context"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"sync"
	"testing"
)

// refEventStore is the in-memory event store as it was before it became
// pointer-free (linked events, one allocation each), kept as the oracle of
// TestMemoryEventStoreMatchesReference. It charges an event as the new
// store does: its stream id and data at their length.
type refEventStore struct {
	maxStream       int
	maxBytes        int64
	maxSessionBytes int64

	mu       sync.Mutex
	sessions map[string]*refSession
	head     *refEvent // oldest event of all streams
	tail     *refEvent // newest
	bytes    int64
	count    int
}

type refSession struct {
	id         string
	streams    map[string]*refStream
	head, tail *refEvent // the session's events, oldest first
	bytes      int64
}

type refStream struct {
	sess   *refSession
	id     string
	events []*refEvent // in sequence order
}

type refEvent struct {
	stream       *refStream
	seq          uint64
	data         []byte
	prev, next   *refEvent // global age order
	sprev, snext *refEvent // age order within the session
}

func (ev *refEvent) charge() int64 {
	return int64(len(ev.stream.id)) + int64(len(ev.data)) + memEventOverhead
}

func newRefEventStore(opts MemoryEventStoreOptions) *refEventStore {
	m := &refEventStore{maxStream: opts.MaxStreamEvents, maxBytes: opts.MaxBytes, maxSessionBytes: opts.MaxSessionBytes, sessions: map[string]*refSession{}}
	if m.maxStream == 0 {
		m.maxStream = DefaultEventStoreMaxStreamEvents
	}
	if m.maxBytes == 0 {
		m.maxBytes = DefaultEventStoreMaxBytes
	}
	if m.maxSessionBytes == 0 {
		m.maxSessionBytes = DefaultEventStoreMaxSessionBytes
	}
	return m
}

// Append implements EventStore.
func (m *refEventStore) Append(_ context.Context, sessionID, streamID string, seq uint64, data []byte) error {
	// An exact-size copy: the caller's slice may sit in a larger array.
	data = append([]byte(nil), data...)
	m.mu.Lock()
	defer m.mu.Unlock()
	sess := m.sessions[sessionID]
	st := (*refStream)(nil)
	if sess != nil {
		st = sess.streams[streamID]
	}
	need := int64(len(streamID)) + int64(len(data)) + memEventOverhead
	if st == nil {
		need += memStreamOverhead
		if sess == nil {
			need += memSessionOverhead
		}
	}
	if (m.maxBytes > 0 && need > m.maxBytes) || (m.maxSessionBytes > 0 && need > m.maxSessionBytes) {
		return nil // larger than a bound on its own: delivered live only
	}
	if sess == nil {
		sess = &refSession{id: sessionID, streams: map[string]*refStream{}, bytes: memSessionOverhead}
		m.sessions[sessionID] = sess
		m.bytes += memSessionOverhead
	}
	if st == nil {
		st = &refStream{sess: sess, id: streamID}
		sess.streams[streamID] = st
		sess.bytes += memStreamOverhead
		m.bytes += memStreamOverhead
	}
	ev := &refEvent{stream: st, seq: seq, data: data, prev: m.tail, sprev: sess.tail}
	if m.tail != nil {
		m.tail.next = ev
	} else {
		m.head = ev
	}
	m.tail = ev
	if sess.tail != nil {
		sess.tail.snext = ev
	} else {
		sess.head = ev
	}
	sess.tail = ev
	st.events = append(st.events, ev)
	c := ev.charge()
	m.bytes += c
	sess.bytes += c
	m.count++
	if m.maxStream > 0 {
		for len(st.events) > m.maxStream {
			m.evict(st.events[0])
		}
	}
	if m.maxSessionBytes > 0 {
		for sess.bytes > m.maxSessionBytes && sess.head != nil && sess.head != ev {
			m.evict(sess.head)
		}
	}
	if m.maxBytes > 0 {
		for m.bytes > m.maxBytes && m.head != nil && m.head != ev {
			m.evict(m.head)
		}
	}
	return nil
}

// evict removes ev, which is the oldest event of its stream (and so of
// its session's events in that stream).
func (m *refEventStore) evict(ev *refEvent) {
	m.unlink(ev)
	st := ev.stream
	if len(st.events) > 0 && st.events[0] == ev {
		st.events[0] = nil
		st.events = st.events[1:]
	}
	if len(st.events) == 0 {
		m.dropStream(st)
	}
}

// dropStream forgets an empty stream, and its session once empty.
func (m *refEventStore) dropStream(st *refStream) {
	sess := st.sess
	if sess.streams[st.id] != st {
		return
	}
	delete(sess.streams, st.id)
	sess.bytes -= memStreamOverhead
	m.bytes -= memStreamOverhead
	if len(sess.streams) == 0 && m.sessions[sess.id] == sess {
		delete(m.sessions, sess.id)
		m.bytes -= memSessionOverhead
	}
}

func (m *refEventStore) unlink(ev *refEvent) {
	if ev.prev != nil {
		ev.prev.next = ev.next
	} else {
		m.head = ev.next
	}
	if ev.next != nil {
		ev.next.prev = ev.prev
	} else {
		m.tail = ev.prev
	}
	sess := ev.stream.sess
	if ev.sprev != nil {
		ev.sprev.snext = ev.snext
	} else {
		sess.head = ev.snext
	}
	if ev.snext != nil {
		ev.snext.sprev = ev.sprev
	} else {
		sess.tail = ev.sprev
	}
	ev.prev, ev.next, ev.sprev, ev.snext = nil, nil, nil, nil
	c := ev.charge()
	m.bytes -= c
	sess.bytes -= c
	m.count--
}

// After implements EventStore.
func (m *refEventStore) After(_ context.Context, sessionID, streamID string, after uint64) ([]StoredEvent, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sess := m.sessions[sessionID]
	if sess == nil {
		return nil, nil
	}
	st := sess.streams[streamID]
	if st == nil {
		return nil, nil
	}
	var out []StoredEvent
	for _, ev := range st.events {
		if ev.seq > after {
			out = append(out, StoredEvent{Seq: ev.seq, Data: ev.data})
		}
	}
	return out, nil
}

// DeleteSession implements EventStore.
func (m *refEventStore) DeleteSession(_ context.Context, sessionID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	sess := m.sessions[sessionID]
	if sess == nil {
		return nil
	}
	for _, st := range sess.streams {
		for _, ev := range st.events {
			m.unlink(ev)
		}
		st.events = nil
		m.dropStream(st)
	}
	return nil
}

// size reports how many events the store holds and the bytes it charges
// against MaxBytes for them (payloads plus bookkeeping).
func (m *refEventStore) size() (events int, bytes int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.count, m.bytes
}

// TestMemoryEventStoreMatchesReference drives the store and the reference
// (refEventStore) with the same random appends, deletions and reads under
// many combinations of bounds: every read and every charge must agree, so
// the pointer-free layout and its compactions keep the eviction rules.
func TestMemoryEventStoreMatchesReference(t *testing.T) {
	ctx := context.Background()
	ids := []string{"1", "2", "17", "a-longer-stream-id"}
	sessions := []string{"s", "t", "u"}
	for seed := uint64(1); seed <= 60; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		opts := MemoryEventStoreOptions{
			MaxStreamEvents: []int{-1, 2, 5, 0}[rng.IntN(4)],
			MaxBytes:        []int64{-1, 1500, 4000, 0}[rng.IntN(4)],
			MaxSessionBytes: []int64{-1, 1200, 3000, 0}[rng.IntN(4)],
		}
		m, ref := newMemoryEventStore(opts), newRefEventStore(opts)
		next := map[string]uint64{}
		check := func(op int, what string) {
			t.Helper()
			for _, s := range sessions {
				for _, id := range ids {
					after := uint64(rng.IntN(3))
					got, _ := m.After(ctx, s, id, after)
					want, _ := ref.After(ctx, s, id, after)
					if !sameEvents(got, want) {
						t.Fatalf("seed %d op %d (%s), %+v: After(%s, %s, %d) = %s, want %s", seed, op, what, opts, s, id, after, seqLens(got), seqLens(want))
					}
				}
			}
			gn, gb := m.size()
			wn, wb := ref.size()
			if gn != wn || gb != wb {
				t.Fatalf("seed %d op %d (%s), %+v: size = %d events %d bytes, want %d, %d", seed, op, what, opts, gn, gb, wn, wb)
			}
		}
		for op := range 1000 {
			s := sessions[rng.IntN(len(sessions))]
			what := ""
			switch r := rng.IntN(100); {
			case r < 3:
				what = "delete " + s
				_ = m.DeleteSession(ctx, s)
				_ = ref.DeleteSession(ctx, s)
			default:
				id := ids[rng.IntN(len(ids))]
				next[s+"/"+id]++
				n := rng.IntN(200)
				if rng.IntN(20) == 0 {
					n = 1000 + rng.IntN(3000)
				}
				data := make([]byte, n)
				for i := range data {
					data[i] = byte(rng.Uint32())
				}
				what = fmt.Sprintf("append %s/%s #%d (%d bytes)", s, id, next[s+"/"+id], n)
				_ = m.Append(ctx, s, id, next[s+"/"+id], data)
				_ = ref.Append(ctx, s, id, next[s+"/"+id], data)
			}
			if op%7 == 0 || rng.IntN(10) == 0 {
				check(op, what)
			}
		}
		check(1000, "end")
	}
}

// seqLens describes events as seq:length.
func seqLens(evs []StoredEvent) string {
	out := "["
	for _, ev := range evs {
		out += fmt.Sprintf(" %d:%d", ev.Seq, len(ev.Data))
	}
	return out + " ]"
}

func sameEvents(a, b []StoredEvent) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Seq != b[i].Seq || !bytes.Equal(a[i].Data, b[i].Data) {
			return false
		}
	}
	return true
}

// A stream whose id hashes like another's is not confused with it: its
// events are not kept, and the other stream's stay as they were.
func TestMemoryEventStoreHashClash(t *testing.T) {
	ctx := context.Background()
	m := newMemoryEventStore(MemoryEventStoreOptions{})
	_ = m.Append(ctx, "s", "1", 1, []byte("one"))
	// Make "2" clash with "1": its key now finds stream "1".
	s := m.sessions["s"]
	k1 := memStreamKey{sess: s, hash: maphash.String(m.seed, "1")}
	k2 := memStreamKey{sess: s, hash: maphash.String(m.seed, "2")}
	m.streams[k2] = m.streams[k1]
	_ = m.Append(ctx, "s", "2", 1, []byte("two"))
	if evs, _ := m.After(ctx, "s", "2", 0); len(evs) != 0 {
		t.Fatalf("the clashing stream reads %q", evs[0].Data)
	}
	if evs, _ := m.After(ctx, "s", "1", 0); len(evs) != 1 || string(evs[0].Data) != "one" {
		t.Fatalf("stream 1 after the clash: %+v", evs)
	}
	if n, _ := m.size(); n != 1 {
		t.Fatalf("%d events kept, want 1", n)
	}
}
