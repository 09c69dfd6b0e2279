package redis

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gopmcp/pmcp"
	goredis "github.com/redis/go-redis/v9"
)

// Defaults of SessionsOptions.
const (
	// DefaultSessionPrefix prefixes the keys of Sessions.
	DefaultSessionPrefix = "pmcp:sess"
	// DefaultRegistryTTL is how long a replica's address stays in the
	// registry without renewal; a replica renews it every third of it.
	// A replica killed without notice is presumed dead after this long
	// (sooner by the peers that fail to dial it).
	DefaultRegistryTTL = 15 * time.Second
	// DefaultForwardDialTimeout bounds connecting to the owner replica.
	DefaultForwardDialTimeout = 2 * time.Second
	// DefaultForwardMaxAge is how old a forwarding signature may be.
	DefaultForwardMaxAge = 30 * time.Second
	// DefaultRouteRetry is how long a request retries the lookup of its
	// session's owner while Redis fails (see SessionsOptions.RouteRetry).
	DefaultRouteRetry = 2 * time.Second
	// MinSecretBytes is the shortest SessionsOptions.Secret accepted.
	MinSecretBytes = 16
	// ForwardHeader carries the signature of a request forwarded between
	// replicas: a replica never forwards a request that bears a valid one
	// again (it adopts the session instead, or answers 404).
	ForwardHeader = "Pmcp-Replica-Forward"
)

// Errors of NewSessions.
var (
	ErrReplicaName = errors.New("redis: the replica name must be 1-64 letters, digits, '_' or '-'")
	ErrSecret      = fmt.Errorf("redis: the forwarding secret must have at least %d bytes", MinSecretBytes)
	ErrAdvertise   = errors.New("redis: Advertise must be host:port, reachable by the other replicas")
)

// SessionsOptions configure Sessions. Replica, Advertise and Secret are
// required; every other zero field means its default.
type SessionsOptions struct {
	// Replica names this replica: unique among the replicas, stable
	// across its restarts if possible, letters, digits, '_' and '-'. It
	// prefixes the session ids this replica mints ("<replica>.<random>").
	Replica string
	// Advertise is the host:port other replicas reach this one at.
	Advertise string
	// Path is the MCP endpoint path on every replica; "" means "/mcp".
	Path string
	// Secret authenticates forwarded requests (HMAC-SHA256); every
	// replica has the same one. At least MinSecretBytes.
	Secret []byte
	// Prefix prefixes every key; "" means DefaultSessionPrefix.
	Prefix string
	// RecordTTL is how long a session record lives after its owner last
	// renewed it (owners renew their records with the registry). Zero
	// means pmcp.DefaultSessionIdleTimeout.
	RecordTTL time.Duration
	// RegistryTTL is the registry entry's lifetime; zero means
	// DefaultRegistryTTL.
	RegistryTTL time.Duration
	// RouteRetry is how long a request whose session cannot be looked up
	// (Redis failing) keeps retrying before it gets 503. Zero means
	// DefaultRouteRetry; negative means no retry.
	RouteRetry time.Duration
	// Transport forwards requests; nil means a transport dialing with
	// DefaultForwardDialTimeout, without proxy.
	Transport http.RoundTripper
	// Logger receives warnings; nil discards them.
	Logger *slog.Logger
}

// Sessions shares legacy sessions between replicas: it is the
// pmcp.SessionStore and the pmcp.SessionRouter of one replica.
//
// Each replica registers its address under its name (renewed every
// RegistryTTL/3). A session's record names its owner. A request for a
// session held elsewhere is forwarded to the owner's registered address
// (never an address taken from the request), with the original Host and
// Authorization, which the owner checks again, and a signature that stops
// the owner from forwarding it further. When the owner is not registered
// or cannot be dialed, the router declines and the handler adopts the
// session (a compare-and-set of the record's owner).
type Sessions struct {
	rdb    goredis.UniversalClient
	opts   SessionsOptions
	log    *slog.Logger
	proxy  *httputil.ReverseProxy
	regKey string
	done   chan struct{}
	wg     sync.WaitGroup

	mu        sync.Mutex
	owned     map[string]struct{} // session ids whose records this replica renews
	dead      map[string]time.Time
	routes    map[string]route // session id -> owner and address, briefly
	closeOnce sync.Once
}

