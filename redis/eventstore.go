package redis

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/gopmcp/pmcp"
	goredis "github.com/redis/go-redis/v9"
)

// Defaults of EventStoreOptions.
const (
	// DefaultEventPrefix is the key prefix of an EventStore.
	DefaultEventPrefix = "pmcp:events"
	// DefaultEventOverhead is what the store charges per event against
	// MaxSessionBytes besides the payload: an estimate of Redis's own
	// bookkeeping for one stream entry.
	DefaultEventOverhead = 96
)

// EventStoreOptions configure an EventStore. The zero value works; zero
// fields take the defaults, negative ones disable that bound.
type EventStoreOptions struct {
	// Prefix is the key prefix; "" means DefaultEventPrefix. It must not
	// contain '{'. Replicas that resume each other's streams must share it.
	Prefix string
	// MaxStreamEvents caps the events kept per stream (zero:
	// pmcp.DefaultEventStoreMaxStreamEvents); the oldest go first.
	MaxStreamEvents int
	// MaxSessionBytes caps what one session keeps, payloads plus
	// DefaultEventOverhead per event (zero:
	// pmcp.DefaultEventStoreMaxSessionBytes); the session's own oldest
	// events go first, so one session cannot evict another's. There is no
	// store-wide byte bound: that is Redis's maxmemory.
	MaxSessionBytes int64
	// IdleTTL is how long a stream is kept after its last event, and a
	// session's bookkeeping after its last event (zero:
	// pmcp.DefaultSessionIdleTimeout, the same as the HTTP handler's
	// SessionIdleTimeout default; set both together).
	IdleTTL time.Duration
}

// EventStore is a pmcp.EventStore on Redis Streams, so that a legacy client
// whose SSE stream broke can resume it with Last-Event-ID on any replica.
// Each (session, stream) is one Redis stream whose entry ids are
// "<n>-<seq>", n counting the session's events (so the session's oldest
// event is found across its streams) and seq being pmcp's event sequence
// number. All keys of a session share the hash tag {<prefix>:<session>}, so
// every script is single-slot on Redis Cluster and sessions spread over the
// cluster.
type EventStore struct {
	rdb       goredis.UniversalClient
	prefix    string
	maxStream int
	maxBytes  int64
	ttl       time.Duration
}

var _ pmcp.EventStore = (*EventStore)(nil)

// NewEventStore returns an EventStore on rdb, which the caller keeps owning.
func NewEventStore(rdb goredis.UniversalClient, opts EventStoreOptions) *EventStore {
	s := &EventStore{rdb: rdb, prefix: opts.Prefix, maxStream: opts.MaxStreamEvents, maxBytes: opts.MaxSessionBytes, ttl: opts.IdleTTL}
	if s.prefix == "" {
		s.prefix = DefaultEventPrefix
	}
	if s.maxStream == 0 {
		s.maxStream = pmcp.DefaultEventStoreMaxStreamEvents
	}
	if s.maxBytes == 0 {
		s.maxBytes = pmcp.DefaultEventStoreMaxSessionBytes
	}
	if s.ttl == 0 {
		s.ttl = pmcp.DefaultSessionIdleTimeout
	}
	return s
}

func (s *EventStore) sessionTag(sessionID string) string {
	return s.prefix + ":{" + s.prefix + ":" + sessionID + "}"
}

