package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/redis"
	"github.com/gopmcp/pmcp/reqstate"
	goredis "github.com/redis/go-redis/v9"
)

// stateKeysEnv holds the shared requestState key ring when --state-key is
// not given (a flag value shows in the process list; the variable does not).
const stateKeysEnv = "PMCP_STATE_KEYS"

// replicaFlags are the flags of `pmcp serve` that make it one replica of
// several sharing a Redis server.
type replicaFlags struct {
	redisURL  *string
	replica   *string
	advertise *string
	stateKeys *string
	taskLease *time.Duration
}

func addReplicaFlags(fs *flag.FlagSet) *replicaFlags {
	return &replicaFlags{
		redisURL:  fs.String("redis", "", "run as one replica of several sharing this Redis server (redis://[user:pass@]host:port/db or rediss://…): resumable events, list changes and legacy sessions are shared"),
		replica:   fs.String("replica-id", "", "with --redis: this replica's unique name (letters, digits, '_', '-'); default: host name and process id"),
		advertise: fs.String("advertise", "", "with --redis: host:port the other replicas reach this one at; default: the --http address when it names a host"),
		taskLease: fs.Duration("task-lease", 0, "with --redis: the lease a replica holds on each task it runs, renewed every third of it; a task whose replica died fails once its lease lapses (default 30s)"),
		stateKeys: fs.String("state-key", "", "with --redis: the requestState key ring shared by every replica, ID:BASE64[,ID:BASE64…] (32-byte secrets, the first seals); default: $"+stateKeysEnv),
	}
}

// replicaSetup is what a replica adds to the server and handler options.
type replicaSetup struct {
	rdb      goredis.UniversalClient
	bus      *redis.Bus
	sessions *redis.Sessions
	tasks    *redis.TaskStore
}

// close releases the replica's Redis resources, after the handler closed.
func (rs *replicaSetup) close() {
	if rs == nil {
		return
	}
	if rs.tasks != nil {
		_ = rs.tasks.Close()
	}
	if rs.sessions != nil {
		_ = rs.sessions.Close()
	}
	if rs.bus != nil {
		_ = rs.bus.Close()
	}
	_ = rs.rdb.Close()
}

// setup connects to Redis when --redis is set and fills in the options;
// nil without --redis. Errors are configuration errors (exit 2) unless
// Redis cannot be reached.
func (f *replicaFlags) setup(ctx context.Context, httpAddr, path string, sopts *pmcp.ServerOptions, hopts *pmcp.StreamableHTTPOptions, log *slog.Logger) (*replicaSetup, error) {
	if *f.redisURL == "" {
		if *f.replica != "" || *f.advertise != "" || *f.stateKeys != "" || *f.taskLease != 0 {
			return nil, usageError{errors.New("--replica-id, --advertise, --state-key and --task-lease need --redis")}
		}
		return nil, nil
	}
	if *f.taskLease < 0 {
		return nil, usageError{errors.New("--task-lease must not be negative")}
	}
	ring := *f.stateKeys
	if ring == "" {
		ring = os.Getenv(stateKeysEnv)
	}
	if ring == "" {
		return nil, usageError{fmt.Errorf("--redis needs the requestState key ring shared by every replica: --state-key or $%s (%w)", stateKeysEnv, pmcp.ErrSharedKeysRequired)}
	}
	keys, err := parseKeyRing(ring)
	if err != nil {
		return nil, usageError{err}
	}
	name := *f.replica
	if name == "" {
		host, _ := os.Hostname()
		name = sanitizeName(host) + "-" + strconv.Itoa(os.Getpid())
	}
	adv := *f.advertise
	if adv == "" {
		host, port, err := net.SplitHostPort(httpAddr)
		if err != nil || host == "" || port == "0" || net.ParseIP(host).IsUnspecified() {
			return nil, usageError{errors.New("--redis needs --advertise host:port when --http names no host or port")}
		}
		adv = httpAddr
	}
	ropts, err := goredis.ParseURL(*f.redisURL)
	if err != nil {
		return nil, usageError{fmt.Errorf("--redis: %w", err)}
	}
	// go-redis logs through one process-wide logger; this process has one
	// server, so its lines become records of the server's log (never
	// unformatted lines on stderr).
	goredis.SetLogger(redis.NewGoRedisLogger(log))
	rs := &replicaSetup{rdb: goredis.NewClient(ropts)}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := rs.rdb.Ping(cctx).Err(); err != nil {
		rs.close()
		return nil, fmt.Errorf("--redis: %w", err)
	}
	if rs.bus, err = redis.NewBus(cctx, rs.rdb, redis.BusOptions{}); err != nil {
		rs.close()
		return nil, fmt.Errorf("--redis: %w", err)
	}
	// The forwarding secret is derived from the shared key ring, so that
	// one secret configures a replica.
	m := hmac.New(sha256.New, keys[0].Secret)
	m.Write([]byte("pmcp replica forwarding"))
	rs.sessions, err = redis.NewSessions(cctx, rs.rdb, redis.SessionsOptions{
		Replica: name, Advertise: adv, Path: path, Secret: m.Sum(nil), Logger: log,
	})
	if err != nil {
		rs.close()
		var nerr error = err
		if errors.Is(err, redis.ErrReplicaName) || errors.Is(err, redis.ErrAdvertise) {
			nerr = usageError{err}
		}
		return nil, nerr
	}
	// Tasks live in Redis too, with the same prefix and options on every
	// replica, so that any replica answers tasks/* for a task another one
	// runs; the runner's lease names this replica, and a replica that dies
	// leaves leases that lapse, after which the sweep fails its tasks.
	if rs.tasks, err = redis.NewTaskStore(cctx, rs.rdb, redis.TaskStoreOptions{}); err != nil {
		rs.close()
		return nil, fmt.Errorf("--redis: %w", err)
	}
	sopts.Tasks = &pmcp.TaskOptions{Store: rs.tasks, ReplicaID: name, LeaseTTL: *f.taskLease}
	sopts.EventBus = rs.bus
	sopts.RequestStateKeys = keys
	hopts.EventStore = redis.NewEventStore(rs.rdb, redis.EventStoreOptions{})
	hopts.SessionStore = rs.sessions
	hopts.SessionRouter = rs.sessions
	log.Info("pmcp: serving as a replica", "replica", name, "advertise", adv)
	return rs, nil
}

// usageError marks a configuration error (exit status 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// parseKeyRing parses ID:BASE64[,ID:BASE64…].
func parseKeyRing(s string) ([]reqstate.Key, error) {
	var keys []reqstate.Key
	for part := range strings.SplitSeq(s, ",") {
		id, b64, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			return nil, errors.New("--state-key: each key is ID:BASE64")
		}
		k, err := reqstate.KeyFromBase64(id, b64)
		if err != nil {
			return nil, fmt.Errorf("--state-key: %w", err)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

func sanitizeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	if len(b) > 40 {
		b = b[:40]
	}
	if len(b) == 0 {
		return "pmcp"
	}
	return string(b)
}
