package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/proxy"
)

// multiFlag collects a repeatable flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

const bridgeAbout = `Serve one or more upstream MCP servers (a child process over stdio, or a
Streamable HTTP endpoint) to downstream clients over stdio (the default) or
Streamable HTTP (--listen), translating between the protocol eras: a
2026-07-28 client can use a 2025-11-25-only server and the other way round.

  pmcp bridge --listen 127.0.0.1:9000 -- npx some-server   stdio server on HTTP
  pmcp bridge --url https://remote.example/mcp             remote server on stdio
  pmcp bridge --listen 127.0.0.1:9000 --url URL            HTTP to HTTP (dual era)
  pmcp bridge --listen :9000 --upstream a=http://a/mcp --upstream 'b=my-server --stdio'

Process model: one child per downstream (legacy) session, closed with it;
--shared runs one child for everyone. Modern (2026-07-28) requests have no
session and use the shared child. A child that dies is restarted on the
next request, at most --max-restarts times per session.

Aggregation: upstream names that could make two tools share a name are
refused (a and a_b with --separator _: a's b_x and a_b's x are both a_b_x).
An upstream that is down is left out of the lists and named in the log and
in the errors of calls to it. With --listen, GET /healthz is 200 while the
bridge serves, GET /readyz 200 when every upstream is reachable, else 503
naming the unreachable ones.

Credentials: the upstream uses its own (--header; OAuth with the client
commands' flags and the token store pmcp login fills); the downstream's
Authorization header is never forwarded. --header-to-env (with --listen,
not --shared) maps a downstream header to the environment of the child
that serves the client: its session's child, or, for modern requests, a
child per distinct header value (at most 16, the least recently used idle
one is stopped for a new one).`

type bridgeFlags struct {
	listen, path, url, config string
	upstreams, headers        multiFlag
	headerToEnv, allow, deny  multiFlag
	shared                    bool
	maxRestarts               int
	separator, era            string
	logFormat                 string
	// metricsAddr and metricsRemote are --metrics and --metrics-remote
	// (serve_telemetry.go): with them or the OTEL_* variables the bridge
	// exports spans and metrics of both its hops.
	metricsAddr   string
	metricsRemote bool
	// auth is the HTTP upstreams' OAuth: the flags, token store and
	// loopback login of the client commands (oauth.go).
	auth authArgs
	// parsed is the --config file when the caller read it already (pmcp
	// gateway reads the whole file strictly); nil: read it here.
	parsed *bridgeConfig
	// sec protects the downstream HTTP endpoint (--listen) exactly as
	// `pmcp serve` does: --auth-issuer/--auth-audience/--auth-scopes and
	// --allow-host.
	sec serveSecurity
	// httpOpts and cmdOpts are how bridgeOptions dials the upstreams; a
	// gateway reload builds the file's new upstreams with them.
	httpOpts pmcp.HTTPClientOptions
	cmdOpts  proxy.CommandOptions
}

func bridgeVerb() (*verb, *bridgeFlags) {
	v := newVerb("bridge", "pmcp bridge [flags] [--url URL | --upstream NAME=URL|CMD ... | --config FILE | -- COMMAND ARGS...]", bridgeAbout)
	fs := v.fs
	f := &bridgeFlags{}
	f.sec.register(fs)
	fs.StringVar(&f.listen, "listen", "", "serve Streamable HTTP at ADDR (host:port) instead of stdio")
	fs.StringVar(&f.path, "path", "/mcp", "HTTP endpoint path with --listen")
	fs.StringVar(&f.url, "url", "", "the upstream's Streamable HTTP endpoint")
	fs.Var(&f.upstreams, "upstream", "NAME=URL or NAME=COMMAND ARGS (repeatable): aggregate upstreams, tools and prompts prefixed with NAME_")
	fs.StringVar(&f.config, "config", "", `upstreams from a JSON file: {"mcpServers": {"NAME": {"command": C, "args": [...], "env": {...}} or {"url": U}}}`)
	fs.Var(&f.headers, "header", "'Name: value' added to every request to an HTTP upstream (repeatable)")
	fs.Var(&f.headerToEnv, "header-to-env", "HEADER=VAR: a downstream HTTP header as an environment variable of the per-session child (repeatable)")
	fs.Var(&f.allow, "allow-tool", "only tools whose (prefixed) name matches this glob (repeatable)")
	fs.Var(&f.deny, "deny-tool", "hide and refuse tools whose (prefixed) name matches this glob (repeatable)")
	fs.BoolVar(&f.shared, "shared", false, "one upstream session (one child) for every downstream session")
	fs.IntVar(&f.maxRestarts, "max-restarts", proxy.DefaultMaxRestarts, "restarts of a dead upstream per session (0: never)")
	fs.StringVar(&f.separator, "separator", proxy.DefaultSeparator, "joins an upstream's name and its tool and prompt names")
	fs.StringVar(&f.era, "era", "auto", "the upstream's protocol era: auto, modern or legacy")
	fs.StringVar(&f.logFormat, "log-format", "text", "log record format: text or json")
	registerMetricsFlags(fs, &f.metricsAddr, &f.metricsRemote)
	f.auth.register(fs, false)
	return v, f
}