var (
	_ pmcp.SessionStore  = (*Sessions)(nil)
	_ pmcp.SessionRouter = (*Sessions)(nil)
)

// NewSessions registers this replica in rdb (which the caller keeps
// owning) and starts renewing its registry entry until Close.
func NewSessions(ctx context.Context, rdb goredis.UniversalClient, opts SessionsOptions) (*Sessions, error) {
	if !validReplicaName(opts.Replica) {
		return nil, ErrReplicaName
	}
	if len(opts.Secret) < MinSecretBytes {
		return nil, ErrSecret
	}
	if _, port, err := net.SplitHostPort(opts.Advertise); err != nil || port == "" || port == "0" {
		return nil, ErrAdvertise
	}
	if opts.Path == "" {
		opts.Path = "/mcp"
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultSessionPrefix
	}
	if opts.RecordTTL <= 0 {
		opts.RecordTTL = pmcp.DefaultSessionIdleTimeout
	}
	if opts.RegistryTTL <= 0 {
		opts.RegistryTTL = DefaultRegistryTTL
	}
	if opts.RouteRetry == 0 {
		opts.RouteRetry = DefaultRouteRetry
	}
	s := &Sessions{rdb: rdb, opts: opts, log: opts.Logger, done: make(chan struct{}),
		owned: map[string]struct{}{}, dead: map[string]time.Time{}, routes: map[string]route{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.regKey = s.registryKey(opts.Replica)
	tr := opts.Transport
	if tr == nil {
		tr = &http.Transport{
			DialContext:         (&net.Dialer{Timeout: DefaultForwardDialTimeout}).DialContext,
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     90 * time.Second,
		}
	}
	s.proxy = &httputil.ReverseProxy{
		Rewrite:   s.rewrite,
		Transport: tr,
		// No FlushInterval: ReverseProxy flushes text/event-stream and
		// unknown-length responses on every write anyway, and flushing
		// JSON replies at each write only costs system calls.
		ErrorHandler: s.proxyError,
		BufferPool:   copyBuffers{},
		ErrorLog:     slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	if err := s.register(ctx); err != nil {
		return nil, err
	}
	s.wg.Add(1)
	go s.heartbeat()
	return s, nil
}

// Close stops renewing and removes the registry entry, so that the other
// replicas adopt this one's sessions at once. It does not close rdb.
func (s *Sessions) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.done)
		s.wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		err = s.rdb.Del(ctx, s.regKey).Err()
	})
	return err
}

func validReplicaName(n string) bool {
	if n == "" || len(n) > 64 {
		return false
	}
	for _, c := range n {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func (s *Sessions) registryKey(replica string) string {
	return s.opts.Prefix + ":replica:" + replica
}

// recordKey is the hash of one session; tagged per session for Cluster.
func (s *Sessions) recordKey(id string) string {
	return s.opts.Prefix + ":{" + id + "}"
}

func (s *Sessions) register(ctx context.Context) error {
	return s.rdb.Set(ctx, s.regKey, s.opts.Advertise, s.opts.RegistryTTL).Err()
}

// heartbeat renews the registry entry and the records this replica owns.
func (s *Sessions) heartbeat() {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.RegistryTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.RegistryTTL/3)
		if err := s.register(ctx); err != nil {
			s.log.Warn("pmcp/redis: cannot renew the replica registry entry", "replica", s.opts.Replica, "error", err)
		}
		s.mu.Lock()
		ids := make([]string, 0, len(s.owned))
		for id := range s.owned {
			ids = append(ids, id)
		}
		now := time.Now()
		for owner, at := range s.dead {
			if now.Sub(at) > s.opts.RegistryTTL {
				delete(s.dead, owner)
			}
		}
		s.mu.Unlock()
		if len(ids) > 0 {
			pipe := s.rdb.Pipeline()
			for _, id := range ids {
				pipe.PExpire(ctx, s.recordKey(id), s.opts.RecordTTL)
			}
			_, _ = pipe.Exec(ctx)
		}
		cancel()
	}
}