// appendScript adds one event and applies the bounds.
//
// KEYS: the stream, the session's meta hash (n: event counter, b: bytes
// charged, b:<stream>: bytes per stream), the session's stream index (a
// ZSET of stream ids scored by the n of their oldest event).
// ARGV: stream id, seq, data, max stream events, max session bytes, TTL in
// ms, per-event overhead, the prefix of the session's stream keys.
//
// The stream keys named from the index are in the session's slot too.
var appendScript = goredis.NewScript(`
local sk, mk, zk = KEYS[1], KEYS[2], KEYS[3]
local st, seq, data = ARGV[1], ARGV[2], ARGV[3]
local maxStream, maxBytes, ttl, over = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local pfx = ARGV[8]
local size = #data + over
if maxBytes > 0 and size > maxBytes then return 0 end
local function forget(s)
  local b = tonumber(redis.call('HGET', mk, 'b:' .. s) or '0')
  if b ~= 0 then redis.call('HINCRBY', mk, 'b', -b) end
  redis.call('HDEL', mk, 'b:' .. s)
  redis.call('ZREM', zk, s)
end
if redis.call('EXISTS', sk) == 0 then forget(st) end
local n = redis.call('HINCRBY', mk, 'n', 1)
redis.call('XADD', sk, n .. '-' .. seq, 'd', data)
redis.call('HINCRBY', mk, 'b', size)
redis.call('HINCRBY', mk, 'b:' .. st, size)
redis.call('ZADD', zk, 'NX', n, st)
local function evict(s)
  local key = pfx .. s
  local e = redis.call('XRANGE', key, '-', '+', 'COUNT', 1)
  if #e == 0 then forget(s) return end
  local sz = #e[1][2][2] + over
  redis.call('XDEL', key, e[1][1])
  redis.call('HINCRBY', mk, 'b', -sz)
  redis.call('HINCRBY', mk, 'b:' .. s, -sz)
  local nx = redis.call('XRANGE', key, '-', '+', 'COUNT', 1)
  if #nx == 0 then
    redis.call('DEL', key)
    forget(s)
  else
    redis.call('ZADD', zk, tonumber(string.match(nx[1][1], '^%d+')), s)
  end
end
if maxStream > 0 then
  while redis.call('XLEN', sk) > maxStream do evict(st) end
end
if maxBytes > 0 then
  while tonumber(redis.call('HGET', mk, 'b')) > maxBytes do
    local h = redis.call('ZRANGE', zk, 0, 0, 'WITHSCORES')
    if #h == 0 or tonumber(h[2]) >= n then break end
    evict(h[1])
  end
end
if ttl > 0 then
  redis.call('PEXPIRE', sk, ttl)
  redis.call('PEXPIRE', mk, ttl)
  redis.call('PEXPIRE', zk, ttl)
end
return 1
`)

// deleteSessionScript deletes every key of a session.
// KEYS: meta hash, stream index. ARGV: the prefix of the stream keys.
var deleteSessionScript = goredis.NewScript(`
for _, s in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  redis.call('DEL', ARGV[1] .. s)
end
redis.call('DEL', KEYS[1], KEYS[2])
return 1
`)

// Append implements pmcp.EventStore: one script, one round trip.
func (s *EventStore) Append(ctx context.Context, sessionID, streamID string, seq uint64, data []byte) error {
	tag := s.sessionTag(sessionID)
	ttl := int64(0)
	if s.ttl > 0 {
		ttl = max(s.ttl.Milliseconds(), 1)
	}
	return appendScript.Run(ctx, s.rdb, []string{tag + ":s:" + streamID, tag + ":m", tag + ":z"},
		streamID, seq, data, s.maxStream, s.maxBytes, ttl, DefaultEventOverhead, tag+":s:").Err()
}

// After implements pmcp.EventStore.
func (s *EventStore) After(ctx context.Context, sessionID, streamID string, after uint64) ([]pmcp.StoredEvent, error) {
	msgs, err := s.rdb.XRange(ctx, s.sessionTag(sessionID)+":s:"+streamID, "-", "+").Result()
	if err != nil {
		return nil, err
	}
	var out []pmcp.StoredEvent
	for _, m := range msgs {
		_, seqPart, ok := strings.Cut(m.ID, "-")
		if !ok {
			return nil, ErrCorrupt
		}
		seq, err := strconv.ParseUint(seqPart, 10, 64)
		if err != nil {
			return nil, ErrCorrupt
		}
		if seq <= after {
			continue
		}
		d, _ := m.Values["d"].(string)
		out = append(out, pmcp.StoredEvent{Seq: seq, Data: []byte(d)})
	}
	return out, nil
}

// DeleteSession implements pmcp.EventStore.
func (s *EventStore) DeleteSession(ctx context.Context, sessionID string) error {
	tag := s.sessionTag(sessionID)
	return deleteSessionScript.Run(ctx, s.rdb, []string{tag + ":m", tag + ":z"}, tag+":s:").Err()
}
