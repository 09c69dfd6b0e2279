package redis

import (
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/eventstoretest"
)

func TestEventStoreContract(t *testing.T) {
	eventstoretest.Run(t, func(t *testing.T, l eventstoretest.Limits) pmcp.EventStore {
		return NewEventStore(needRedis(t), EventStoreOptions{Prefix: uniquePrefix("events"), MaxStreamEvents: l.MaxStreamEvents, MaxSessionBytes: l.MaxSessionBytes})
	})
}

// Two replicas (two clients, two store values) share the streams: what one
// appended, the other replays; and every key carries the idle TTL.
func TestEventStoreAcrossReplicasAndTTL(t *testing.T) {
	prefix := uniquePrefix("events")
	a := NewEventStore(needRedis(t), EventStoreOptions{Prefix: prefix, IdleTTL: time.Minute})
	rdb := needRedis(t)
	b := NewEventStore(rdb, EventStoreOptions{Prefix: prefix, IdleTTL: time.Minute})
	ctx := t.Context()
	for i := uint64(1); i <= 3; i++ {
		if err := a.Append(ctx, "sess", "7", i, []byte{byte('a' + i)}); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := b.After(ctx, "sess", "7", 1)
	if err != nil || len(evs) != 2 || evs[0].Seq != 2 || string(evs[1].Data) != "d" {
		t.Fatalf("replica b replays %+v, %v", evs, err)
	}
	keys, err := rdb.Keys(ctx, prefix+"*").Result()
	if err != nil || len(keys) != 3 {
		t.Fatalf("keys %q, %v", keys, err)
	}
	for _, k := range keys {
		if ttl := rdb.PTTL(ctx, k).Val(); ttl <= 0 || ttl > time.Minute {
			t.Fatalf("key %s has TTL %v, want the idle TTL", k, ttl)
		}
	}
	if err := b.DeleteSession(ctx, "sess"); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, keys...).Val(); n != 0 {
		t.Fatalf("%d keys left after DeleteSession", n)
	}
}