// NewSessionID returns "<replica>.<128 random bits>".
func (s *Sessions) NewSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return s.opts.Replica + "." + base64.RawURLEncoding.EncodeToString(b[:])
}

// SaveSession records a session owned by this replica.
func (s *Sessions) SaveSession(ctx context.Context, rec pmcp.SessionRecord) error {
	k := s.recordKey(rec.ID)
	pipe := s.rdb.TxPipeline()
	pipe.HSet(ctx, k, "owner", s.opts.Replica, "principal", rec.Principal, "init", rec.InitParams, "epoch", rec.Epoch)
	pipe.PExpire(ctx, k, s.opts.RecordTTL)
	// The registry entry goes with the record: after Redis lost its data
	// (a restart without persistence), no peer must see the record of a
	// live owner without the owner's entry, and adopt it.
	pipe.Set(ctx, s.regKey, s.opts.Advertise, s.opts.RegistryTTL)
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	s.own(rec.ID, true)
	return nil
}

func (s *Sessions) own(id string, yes bool) {
	s.mu.Lock()
	if yes {
		s.owned[id] = struct{}{}
	} else {
		delete(s.owned, id)
	}
	s.mu.Unlock()
}

// DeleteSession removes a session's record.
func (s *Sessions) DeleteSession(ctx context.Context, id string) error {
	s.own(id, false)
	return s.rdb.Del(ctx, s.recordKey(id)).Err()
}

// adoptScript sets the owner and increments the epoch if the owner is
// still the one read; returns the new epoch, or -1 when another replica
// changed the owner first.
var adoptScript = goredis.NewScript(`
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return -1 end
redis.call('HSET', KEYS[1], 'owner', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return redis.call('HINCRBY', KEYS[1], 'epoch', 1)
`)

// AdoptSession takes the session over when its owner is gone: not
// registered, or recently failed to answer a dial from this replica, or
// this very replica (restarted under the same name).
func (s *Sessions) AdoptSession(ctx context.Context, id string) (pmcp.SessionRecord, error) {
	k := s.recordKey(id)
	for range 4 {
		vals, err := s.rdb.HMGet(ctx, k, "owner", "principal", "init").Result()
		if err != nil {
			return pmcp.SessionRecord{}, err
		}
		owner, ok := vals[0].(string)
		if !ok {
			return pmcp.SessionRecord{}, pmcp.ErrNoSession
		}
		principal, _ := vals[1].(string)
		initParams, _ := vals[2].(string)
		if owner != s.opts.Replica && !s.isDead(owner) {
			n, err := s.rdb.Exists(ctx, s.registryKey(owner)).Result()
			if err != nil {
				return pmcp.SessionRecord{}, err
			}
			if n > 0 {
				return pmcp.SessionRecord{}, pmcp.ErrSessionOwned
			}
		}
		epoch, err := adoptScript.Run(ctx, s.rdb, []string{k}, owner, s.opts.Replica, s.opts.RecordTTL.Milliseconds()).Int64()
		if err != nil {
			return pmcp.SessionRecord{}, err
		}
		if epoch < 0 {
			continue // another replica adopted it first: look again
		}
		s.own(id, true)
		return pmcp.SessionRecord{ID: id, Principal: principal, InitParams: []byte(initParams), Epoch: uint32(epoch)}, nil
	}
	return pmcp.SessionRecord{}, pmcp.ErrSessionOwned
}

