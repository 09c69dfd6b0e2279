package redis_test

import (
	"context"
	"log"
	"net/http"
	"os"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/redis"
	"github.com/gopmcp/pmcp/reqstate"
	goredis "github.com/redis/go-redis/v9"
)

// Example is the quick start of the package documentation (doc.go shows
// this body; TestDocQuickStart keeps the two the same): one replica of a
// server that several share, each started with its own name and address
// and the same key ring, Redis and secret.
func Example() {
	ctx := context.Background()
	rdb := goredis.NewUniversalClient(&goredis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}})
	defer rdb.Close()
	// Every replica seals requestState with the same keys.
	key, err := reqstate.KeyFromBase64("k1", os.Getenv("PMCP_STATE_KEY"))
	if err != nil {
		log.Fatal(err)
	}
	bus, err := redis.NewBus(ctx, rdb, redis.BusOptions{})
	if err != nil {
		log.Fatal(err)
	}
	store, err := redis.NewTaskStore(ctx, rdb, redis.TaskStoreOptions{})
	if err != nil {
		log.Fatal(err)
	}
	sessions, err := redis.NewSessions(ctx, rdb, redis.SessionsOptions{
		Replica: "replica-1", Advertise: "10.0.0.1:8080",
		Secret: []byte(os.Getenv("PMCP_FORWARD_SECRET")),
	})
	if err != nil {
		log.Fatal(err)
	}
	srv, err := pmcp.NewServer(pmcp.ServerOptions{
		Name: "example", Version: "1.0.0",
		EventBus:         bus,
		RequestStateKeys: []reqstate.Key{key},
		Tasks:            &pmcp.TaskOptions{Store: store, ReplicaID: "replica-1"},
	})
	if err != nil {
		log.Fatal(err)
	}
	h := pmcp.NewStreamableHTTPHandler(srv, pmcp.StreamableHTTPOptions{
		EventStore:    redis.NewEventStore(rdb, redis.EventStoreOptions{}),
		SessionStore:  sessions,
		SessionRouter: sessions,
		AllowedHosts:  []string{"10.0.0.1"},
	})
	defer h.Close()
	if err := http.ListenAndServe("10.0.0.1:8080", h); err != nil {
		log.Print(err)
	}
}
