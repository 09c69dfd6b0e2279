// Package redisserver is the bench server for this SDK configured as
// replicas sharing Redis (see bench/README.md): the Redis event store,
// event bus and session routing of package redis, with shared
// requestState keys.
//
// PMCP_BENCH_REDIS (host:port) names the Redis server.
// PMCP_BENCH_REPLICAS (default 2) replicas run in the process, behind an
// in-process load balancer: round robin (half of the legacy requests are
// then forwarded to their session's owner over loopback HTTP, the worst
// case) or, with Sticky, routing on the session id's replica prefix as
// the README recommends (no forwarding).
package redisserver

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/bench/internal/harness"
	"github.com/gopmcp/pmcp/redis"
	"github.com/gopmcp/pmcp/reqstate"
	"github.com/gopmcp/pmcp/transport/stdio"
	goredis "github.com/redis/go-redis/v9"
)

type echoIn struct {
	Text string `json:"text"`
}

type addIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

func newServer(opts pmcp.ServerOptions) *pmcp.Server {
	opts.Name, opts.Version = "bench-pmcp-redis", "1.0.0"
	s, err := pmcp.NewServer(opts)
	must(err)
	must(pmcp.AddTool(s, &pmcp.Tool{Name: "echo", Description: "Echoes its text."},
		func(_ context.Context, _ *pmcp.RequestHandlerExtra, in echoIn) (string, error) { return in.Text, nil }))
	must(pmcp.AddTool(s, &pmcp.Tool{Name: "add", Description: "Adds a and b."},
		func(_ context.Context, _ *pmcp.RequestHandlerExtra, in addIn) (string, error) {
			return strconv.FormatFloat(in.A+in.B, 'g', -1, 64), nil
		}))
	return s
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// replica starts one replica: its own listener (the address the other
// replica forwards to), server, bus and sessions on the shared client.
func replica(ctx context.Context, rdb goredis.UniversalClient, name string, keys []reqstate.Key, secret []byte) http.Handler {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(err)
	bus, err := redis.NewBus(ctx, rdb, redis.BusOptions{Channel: "pmcp:bench:bus"})
	must(err)
	sess, err := redis.NewSessions(ctx, rdb, redis.SessionsOptions{Replica: name, Advertise: ln.Addr().String(), Secret: secret, Prefix: "pmcp:bench:sess"})
	must(err)
	h := pmcp.NewStreamableHTTPHandler(newServer(pmcp.ServerOptions{EventBus: bus, RequestStateKeys: keys}), pmcp.StreamableHTTPOptions{
		JSONResponse: true,
		MaxSessions:  20000,
		EventStore:   redis.NewEventStore(rdb, redis.EventStoreOptions{Prefix: "pmcp:bench:ev"}),
		SessionStore: sess, SessionRouter: sess,
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	go func() { _ = http.Serve(ln, mux) }()
	return h
}

// balancer is the in-process load balancer in front of the replicas.
type balancer struct {
	hs     []http.Handler
	n      atomic.Uint64
	sticky bool
}

func (b *balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if b.sticky {
		// Route on "r<N>." at the start of Mcp-Session-Id.
		if id := r.Header.Get("Mcp-Session-Id"); len(id) > 2 && id[0] == 'r' {
			if dot := strings.IndexByte(id, '.'); dot > 1 {
				if i, err := strconv.Atoi(id[1:dot]); err == nil && i >= 0 && i < len(b.hs) {
					b.hs[i].ServeHTTP(w, r)
					return
				}
			}
		}
	}
	b.hs[b.n.Add(1)%uint64(len(b.hs))].ServeHTTP(w, r)
}

// Main runs the bench server; sticky selects prefix routing.
func Main(sticky bool) {
	harness.Main(func() http.Handler {
		addr := os.Getenv("PMCP_BENCH_REDIS")
		if addr == "" {
			must(fmt.Errorf("PMCP_BENCH_REDIS (host:port of a Redis server) is required"))
		}
		n := 2
		if v := os.Getenv("PMCP_BENCH_REPLICAS"); v != "" {
			var err error
			n, err = strconv.Atoi(v)
			must(err)
		}
		rdb := goredis.NewClient(&goredis.Options{Addr: addr, PoolSize: 64})
		ctx := context.Background()
		must(rdb.Ping(ctx).Err())
		key, err := reqstate.NewKey("bench")
		must(err)
		secret := make([]byte, 32)
		_, _ = rand.Read(secret)
		rr := &balancer{sticky: sticky}
		for i := range max(n, 1) {
			rr.hs = append(rr.hs, replica(ctx, rdb, "r"+strconv.Itoa(i), []reqstate.Key{key}, secret))
		}
		return rr
	}, func(ctx context.Context) error {
		return newServer(pmcp.ServerOptions{}).Serve(ctx, stdio.Stdio(stdio.Options{}))
	})
}