func (s *Sessions) isDead(owner string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.dead[owner]
	return ok && time.Since(at) < s.opts.RegistryTTL
}

func (s *Sessions) markDead(owner string) {
	s.mu.Lock()
	s.dead[owner] = time.Now()
	s.mu.Unlock()
}

// A route is where a session's requests were last forwarded. Routes are
// cached for routeTTL, so that a session's requests cost no Redis round
// trip on the replicas that forward them; a dial failure drops the route
// at once. At most maxRoutes are cached (the cache is cleared when full).
type route struct {
	owner, addr string
	until       time.Time
}

const (
	routeTTL  = 2 * time.Second
	maxRoutes = 16384
)

func (s *Sessions) cachedRoute(id string) (owner, addr string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rt, ok := s.routes[id]
	if !ok || time.Now().After(rt.until) {
		return "", "", false
	}
	return rt.owner, rt.addr, true
}

func (s *Sessions) cacheRoute(id, owner, addr string) {
	s.mu.Lock()
	if len(s.routes) >= maxRoutes {
		clear(s.routes)
	}
	s.routes[id] = route{owner: owner, addr: addr, until: time.Now().Add(routeTTL)}
	s.mu.Unlock()
}

func (s *Sessions) dropRoute(id string) {
	s.mu.Lock()
	delete(s.routes, id)
	s.mu.Unlock()
}

// copyBuffers recycles the proxy's copy buffers (ReverseProxy would
// allocate 32 KiB per forwarded request).
type copyBuffers struct{}

var copyBufferPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (copyBuffers) Get() []byte  { return *(copyBufferPool.Get().(*[]byte)) }
func (copyBuffers) Put(b []byte) { copyBufferPool.Put(&b) }

// forwardKey carries the target of one forwarding through the proxy.
type forwardKey struct{}

type forwarding struct {
	target   *url.URL
	owner    string
	id       string
	dialFail bool
}

// RouteSession forwards a request for a session owned by a live replica
// to it. It declines (false) for a request already forwarded, a session
// without record or owned by this replica, and an owner that is not
// registered or cannot be dialed: the handler then adopts the session or
// answers 404.
func (s *Sessions) RouteSession(w http.ResponseWriter, r *http.Request, id string) bool {
	if s.verifyForwarded(r, id) {
		return false
	}
	var body []byte
	if r.Body != nil && r.Body != http.NoBody {
		// The handler has read the body already (it is in memory): keep
		// it, to give it back if the owner cannot be dialed.
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			s.unavailable(w, err)
			return true
		}
	}
	setBody := func() {
		if body != nil {
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
		}
	}
	defer setBody() // for the handler, when the router declines
	// A cached route may be stale (its owner died and another replica
	// adopted the session): after a dial failure look again in Redis.
	for attempt := 0; attempt < 2; attempt++ {
		owner, addr, cached := "", "", false
		if attempt == 0 {
			owner, addr, cached = s.cachedRoute(id)
		}
		if !cached {
			var served bool
			owner, addr, served = s.lookupRoute(r.Context(), w, id)
			if served {
				return true
			}
			if owner == "" {
				return false
			}
		} else if s.isDead(owner) {
			s.dropRoute(id)
			continue
		}
		setBody()
		f := &forwarding{target: &url.URL{Scheme: "http", Host: addr, Path: s.opts.Path}, owner: owner, id: id}
		s.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), forwardKey{}, f)))
		if !f.dialFail {
			return true
		}
		s.dropRoute(id)
		s.markDead(owner)
		if !cached {
			return false
		}
	}
	return false
}

