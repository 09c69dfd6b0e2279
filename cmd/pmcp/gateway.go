package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"reflect"
	"sync"
	"syscall"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/gopmcp/pmcp/gateway"
	"github.com/gopmcp/pmcp/proxy"
	"github.com/gopmcp/pmcp/redis"
	goredis "github.com/redis/go-redis/v9"
)

const gatewayAbout = `Serve the upstream MCP servers of a configuration file on one Streamable
HTTP endpoint, as pmcp bridge --config does (aggregation with <server>_
prefixes, both protocol eras, /healthz and /readyz), with an OAuth front
door (--auth-issuer, --auth-audience), per-caller policies, rate limits and
an audit trail. The file is the bridge's mcpServers file plus "policies",
"rateLimits" and "audit" (README, "Gateway"); unknown members are refused.

  pmcp gateway --listen 127.0.0.1:9000 --config gateway.json \
    --auth-issuer https://as.example --auth-audience https://mcp.example/mcp

SIGHUP (and, with --watch, a change of the file's content) re-reads the
file: policies, rate limits and audit settings change
at once, sessions stay; changed mcpServers are applied live (an upstream
added, removed or changed; the sessions of unchanged ones stay, a removed
one's calls in flight finish first); a file that does not parse or check is
refused and the configuration in force is kept (both are logged).`

type gatewayFlags struct {
	b                   bridgeFlags
	redisURL, stateKeys string
	// watch is --watch: the interval of polling the file for changes
	// (0: reload on SIGHUP only).
	watch time.Duration
}

func gatewayVerb() (*verb, *gatewayFlags) {
	v := newVerb("gateway", "pmcp gateway --listen ADDR --config FILE [--auth-issuer URL --auth-audience URI] [flags]", gatewayAbout)
	fs := v.fs
	f := &gatewayFlags{}
	f.b.sec.register(fs)
	fs.StringVar(&f.b.listen, "listen", "", "serve Streamable HTTP at ADDR (host:port); required")
	fs.StringVar(&f.b.path, "path", "/mcp", "HTTP endpoint path")
	fs.StringVar(&f.b.config, "config", "", "the configuration file (mcpServers, policies, rateLimits, audit); required")
	fs.StringVar(&f.b.logFormat, "log-format", "text", "log record format: text or json")
	registerMetricsFlags(fs, &f.b.metricsAddr, &f.b.metricsRemote)
	fs.StringVar(&f.redisURL, "redis", "", "share the rate limits' buckets with every replica through this Redis server (redis://[user:pass@]host:port/db, rediss://…, unix:///path)")
	fs.DurationVar(&f.watch, "watch", 0, "also reload when the --config file's content changes, polling it at this interval (e.g. 2s; at least 50ms); 0: on SIGHUP only")
	fs.StringVar(&f.stateKeys, "state-key", "", "the requestState key ring shared by every replica, ID:BASE64[,ID:BASE64…] (32-byte secrets, the first seals); default: $"+stateKeysEnv)
	f.b.auth.register(fs, false)
	return v, f
}

// gatewayFile is the configuration file: the bridge's mcpServers and the
// gateway's policy members.
type gatewayFile struct {
	bridgeConfig   `json:",inline"`
	gateway.Config `json:",inline"`
}

// readGatewayConfig reads and checks the file at path strictly: an
// unknown member anywhere is refused with its place in the file.
func readGatewayConfig(path string) (*gatewayFile, error) {
	var c gatewayFile
	strict := func(b []byte, v any) error {
		return json.Unmarshal(b, v, json.RejectUnknownMembers(true))
	}
	if err := readConfigFile(path, &c, strict); err != nil {
		return nil, err
	}
	if err := c.check(path); err != nil {
		return nil, err
	}
	if err := c.Config.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &c, nil
}

func gatewayCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	v, f := gatewayVerb()
	pos, tail, code, done := v.start(args, stdout, stderr)
	if done {
		return code
	}
	switch {
	case len(pos) > 0 || len(tail) > 0:
		return v.usageError(stderr, errors.New("unexpected arguments: the upstreams are in the --config file"))
	case f.b.listen == "":
		return v.usageError(stderr, errors.New("--listen ADDR is required"))
	case f.b.config == "":
		return v.usageError(stderr, errors.New("--config FILE is required"))
	case f.watch < 0:
		return v.usageError(stderr, errors.New("--watch: want an interval above 0 (or 0 for none)"))
	}
	if err := f.b.sec.check(); err != nil {
		return v.usageError(stderr, err)
	}
	logger, err := v.logLevel.logger(stderr, f.b.logFormat)
	if err != nil {
		return v.usageError(stderr, err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	file, err := readGatewayConfig(f.b.config)
	if err != nil {
		return v.usageError(stderr, err)
	}
	f.b.parsed = &file.bridgeConfig
	f.b.separator, f.b.maxRestarts, f.b.era = proxy.DefaultSeparator, proxy.DefaultMaxRestarts, "auto"
	f.b.auth.tty = isTerminal(stderr)
	defer f.b.auth.close()
	opts, err := bridgeOptions(ctx, &f.b, nil, logger, stderr)
	if err != nil {
		return v.usageError(stderr, err)
	}
	buckets, closeBuckets, err := gatewayShared(ctx, f, &opts, logger)
	if ue := (usageError{}); errors.As(err, &ue) {
		return v.usageError(stderr, err)
	} else if err != nil {
		return v.fail(stderr, exitError, err)
	}
	defer closeBuckets()
	audit, closeAudit, err := gatewayAudit(file.Audit, logger)
	if err != nil {
		return v.fail(stderr, exitError, err)
	}
	defer closeAudit()
	gw, err := gateway.New(gateway.Options{
		Config: file.Config, Upstreams: file.names(), Separator: opts.Separator,
		Buckets: buckets, Audit: audit, Logger: logger,
	})
	if err != nil {
		return v.usageError(stderr, err)
	}
	opts.Server.Name, opts.Client.Name = "pmcp-gateway", "pmcp-gateway"
	opts.Server.Middleware = append(opts.Server.Middleware, gw.Middleware())
	opts.AnswerUnknown = true // a hidden name answers as an unknown one, whichever upstream
	// After the gateway's middleware: the server span covers its decisions.
	p, tel, stop, err := f.b.startProxy(ctx, opts, stderr, logger)
	if err != nil {
		return v.usageError(stderr, err)
	}
	defer stop()
	rl := &gatewayReloader{path: f.b.config, gw: gw, p: p, flags: &f.b, log: logger, servers: file.MCPServers, upstreams: file.names(), auditFile: auditFile(file.Audit)}
	stopReload := rl.onSIGHUP(ctx)
	defer stopReload()
	if f.watch > 0 {
		stopWatch := rl.onChange(ctx, f.watch)
		defer stopWatch()
	}
	return f.b.serveHTTP(ctx, p, tel, logger, stderr)
}

// gatewayShared sets up what replicas share: the requestState key ring
// (--state-key, $PMCP_STATE_KEYS) and the rate limits' buckets (--redis:
// redis.Buckets, so a rule admits its rate across every replica, not per
// replica). Without --redis the buckets live in this process.
func gatewayShared(ctx context.Context, f *gatewayFlags, opts *proxy.Options, log *slog.Logger) (gateway.Buckets, func(), error) {
	ring := f.stateKeys
	if ring == "" {
		ring = os.Getenv(stateKeysEnv)
	}
	if ring != "" {
		keys, err := parseKeyRing(ring)
		if err != nil {
			return nil, nil, usageError{err}
		}
		opts.RequestStateKeys = keys
	}
	if f.redisURL == "" {
		return &gateway.MemoryBuckets{}, func() {}, nil
	}
	ropts, err := goredis.ParseURL(f.redisURL)
	if err != nil {
		return nil, nil, usageError{fmt.Errorf("--redis: %w", err)}
	}
	// go-redis logs through one process-wide logger (as in serve).
	goredis.SetLogger(redis.NewGoRedisLogger(log))
	rdb := goredis.NewClient(ropts)
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, nil, fmt.Errorf("--redis: %w", err)
	}
	return redis.NewBuckets(rdb, redis.BucketsOptions{}), func() { _ = rdb.Close() }, nil
}

