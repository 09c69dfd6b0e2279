package pmcp

import (
	"context"
	"sync"
)

// Bookkeeping charged by memoryEventStore besides the payload bytes (whose
// allocation size is charged): estimates of its structures' real size,
// allocator rounding and map load included.
const (
	memEventOverhead   = 96  // memEvent (80) + its slot in the stream's slice
	memStreamOverhead  = 160 // memStream (64), its map entry, id and slice
	memSessionOverhead = 384 // memSession, its streams map, its map entry
)

// EventStore keeps the server-sent events of legacy (2025-11-25 and
// earlier) Streamable HTTP sessions, so that a client whose SSE stream broke
// (or was closed by the server, see RequestHandlerExtra.CloseStream) can
// resume it: a GET carrying Last-Event-ID replays the events it missed.
//
// Events are identified by session, stream and a sequence number that
// starts at 1 and grows by one per event of the stream. Implementations must
// be safe for concurrent use. Append is called in sequence order for each
// stream, on the path that produces the event, so it should not block for
// long; an error is logged and the event is then only delivered live.
// Stores may evict: a missing event is simply not replayed.
type EventStore interface {
	// Append records event seq of stream streamID in session sessionID. The
	// store may keep data; the caller never modifies it afterwards.
	Append(ctx context.Context, sessionID, streamID string, seq uint64, data []byte) error
	// After returns the stored events of the stream whose sequence number
	// is greater than after, in order.
	After(ctx context.Context, sessionID, streamID string, after uint64) ([]StoredEvent, error)
	// DeleteSession forgets every event of the session. It is called when
	// the session ends (DELETE, idle timeout, handler shutdown).
	DeleteSession(ctx context.Context, sessionID string) error
}

// StoredEvent is one event returned by EventStore.After.
type StoredEvent struct {
	// Seq is the event's sequence number within its stream.
	Seq uint64
	// Data is the JSON-RPC message the event carried.
	Data []byte
}

// memoryEventStore is the EventStore NewMemoryEventStore returns.
type memoryEventStore struct {
	maxStream       int
	maxBytes        int64
	maxSessionBytes int64

	mu       sync.Mutex
	sessions map[string]*memSession
	head     *memEvent // oldest event of all streams
	tail     *memEvent // newest
	bytes    int64
	count    int
}

type memSession struct {
	id         string
	streams    map[string]*memStream
	head, tail *memEvent // the session's events, oldest first
	bytes      int64
}

type memStream struct {
	sess   *memSession
	id     string
	events []*memEvent // in sequence order
}

type memEvent struct {
	stream       *memStream
	seq          uint64
	data         []byte
	prev, next   *memEvent // global age order
	sprev, snext *memEvent // age order within the session
}

func (ev *memEvent) charge() int64 { return int64(cap(ev.data)) + memEventOverhead }

// NewMemoryEventStore returns an empty in-memory EventStore, the default
// of StreamableHTTPOptions.EventStore: bounded (MemoryEventStoreOptions)
// and in process, so only clients that come back to the same process can
// resume. It keeps an exact-size copy of each event. When a bound is hit,
// the oldest events (of the session, for the per-session bound) are
// evicted; an event larger than a bound on its own is not kept.
func NewMemoryEventStore(opts MemoryEventStoreOptions) EventStore {
	return newMemoryEventStore(opts)
}

func newMemoryEventStore(opts MemoryEventStoreOptions) *memoryEventStore {
	m := &memoryEventStore{maxStream: opts.MaxStreamEvents, maxBytes: opts.MaxBytes, maxSessionBytes: opts.MaxSessionBytes, sessions: map[string]*memSession{}}
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
func (m *memoryEventStore) Append(_ context.Context, sessionID, streamID string, seq uint64, data []byte) error {
	// An exact-size copy: the caller's slice may sit in a larger array.
	data = append([]byte(nil), data...)
	m.mu.Lock()
	defer m.mu.Unlock()
	sess := m.sessions[sessionID]
	st := (*memStream)(nil)
	if sess != nil {
		st = sess.streams[streamID]
	}
	need := int64(cap(data)) + memEventOverhead
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
		sess = &memSession{id: sessionID, streams: map[string]*memStream{}, bytes: memSessionOverhead}
		m.sessions[sessionID] = sess
		m.bytes += memSessionOverhead
	}
	if st == nil {
		st = &memStream{sess: sess, id: streamID}
		sess.streams[streamID] = st
		sess.bytes += memStreamOverhead
		m.bytes += memStreamOverhead
	}
	ev := &memEvent{stream: st, seq: seq, data: data, prev: m.tail, sprev: sess.tail}
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
func (m *memoryEventStore) evict(ev *memEvent) {
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
func (m *memoryEventStore) dropStream(st *memStream) {
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

func (m *memoryEventStore) unlink(ev *memEvent) {
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
func (m *memoryEventStore) After(_ context.Context, sessionID, streamID string, after uint64) ([]StoredEvent, error) {
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
func (m *memoryEventStore) DeleteSession(_ context.Context, sessionID string) error {
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
func (m *memoryEventStore) size() (events int, bytes int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.count, m.bytes
}