// lookupRoute finds a session's live owner other than this replica and
// its address in Redis, and caches them. It returns owner "" when there
// is none to forward to, and served when it answered the request itself
// (Redis unavailable).
func (s *Sessions) lookupRoute(ctx context.Context, w http.ResponseWriter, id string) (owner, addr string, served bool) {
	// Redis may be failing for a moment (a failover, or go-redis failing
	// fast after a restart until its probe reconnects): retry within
	// RouteRetry rather than lose the request, which may carry the answer
	// a handler waits for.
	deadline := time.Now().Add(s.opts.RouteRetry)
	for {
		owner, addr, err := s.lookupRouteOnce(ctx, id)
		if err == nil {
			return owner, addr, false
		}
		if s.opts.RouteRetry <= 0 || time.Now().After(deadline) || ctx.Err() != nil {
			s.unavailable(w, err)
			return "", "", true
		}
		t := time.NewTimer(routeRetryStep)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// routeRetryStep is the pause between two lookups of a failing Redis.
const routeRetryStep = 100 * time.Millisecond

func (s *Sessions) lookupRouteOnce(ctx context.Context, id string) (owner, addr string, err error) {
	owner, err = s.rdb.HGet(ctx, s.recordKey(id), "owner").Result()
	if errors.Is(err, goredis.Nil) {
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	if owner == s.opts.Replica || s.isDead(owner) {
		return "", "", nil
	}
	addr, err = s.rdb.Get(ctx, s.registryKey(owner)).Result()
	if errors.Is(err, goredis.Nil) {
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	s.cacheRoute(id, owner, addr)
	return owner, addr, nil
}

func (s *Sessions) unavailable(w http.ResponseWriter, err error) {
	s.log.Warn("pmcp/redis: session routing unavailable", "error", err)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Service Unavailable: the session store is unavailable"}}`)
}

func (s *Sessions) rewrite(pr *httputil.ProxyRequest) {
	f := pr.In.Context().Value(forwardKey{}).(*forwarding)
	pr.SetURL(f.target)
	pr.Out.URL.Path, pr.Out.URL.RawPath = f.target.Path, ""
	pr.Out.URL.RawQuery = pr.In.URL.RawQuery
	pr.Out.Host = pr.In.Host // the owner checks the original Host
	pr.SetXForwarded()
	pr.Out.Header.Set(ForwardHeader, s.sign(pr.In.Method, f.id, time.Now()))
}

func (s *Sessions) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	f, _ := r.Context().Value(forwardKey{}).(*forwarding)
	var op *net.OpError
	if f != nil && errors.As(err, &op) && op.Op == "dial" {
		f.dialFail = true // nothing written: the caller adopts
		return
	}
	if errors.Is(err, context.Canceled) {
		return // the client went away
	}
	s.log.Warn("pmcp/redis: forwarding to the session's replica failed", "error", err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadGateway)
	_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Bad Gateway: the session's replica failed"}}`)
}

// sign returns "<from>.<unix ms>.<mac>" with mac = HMAC-SHA256(secret,
// from|ms|method|session id).
func (s *Sessions) sign(method, id string, at time.Time) string {
	ms := strconv.FormatInt(at.UnixMilli(), 10)
	return s.opts.Replica + "." + ms + "." + s.mac(s.opts.Replica, ms, method, id)
}

func (s *Sessions) mac(from, ms, method, id string) string {
	m := hmac.New(sha256.New, s.opts.Secret)
	for _, p := range []string{from, ms, method, id} {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// verifyForwarded reports whether r bears a valid, fresh signature.
func (s *Sessions) verifyForwarded(r *http.Request, id string) bool {
	v := r.Header.Get(ForwardHeader)
	if v == "" {
		return false
	}
	from, rest, ok := strings.Cut(v, ".")
	if !ok {
		return false
	}
	ms, mac, ok := strings.Cut(rest, ".")
	if !ok {
		return false
	}
	at, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return false
	}
	if age := time.Since(time.UnixMilli(at)); age > DefaultForwardMaxAge || age < -DefaultForwardMaxAge {
		return false
	}
	return hmac.Equal([]byte(mac), []byte(s.mac(from, ms, r.Method, id)))
}