// gatewayAudit opens the audit trail the configuration names (the
// asynchronous, bounded gateway.AuditLog) and returns its sink and what
// closes it; without audit.file there is none.
func gatewayAudit(cfg *gateway.AuditConfig, logger *slog.Logger) (sink func(gateway.AuditRecord), closeFn func(), err error) {
	if cfg == nil || cfg.File == "" {
		return nil, func() {}, nil
	}
	al, err := gateway.OpenAuditFile(cfg.File, gateway.AuditLogOptions{Logger: logger})
	if err != nil {
		return nil, nil, err
	}
	return al.Record, func() {
		if err := al.Close(); err != nil {
			logger.Warn("pmcp: closing the audit file", "error", err)
		}
	}, nil
}

// gatewayReloader applies a re-read configuration file.
type gatewayReloader struct {
	path string
	gw   *gateway.Gateway
	// p serves the upstreams; its server is told the lists changed
	// (what each caller sees may have).
	p *proxy.Proxy
	// flags dial the upstreams as at the start (upstreamsChanged).
	flags *bridgeFlags
	log   *slog.Logger

	mu sync.Mutex
	// servers and upstreams are the mcpServers the proxy serves.
	servers   map[string]bridgeServer
	upstreams []string
	// auditFile is the audit trail written to (from the start).
	auditFile string
}

func auditFile(a *gateway.AuditConfig) string {
	if a == nil {
		return ""
	}
	return a.File
}

// onSIGHUP reloads on every SIGHUP until ctx ends or stop is called.
func (r *gatewayReloader) onSIGHUP(ctx context.Context) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				_ = r.reload()
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		cancel()
		<-done
	}
}

// reload re-reads the file and swaps the policies, rate limits and audit
// settings at once, and tells the clients their lists changed; a file
// that does not read or check is refused and the configuration in force
// kept.
func (r *gatewayReloader) reload() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	file, upstreams, err := r.apply()
	if err != nil {
		r.log.Error("pmcp: gateway configuration refused; the one in force stays", "file", r.path, "error", err)
		return err
	}
	srv := r.p.Server()
	srv.NotifyToolsListChanged()
	srv.NotifyPromptsListChanged()
	srv.NotifyResourcesListChanged()
	r.log.Info("pmcp: gateway configuration reloaded", "file", r.path, "servers", upstreams, "policies", len(file.Policies), "rateLimits", len(file.RateLimits))
	return nil
}

// apply reads the file and applies its mcpServers (if they changed) and
// its policies; it returns the file and the upstreams now served.
func (r *gatewayReloader) apply() (*gatewayFile, []string, error) {
	file, err := readGatewayConfig(r.path)
	if err != nil {
		return nil, nil, err
	}
	upstreams := r.upstreams
	if !maps.EqualFunc(file.MCPServers, r.servers, func(a, b bridgeServer) bool { return reflect.DeepEqual(a, b) }) {
		if err := r.upstreamsChanged(file); err != nil {
			return nil, nil, err
		}
		upstreams = file.names()
	}
	if f := auditFile(file.Audit); f != r.auditFile {
		r.log.Warn("pmcp: gateway audit.file changed; it applies at the next start (includeArguments applies now)", "file", r.path, "audit", f)
	}
	return file, upstreams, r.gw.Update(file.Config, upstreams)
}

// upstreamsChanged applies the file's mcpServers, which differ from those
// served, to the proxy (proxy.Proxy.SetUpstreams): an entry given again
// unchanged keeps its sessions (its fingerprint is the same), others are
// added, replaced or removed. An error leaves the upstreams in force.
func (r *gatewayReloader) upstreamsChanged(file *gatewayFile) error {
	// The gateway's upstreams are the file's only (it takes no --upstream).
	ups, err := file.upstreams(r.path, r.flags.httpOpts, r.flags.cmdOpts)
	if err != nil {
		return err
	}
	if err := r.p.SetUpstreams(ups); err != nil {
		return err
	}
	r.servers, r.upstreams = file.MCPServers, file.names()
	r.log.Info("pmcp: gateway upstreams changed", "file", r.path, "servers", r.upstreams)
	return nil
}
