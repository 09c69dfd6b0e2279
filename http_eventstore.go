package pmcp

import (
	"context"
	"sync"
)

// Defaults of MemoryEventStoreOptions.
const (
	// DefaultEventStoreMaxStreamEvents is how many events the in-memory
	// event store keeps per stream; older events of a longer stream are
	// evicted first.
	DefaultEventStoreMaxStreamEvents = 256
	// DefaultEventStoreMaxBytes caps the payload bytes the in-memory event
	// store keeps across all sessions (16 MiB); when it is exceeded the
	// oldest events, whatever their stream, are evicted first.
	DefaultEventStoreMaxBytes = 16 << 20
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

// MemoryEventStoreOptions bound a MemoryEventStore. Zero fields mean the
// defaults; negative fields disable that bound.
type MemoryEventStoreOptions struct {
	// MaxStreamEvents caps the events kept per stream. Zero means
	// DefaultEventStoreMaxStreamEvents.
	MaxStreamEvents int
	// MaxBytes caps the payload bytes kept in total. Zero means
	// DefaultEventStoreMaxBytes.
	MaxBytes int64
}

// MemoryEventStore is the default EventStore: bounded and in process, so
// only clients that come back to the same process can resume. When a bound
// is hit, the oldest events are evicted.
type MemoryEventStore struct {
	maxStream int
	maxBytes  int64

	mu       sync.Mutex
	sessions map[string]map[string]*memStream
	head     *memEvent // oldest event of all streams
	tail     *memEvent // newest
	bytes    int64
	count    int
}

type memStream struct {
	session, id string
	events      []*memEvent // in sequence order
}

type memEvent struct {
	stream     *memStream
	seq        uint64
	data       []byte
	prev, next *memEvent // global age order
}

// NewMemoryEventStore returns an empty in-memory store.
func NewMemoryEventStore(opts MemoryEventStoreOptions) *MemoryEventStore {
	m := &MemoryEventStore{maxStream: opts.MaxStreamEvents, maxBytes: opts.MaxBytes, sessions: map[string]map[string]*memStream{}}
	if m.maxStream == 0 {
		m.maxStream = DefaultEventStoreMaxStreamEvents
	}
	if m.maxBytes == 0 {
		m.maxBytes = DefaultEventStoreMaxBytes
	}
	return m
}

// Append implements EventStore.
func (m *MemoryEventStore) Append(_ context.Context, sessionID, streamID string, seq uint64, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	streams := m.sessions[sessionID]
	if streams == nil {
		streams = map[string]*memStream{}
		m.sessions[sessionID] = streams
	}
	st := streams[streamID]
	if st == nil {
		st = &memStream{session: sessionID, id: streamID}
		streams[streamID] = st
	}
	ev := &memEvent{stream: st, seq: seq, data: data, prev: m.tail}
	if m.tail != nil {
		m.tail.next = ev
	} else {
		m.head = ev
	}
	m.tail = ev
	st.events = append(st.events, ev)
	m.bytes += int64(len(data))
	m.count++
	if m.maxStream > 0 {
		for len(st.events) > m.maxStream {
			m.evict(st.events[0])
		}
	}
	if m.maxBytes > 0 {
		for m.bytes > m.maxBytes && m.head != nil {
			m.evict(m.head)
		}
	}
	return nil
}

// evict removes ev, which is the oldest event of its stream.
func (m *MemoryEventStore) evict(ev *memEvent) {
	m.unlink(ev)
	st := ev.stream
	if len(st.events) > 0 && st.events[0] == ev {
		st.events[0] = nil
		st.events = st.events[1:]
	}
	if len(st.events) == 0 {
		if streams := m.sessions[st.session]; streams != nil {
			delete(streams, st.id)
			if len(streams) == 0 {
				delete(m.sessions, st.session)
			}
		}
	}
}

func (m *MemoryEventStore) unlink(ev *memEvent) {
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
	ev.prev, ev.next = nil, nil
	m.bytes -= int64(len(ev.data))
	m.count--
}

// After implements EventStore.
func (m *MemoryEventStore) After(_ context.Context, sessionID, streamID string, after uint64) ([]StoredEvent, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.sessions[sessionID][streamID]
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
func (m *MemoryEventStore) DeleteSession(_ context.Context, sessionID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, st := range m.sessions[sessionID] {
		for _, ev := range st.events {
			m.unlink(ev)
		}
		st.events = nil
	}
	delete(m.sessions, sessionID)
	return nil
}

// Len reports how many events and payload bytes the store holds.
func (m *MemoryEventStore) Len() (events int, bytes int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.count, m.bytes
}