func bridge(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	v, f := bridgeVerb()
	pos, tail, code, done := v.start(args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) > 0 {
		return v.usageError(stderr, fmt.Errorf("unexpected argument %q (a child command goes after --)", pos[0]))
	}
	logger, err := v.logLevel.logger(stderr, f.logFormat)
	if err != nil {
		return v.usageError(stderr, err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	f.auth.tty = isTerminal(stderr)
	defer f.auth.close()
	opts, err := bridgeOptions(ctx, f, tail, logger, stderr)
	if err != nil {
		return v.usageError(stderr, err)
	}
	p, tel, stop, err := f.startProxy(ctx, opts, stderr, logger)
	if err != nil {
		return v.usageError(stderr, err)
	}
	defer stop()
	if f.listen != "" {
		return f.serveHTTP(ctx, p, tel, logger, stderr)
	}
	tel.observe(p.Server(), nil)
	if err := serveStdio(ctx, p.Server(), stdin, stdout); err != nil {
		return v.fail(stderr, exitError, err)
	}
	return exitOK
}

// startProxy makes the proxy of opts with the bridge's telemetry
// (--metrics, --metrics-remote, OTEL_*) on both hops, after opts'
// middleware (its span covers their decisions); stop closes both. pmcp
// bridge and pmcp gateway start their proxy here.
func (f *bridgeFlags) startProxy(ctx context.Context, opts proxy.Options, stderr io.Writer, logger *slog.Logger) (p *proxy.Proxy, tel *telemetry, stop func(), err error) {
	if tel, err = startTelemetry(ctx, f.metricsAddr, f.metricsRemote, stderr, logger); err != nil {
		return nil, nil, nil, err
	}
	tel.instrumentProxy(&opts)
	if p, err = proxy.New(opts); err != nil {
		tel.close()
		return nil, nil, nil, err
	}
	return p, tel, func() {
		_ = p.Close()
		tel.close()
	}, nil
}

// serveHTTP serves p (started by startProxy with tel) at --listen and
// --path, with serve's security flags and /healthz, /readyz.
func (f *bridgeFlags) serveHTTP(ctx context.Context, p *proxy.Proxy, tel *telemetry, logger *slog.Logger, stderr io.Writer) int {
	return serveHTTPWith(ctx, p.Server(), pmcp.StreamableHTTPOptions{}, f.listen, f.path, &f.sec, logger, stderr, healthRoutes(p, f.path), func(h *pmcp.StreamableHTTPHandler) { tel.observe(p.Server(), h) })
}

// bridgeOptions turns the flags into proxy options.
func bridgeOptions(ctx context.Context, f *bridgeFlags, cmdArgs []string, logger *slog.Logger, stderr io.Writer) (proxy.Options, error) {
	opts := proxy.Options{
		Shared:     f.shared,
		Separator:  f.separator,
		AllowTools: f.allow,
		DenyTools:  f.deny,
		Logger:     logger,
		Server:     pmcp.ServerOptions{Name: "pmcp-bridge", Version: bridgeVersion, Logger: logger, DisableAccessLog: !logger.Enabled(ctx, slog.LevelDebug)},
		Client:     pmcp.ClientOptions{Name: "pmcp-bridge", Version: bridgeVersion},
	}
	switch {
	case f.maxRestarts == 0:
		opts.MaxRestarts = -1
	case f.maxRestarts > 0:
		opts.MaxRestarts = f.maxRestarts
	default:
		return opts, errors.New("--max-restarts must not be negative")
	}
	switch f.era {
	case "auto":
	case "modern":
		opts.Client.Era = pmcp.EraModern
	case "legacy":
		opts.Client.Era = pmcp.EraLegacy
	default:
		return opts, fmt.Errorf("--era: %q is not auto, modern or legacy", f.era)
	}
	hdr := http.Header{}
	for _, h := range f.headers {
		k, v, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return opts, fmt.Errorf("--header wants 'Name: value', got %q", h)
		}
		hdr.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	h2e := map[string]string{}
	for _, m := range f.headerToEnv {
		k, v, ok := strings.Cut(m, "=")
		if !ok || k == "" || v == "" {
			return opts, fmt.Errorf("--header-to-env wants HEADER=VAR, got %q", m)
		}
		h2e[k] = v
	}
	httpOpts := pmcp.HTTPClientOptions{Header: hdr}
	if f.url != "" || len(f.upstreams) > 0 || f.config != "" {
		if err := f.auth.apply(&httpOpts, stderr); err != nil {
			return opts, err
		}
	}
	cmdOpts := proxy.CommandOptions{HeaderToEnv: h2e, Logger: logger}
	f.httpOpts, f.cmdOpts = httpOpts, cmdOpts
	sources := 0
	if f.url != "" {
		sources++
		if err := checkURL(f.url); err != nil {
			return opts, err
		}
		opts.Upstreams = append(opts.Upstreams, proxy.Upstream{Name: hostOf(f.url), Dial: proxy.HTTP(f.url, httpOpts)})
	}
	if len(cmdArgs) > 0 {
		sources++
		dial, err := proxy.Command(cmdArgs[0], cmdArgs[1:], cmdOpts)
		if err != nil {
			return opts, err
		}
		opts.Upstreams = append(opts.Upstreams, proxy.Upstream{Name: filepath.Base(cmdArgs[0]), Dial: dial, SessionHeaders: sessionHeaders(cmdOpts)})
	}
	if len(f.upstreams) > 0 || f.config != "" {
		sources++
		named, err := namedUpstreams(f, httpOpts, cmdOpts)
		if err != nil {
			return opts, err
		}
		opts.Prefix = true // named upstreams are always prefixed
		opts.Upstreams = append(opts.Upstreams, named...)
	}
	switch {
	case sources == 0:
		return opts, errors.New("no upstream: give --url URL, --upstream NAME=..., --config FILE or -- COMMAND ARGS")
	case sources > 1:
		return opts, errors.New("give one kind of upstream: --url, -- COMMAND, or --upstream/--config")
	}
	if len(h2e) > 0 {
		// Never ignored: refused where no child could get the header.
		switch {
		case f.listen == "":
			return opts, errors.New("--header-to-env needs --listen: over stdio there are no request headers")
		case f.shared:
			return opts, errors.New("--header-to-env cannot apply with --shared: one child serves every client")
		case !headerChildren(opts.Upstreams):
			return opts, errors.New("--header-to-env: no child upstream (-- COMMAND, --upstream NAME=COMMAND, a config command) to give the header to")
		}
	}
	return opts, nil
}

// headerChildren reports whether a child upstream gets the mapped headers.
func headerChildren(ups []proxy.Upstream) bool {
	return slices.ContainsFunc(ups, func(u proxy.Upstream) bool { return len(u.SessionHeaders) > 0 })
}

// sessionHeaders are the headers a child's session depends on: those
// --header-to-env maps (proxy.Upstream.SessionHeaders), so that modern
// requests, which have no session, get a child with their values too.
func sessionHeaders(co proxy.CommandOptions) []string {
	return slices.Sorted(maps.Keys(co.HeaderToEnv))
}

func checkURL(u string) error {
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return fmt.Errorf("URL %q: want http:// or https://", u)
	}
	return nil
}

func hostOf(u string) string {
	rest := u[strings.Index(u, "//")+2:]
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// namedUpstreams reads --upstream NAME=URL|COMMAND and --config.
func namedUpstreams(f *bridgeFlags, httpOpts pmcp.HTTPClientOptions, cmdOpts proxy.CommandOptions) ([]proxy.Upstream, error) {
	var out []proxy.Upstream
	for _, u := range f.upstreams {
		name, target, ok := strings.Cut(u, "=")
		if !ok || name == "" || strings.TrimSpace(target) == "" {
			return nil, fmt.Errorf("--upstream wants NAME=URL or NAME=COMMAND ARGS, got %q", u)
		}
		if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") {
			out = append(out, proxy.Upstream{Name: name, Dial: proxy.HTTP(target, httpOpts)})
			continue
		}
		fields := strings.Fields(target)
		dial, err := proxy.Command(fields[0], fields[1:], cmdOpts)
		if err != nil {
			return nil, err
		}
		out = append(out, proxy.Upstream{Name: name, Dial: dial, SessionHeaders: sessionHeaders(cmdOpts)})
	}
	if f.config != "" {
		cfg := f.parsed
		if cfg == nil {
			var err error
			if cfg, err = readBridgeConfig(f.config); err != nil {
				return nil, err
			}
		}
		ups, err := cfg.upstreams(f.config, httpOpts, cmdOpts)
		if err != nil {
			return nil, err
		}
		out = append(out, ups...)
	}
	return out, nil
}
