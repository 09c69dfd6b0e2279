package pmcp

import (
	"context"
	"hash/maphash"
	"math"
	"sync"
)

// Bookkeeping charged by memoryEventStore besides the payload bytes (the
// event's data and its stream id, charged at their length): estimates of
// what its structures cost, spare capacity and map load included.
const (
	memEventOverhead   = 96  // a record (64) and its share of the arrays' spare room
	memStreamOverhead  = 160 // a stream's map entry at the map's load
	memSessionOverhead = 384 // a session's slot, its map entry and its id
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
//
// It holds no pointer per event, so that what it keeps (up to 16 MiB of
// small replies by default) costs the garbage collector next to nothing
// to mark: the events are records in one array (recs) and their bytes sit
// in another (log), both in the order the events arrived; streams are
// found by a hash of their id in a map of plain values. Evicting an event
// only marks its record dead; the arrays are compacted (dead records and
// their bytes dropped, the lists rebuilt) when one of them is full, and
// sized to what is live plus a quarter when they grow or shrink, so that
// compaction is paid for by the appends that filled the room and memory
// stays within about 1.25 times what is charged.
type memoryEventStore struct {
	maxStream       int
	maxBytes        int64
	maxSessionBytes int64
	seed            maphash.Seed

	mu       sync.Mutex
	sessions map[string]int32 // session id → index in slots
	slots    []memSession
	free     []int32 // unused slots
	streams  map[memStreamKey]memStream
	recs     []memRec // every record not yet compacted away, oldest first
	head     int      // recs before head are dead
	log      []byte   // each record's stream id and data, in recs' order
	logLive  int      // bytes of log that live records use
	bytes    int64    // charged: live payloads plus bookkeeping
	count    int      // live events
}

// memSession is a session's slot. Its records form a list (memRec.nextSess)
// that may still run through dead ones: an event evicted by its stream's
// cap need not be the session's oldest. They are skipped when met.
type memSession struct {
	id          string
	first, last int // recs indexes, -1 when none
	bytes       int64
	streams     int
	inUse       bool
}

type memStreamKey struct {
	sess int32
	hash uint64 // of the stream id; ids are compared on every lookup
}

// memStream is a stream's list of live records (memRec.nextStream), which
// loses its oldest only, so first is always live.
type memStream struct {
	first, last, n int
}

type memRec struct {
	seq                  uint64
	hash                 uint64
	off                  int // of the stream id in log; the data follows it
	nextStream, nextSess int // recs indexes, -1 when none
	idLen, dataLen       int32
	sess                 int32
	live                 bool
}

func (r *memRec) charge() int64 { return int64(r.idLen) + int64(r.dataLen) + memEventOverhead }

// Compacted arrays get at least this much room.
const (
	memMinRecs = 64
	memMinLog  = 4 << 10
)

// NewMemoryEventStore returns an empty in-memory EventStore, the default
// of StreamableHTTPOptions.EventStore: bounded (MemoryEventStoreOptions)
// and in process, so only clients that come back to the same process can
// resume. It keeps a copy of each event. When a bound is hit, the oldest
// events (of the session, for the per-session bound) are evicted; an event
// larger than a bound on its own is not kept.
func NewMemoryEventStore(opts MemoryEventStoreOptions) EventStore {
	return newMemoryEventStore(opts)
}

func newMemoryEventStore(opts MemoryEventStoreOptions) *memoryEventStore {
	m := &memoryEventStore{
		maxStream: opts.MaxStreamEvents, maxBytes: opts.MaxBytes, maxSessionBytes: opts.MaxSessionBytes,
		seed: maphash.MakeSeed(), sessions: map[string]int32{}, streams: map[memStreamKey]memStream{},
	}
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

// stream finds the stream id of session slot s: its key, and its entry
// when the stream has events. A different id with the same hash reports
// clash (the event is then not kept: a store may drop any event).
func (m *memoryEventStore) stream(s int32, id string) (k memStreamKey, st memStream, found, clash bool) {
	k = memStreamKey{sess: s, hash: maphash.String(m.seed, id)}
	st, found = m.streams[k]
	if found && m.idOf(st.first) != id {
		return k, st, false, true
	}
	return k, st, found, false
}

func (m *memoryEventStore) idOf(i int) string {
	r := &m.recs[i]
	return string(m.log[r.off : r.off+int(r.idLen)])
}

func (m *memoryEventStore) dataOf(i int) []byte {
	r := &m.recs[i]
	start := r.off + int(r.idLen)
	return m.log[start : start+int(r.dataLen)]
}

// Append implements EventStore.
func (m *memoryEventStore) Append(_ context.Context, sessionID, streamID string, seq uint64, data []byte) error {
	if m.oversize(int64(len(streamID))+int64(len(data))+memEventOverhead) || len(streamID)+len(data) > math.MaxInt32 {
		return nil // larger than a bound on its own: delivered live only
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.recs) == cap(m.recs) || len(m.log)+len(streamID)+len(data) > cap(m.log) {
		m.compact(1, len(streamID)+len(data)) // first: it moves records
	}
	s, hasSess := m.sessions[sessionID]
	var (
		k     memStreamKey
		st    memStream
		found bool
	)
	if hasSess {
		var clash bool
		if k, st, found, clash = m.stream(s, streamID); clash {
			return nil
		}
	}
	need := int64(len(streamID)) + int64(len(data)) + memEventOverhead
	if !found {
		need += memStreamOverhead
		if !hasSess {
			need += memSessionOverhead
		}
	}
	if m.oversize(need) {
		return nil // with its stream's or session's bookkeeping
	}
	if !hasSess {
		s = m.newSession(sessionID)
		k = memStreamKey{sess: s, hash: maphash.String(m.seed, streamID)}
	}
	sess := &m.slots[s]
	if !found {
		st = memStream{first: -1, last: -1}
		sess.streams++
		sess.bytes += memStreamOverhead
		m.bytes += memStreamOverhead
	}
	i := len(m.recs)
	off := len(m.log)
	m.log = append(append(m.log, streamID...), data...)
	m.recs = append(m.recs, memRec{
		seq: seq, hash: k.hash, off: off, nextStream: -1, nextSess: -1,
		idLen: int32(len(streamID)), dataLen: int32(len(data)), sess: s, live: true,
	})
	m.logLive += len(streamID) + len(data)
	if st.last >= 0 {
		m.recs[st.last].nextStream = i
	} else {
		st.first = i
	}
	st.last = i
	st.n++
	m.streams[k] = st
	if sess.last >= 0 {
		m.recs[sess.last].nextSess = i
	} else {
		sess.first = i
	}
	sess.last = i
	c := m.recs[i].charge()
	m.bytes += c
	sess.bytes += c
	m.count++
	if m.maxStream > 0 {
		for st.n > m.maxStream {
			m.evict(st.first)
			st = m.streams[k]
		}
	}
	if m.maxSessionBytes > 0 {
		for sess.bytes > m.maxSessionBytes {
			old := m.oldestOf(sess)
			if old < 0 || old == i {
				break
			}
			m.evict(old)
		}
	}
	if m.maxBytes > 0 {
		for m.bytes > m.maxBytes {
			for m.head < len(m.recs) && !m.recs[m.head].live {
				m.head++
			}
			if m.head >= i {
				break
			}
			m.evict(m.head)
		}
	}
	return nil
}

// oversize reports whether an event charging need exceeds a bound on
// its own.
func (m *memoryEventStore) oversize(need int64) bool {
	return (m.maxBytes > 0 && need > m.maxBytes) || (m.maxSessionBytes > 0 && need > m.maxSessionBytes)
}

func (m *memoryEventStore) newSession(id string) int32 {
	var s int32
	if n := len(m.free); n > 0 {
		s, m.free = m.free[n-1], m.free[:n-1]
	} else {
		s = int32(len(m.slots))
		m.slots = append(m.slots, memSession{})
	}
	m.slots[s] = memSession{id: id, first: -1, last: -1, bytes: memSessionOverhead, inUse: true}
	m.sessions[id] = s
	m.bytes += memSessionOverhead
	return s
}

// oldestOf is the session's oldest live record, or -1.
func (m *memoryEventStore) oldestOf(sess *memSession) int {
	for sess.first >= 0 && !m.recs[sess.first].live {
		sess.first = m.recs[sess.first].nextSess
	}
	if sess.first < 0 {
		sess.last = -1
	}
	return sess.first
}

// evict removes live record i, which is the oldest of its stream; a
// stream left empty is forgotten, and so is a session left with none.
func (m *memoryEventStore) evict(i int) {
	r := &m.recs[i]
	r.live = false
	m.logLive -= int(r.idLen) + int(r.dataLen)
	c := r.charge()
	sess := &m.slots[r.sess]
	m.bytes -= c
	sess.bytes -= c
	m.count--
	k := memStreamKey{sess: r.sess, hash: r.hash}
	st := m.streams[k]
	st.first = r.nextStream
	st.n--
	if st.n > 0 {
		m.streams[k] = st
		return
	}
	delete(m.streams, k)
	sess.streams--
	sess.bytes -= memStreamOverhead
	m.bytes -= memStreamOverhead
	if sess.streams > 0 {
		return
	}
	delete(m.sessions, sess.id)
	*sess = memSession{}
	m.free = append(m.free, r.sess)
	m.bytes -= memSessionOverhead
	if m.count == 0 { // nothing left: give the arrays back
		m.recs, m.log, m.head, m.logLive = nil, nil, 0, 0
	}
}

// compact drops the dead records and their bytes, leaving room for at
// least addRecs more records and addBytes more bytes, and rebuilds the
// session and stream lists. An array is reallocated, with a quarter more
// room than what is live needs, when that would fill more than seven
// eighths of it (or less than a quarter): a store that stays full then
// compacts in place, at least an eighth of its room apart.
func (m *memoryEventStore) compact(addRecs, addBytes int) {
	needRecs, needLog := m.count+addRecs, m.logLive+addBytes
	recs, log := m.recs[:0], m.log[:0]
	if c := cap(m.recs); needRecs > c-c/8 || (needRecs < c/4 && c > 4*memMinRecs) {
		recs = make([]memRec, 0, needRecs+needRecs/4+memMinRecs)
	}
	if c := cap(m.log); needLog > c-c/8 || (needLog < c/4 && c > 4*memMinLog) {
		log = make([]byte, 0, needLog+needLog/4+memMinLog)
	}
	for s := range m.slots {
		if m.slots[s].inUse {
			m.slots[s].first, m.slots[s].last = -1, -1
		}
	}
	for k, st := range m.streams {
		st.first, st.last = -1, -1
		m.streams[k] = st
	}
	// Moving forward within the same arrays is safe: a record and its
	// bytes never move to a later place than they had.
	for i := m.head; i < len(m.recs); i++ {
		r := m.recs[i]
		if !r.live {
			continue
		}
		j := len(recs)
		n := int(r.idLen) + int(r.dataLen)
		off := len(log)
		log = append(log, m.log[r.off:r.off+n]...)
		r.off, r.nextStream, r.nextSess = off, -1, -1
		recs = append(recs, r)
		k := memStreamKey{sess: r.sess, hash: r.hash}
		st := m.streams[k]
		if st.last >= 0 {
			recs[st.last].nextStream = j
		} else {
			st.first = j
		}
		st.last = j
		m.streams[k] = st
		sess := &m.slots[r.sess]
		if sess.last >= 0 {
			recs[sess.last].nextSess = j
		} else {
			sess.first = j
		}
		sess.last = j
	}
	m.recs, m.log, m.head = recs, log, 0
}

// After implements EventStore.
func (m *memoryEventStore) After(_ context.Context, sessionID, streamID string, after uint64) ([]StoredEvent, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[sessionID]
	if !ok {
		return nil, nil
	}
	_, st, found, _ := m.stream(s, streamID)
	if !found {
		return nil, nil
	}
	var out []StoredEvent
	for i := st.first; i >= 0; i = m.recs[i].nextStream {
		if m.recs[i].seq > after {
			// A copy: the log's bytes move when it is compacted.
			out = append(out, StoredEvent{Seq: m.recs[i].seq, Data: append([]byte(nil), m.dataOf(i)...)})
		}
	}
	return out, nil
}

// DeleteSession implements EventStore.
func (m *memoryEventStore) DeleteSession(_ context.Context, sessionID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[sessionID]
	if !ok {
		return nil
	}
	// Oldest first, so each is its stream's oldest; the last eviction
	// forgets the session.
	for i := m.slots[s].first; i >= 0; {
		next := m.recs[i].nextSess
		if m.recs[i].live {
			m.evict(i)
			if m.recs == nil {
				break
			}
		}
		i = next
	}
	if m.recs != nil && m.logLive < cap(m.log)/4 && cap(m.log) > 4*memMinLog {
		m.compact(0, 0) // a large store mostly emptied: shrink it
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
