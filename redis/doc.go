// Package redis keeps the state pmcp replicas must share in Redis, so that
// several processes behind a load balancer serve one MCP server. It is a
// separate module (github.com/gopmcp/pmcp/redis) so that the core does not
// depend on go-redis.
//
// Every type takes a go-redis v9 UniversalClient, so a single node,
// Sentinel and Cluster all work; the caller owns and closes the client.
// Every key is hash-tagged so that each Lua script touches one cluster
// slot.
//
//   - TaskStore is a tasks.Store: the same tasks.Rules as the in-memory
//     store applied with a Lua compare-and-swap per write; any replica
//     reads, changes, watches and sweeps any task, and a task whose runner
//     died fails once its lease lapses.
//   - EventStore is a pmcp.EventStore on Redis Streams: a legacy client
//     resumes a broken SSE stream (Last-Event-ID) from the events any
//     replica stored.
//   - Bus is a pmcp.EventBus on Pub/Sub: list changes and resource updates
//     made on one replica reach the listen and GET streams of all of them.
//
// Quick start:
//
//	rdb := goredis.NewUniversalClient(&goredis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}})
//	bus, err := redis.NewBus(ctx, rdb, redis.BusOptions{})
//	...
//	srv, err := pmcp.NewServer(pmcp.ServerOptions{EventBus: bus})
//	h := pmcp.NewStreamableHTTPHandler(srv, &pmcp.StreamableHTTPOptions{
//		EventStore: redis.NewEventStore(rdb, redis.EventStoreOptions{}),
//	})
//	store, err := redis.NewTaskStore(ctx, rdb, redis.TaskStoreOptions{})
//
// When Redis is unreachable, calls fail with the client's error (nothing
// panics or hangs past the client's timeouts) and every value recovers on
// its own once Redis is back.
package redis
