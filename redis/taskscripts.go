package redis

import goredis "github.com/redis/go-redis/v9"

// The task store's Lua scripts. Each one touches only keys of one store,
// which all share the hash tag {prefix}, so every script is a single-slot
// script on Redis Cluster.

// createScript stores a new task if the bounds allow.
//
// KEYS: task hash, owner index, expiry index, lease index, sequence.
// ARGV: max tasks per owner, max tasks, id, expiry score ("+inf" when
// unlimited), lease score ("" when unleased), physical TTL in ms (0 =
// none), then the record's field/value pairs.
//
// Returns 1, or -1 (owner bound), -2 (store bound), -3 (id exists).
var createScript = goredis.NewScript(`
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[1]) then return -1 end
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[2]) then return -2 end
if redis.call('EXISTS', KEYS[1]) == 1 then return -3 end
local seq = redis.call('INCR', KEYS[5])
redis.call('HSET', KEYS[1], unpack(ARGV, 7))
redis.call('ZADD', KEYS[2], seq, ARGV[3])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[3])
if ARGV[5] ~= '' then redis.call('ZADD', KEYS[4], ARGV[5], ARGV[3]) end
local ttl = tonumber(ARGV[6])
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
return 1
`)

// putScript replaces a task's record if its rev is unchanged
// (compare-and-swap), keeps the lease index in step and publishes the new
// snapshot. The key's TTL is left alone: updates never extend a lifetime.
//
// KEYS: task hash, lease index.
// ARGV: expected rev, id, lease score ("" = no lease), channel, payload
// ("" = publish nothing), then the record's field/value pairs.
//
// Returns 1 when written, 0 when the rev moved (or the task is gone).
var putScript = goredis.NewScript(`
if redis.call('HGET', KEYS[1], 'rev') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 6))
if ARGV[3] == '' then
  redis.call('ZREM', KEYS[2], ARGV[2])
else
  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])
end
if ARGV[5] ~= '' then redis.call('PUBLISH', ARGV[4], ARGV[5]) end
return 1
`)

// deleteScript deletes a task if its rev is unchanged, removes it from the
// indexes and tells watchers it is gone.
//
// KEYS: task hash, owner index, expiry index, lease index.
// ARGV: expected rev, id, channel.
var deleteScript = goredis.NewScript(`
if redis.call('HGET', KEYS[1], 'rev') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('ZREM', KEYS[3], ARGV[2])
redis.call('ZREM', KEYS[4], ARGV[2])
redis.call('PUBLISH', ARGV[3], ARGV[2] .. '\n')
return 1
`)
