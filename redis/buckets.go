package redis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/gopmcp/pmcp/gateway"
)

// DefaultBucketsPrefix prefixes the keys of Buckets when
// BucketsOptions.Prefix is empty.
const DefaultBucketsPrefix = "pmcp:rl"

// BucketsOptions configure Buckets. The zero value works.
type BucketsOptions struct {
	// Prefix starts every bucket's key ("<prefix>:<key>"); gateways that
	// share a rule set share a prefix. Empty means DefaultBucketsPrefix.
	Prefix string
}

// Buckets is a gateway.Buckets kept in Redis, so that every replica of a
// gateway draws from the same buckets: a rule of 5 calls a second admits
// 5 a second in total, not 5 per replica.
//
// Each Take is one Lua script, atomic on the server: it refills the
// bucket by the time passed since its last use on Redis's own clock
// (TIME, so replicas' clocks never matter), takes a token or computes how
// long until one is there, and stores the bucket with a TTL of the time
// it takes to refill completely: an idle bucket expires exactly when it
// would be full anyway, so Redis keeps only buckets in use. Each script
// touches one key, so Redis Cluster spreads buckets over its slots.
type Buckets struct {
	rdb    goredis.UniversalClient
	prefix string
}

var _ gateway.Buckets = (*Buckets)(nil)

// NewBuckets returns Buckets on rdb, which the caller keeps owning and
// closes after the last Take. It does not contact Redis.
func NewBuckets(rdb goredis.UniversalClient, opts BucketsOptions) *Buckets {
	if opts.Prefix == "" {
		opts.Prefix = DefaultBucketsPrefix
	}
	return &Buckets{rdb: rdb, prefix: opts.Prefix + ":"}
}

// takeScript is one Take: refill by the server's clock, take one token or
// say how long until one is there.
//
// KEYS: the bucket (a hash: tokens, at = server time in microseconds).
// ARGV: perSecond, burst.
//
// Returns 0 when a token was taken, else the microseconds until one will
// be there (rounded up, so waiting that long is always enough; at most
// ten years, for absurdly slow rates).
var takeScript = goredis.NewScript(`
if redis.replicate_commands then redis.replicate_commands() end
local maxus = 315360000000000 -- ten years, in microseconds
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local s = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens, at = tonumber(s[1]), tonumber(s[2])
if tokens == nil or at == nil then
  tokens, at = burst, now
end
if now > at then
  tokens = math.min(burst, tokens + (now - at) * rate / 1000000)
  at = now
end
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
else
  wait = math.min(math.ceil((1 - tokens) * 1000000 / rate), maxus)
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'at', string.format('%d', at))
local ttl = math.min(math.ceil((burst - tokens) * 1000 / rate), maxus / 1000) + 1000
redis.call('PEXPIRE', KEYS[1], string.format('%d', ttl))
return wait
`)

// errBadRule is wrapped by Take's error for a rule no bucket can follow.
var errBadRule = errors.New("redis: bucket rule needs perSecond > 0 and burst ≥ 1")

// Take implements gateway.Buckets: it takes one token from the bucket
// named key (refilling at perSecond up to burst, starting full) and
// returns 0, or how long until a token will be there. An error means
// Redis could not be asked (or the rule is invalid: perSecond must be a
// positive finite number and burst at least 1).
func (b *Buckets) Take(ctx context.Context, key string, perSecond float64, burst int) (time.Duration, error) {
	if !(perSecond > 0) || math.IsInf(perSecond, 0) || burst < 1 {
		return 0, fmt.Errorf("%w (got %v, %d)", errBadRule, perSecond, burst)
	}
	us, err := takeScript.Run(ctx, b.rdb, []string{b.prefix + key},
		strconv.FormatFloat(perSecond, 'g', -1, 64), strconv.Itoa(burst)).Int64()
	if err != nil {
		return 0, fmt.Errorf("redis: rate-limit bucket: %w", err)
	}
	return time.Duration(us) * time.Microsecond, nil
}
