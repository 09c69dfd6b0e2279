// Package redis keeps the state pmcp replicas must share in Redis, so that
// several processes behind a load balancer serve one MCP server. It is a
// separate module (github.com/gopmcp/pmcp/redis) so that the core does not
// depend on go-redis.
//
// Every type takes a go-redis v9 UniversalClient, so a single node,
// Sentinel and Cluster all work; the caller owns and closes the client.
// Keys a Lua script touches together share a hash tag, so that each
// script touches one cluster slot (a rate-limit bucket is one key, so
// buckets spread over the slots).
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
//   - Buckets is a gateway.Buckets: the token buckets of `pmcp gateway`'s
//     rate limits, one atomic Lua script per Take on Redis's clock, so
//     every replica draws from the same buckets.
//
// Quick start: one replica of a server that several share (the body of
// the package's Example, which compiles), each started with its own name
// and address and the same key ring, Redis and forwarding secret:
//
//	ctx := context.Background()
//	rdb := goredis.NewUniversalClient(&goredis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}})
//	defer rdb.Close()
//	// Every replica seals requestState with the same keys.
//	key, err := reqstate.KeyFromBase64("k1", os.Getenv("PMCP_STATE_KEY"))
//	if err != nil {
//		log.Fatal(err)
//	}
//	bus, err := redis.NewBus(ctx, rdb, redis.BusOptions{})
//	if err != nil {
//		log.Fatal(err)
//	}
//	store, err := redis.NewTaskStore(ctx, rdb, redis.TaskStoreOptions{})
//	if err != nil {
//		log.Fatal(err)
//	}
//	sessions, err := redis.NewSessions(ctx, rdb, redis.SessionsOptions{
//		Replica: "replica-1", Advertise: "10.0.0.1:8080",
//		Secret: []byte(os.Getenv("PMCP_FORWARD_SECRET")),
//	})
//	if err != nil {
//		log.Fatal(err)
//	}
//	srv, err := pmcp.NewServer(pmcp.ServerOptions{
//		Name: "example", Version: "1.0.0",
//		EventBus:         bus,
//		RequestStateKeys: []reqstate.Key{key},
//		Tasks:            &pmcp.TaskOptions{Store: store, ReplicaID: "replica-1"},
//	})
//	if err != nil {
//		log.Fatal(err)
//	}
//	h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{
//		EventStore:    redis.NewEventStore(rdb, redis.EventStoreOptions{}),
//		SessionStore:  sessions,
//		SessionRouter: sessions,
//		AllowedHosts:  []string{"10.0.0.1"},
//	})
//	defer h.Close()
//	if err := http.ListenAndServe("10.0.0.1:8080", h); err != nil {
//		log.Print(err)
//	}
//
// When Redis is unreachable, calls fail with the client's error (nothing
// panics or hangs past the client's timeouts) and every value recovers on
// its own once Redis is back.
package redis
