package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/transport/command"
)

// Downstream describes the downstream session an upstream session is opened
// for.
type Downstream struct {
	// Header is the HTTP header of the downstream request that caused the
	// upstream session to be opened, for a per-session upstream of a
	// Streamable HTTP session; for the upstream of the session-less
	// requests carrying given values of Upstream.SessionHeaders, those
	// values only. Nil for shared upstreams (Options.Shared, and the one
	// the other modern-era requests use), whose credentials must not come
	// from one particular caller, and over stdio.
	Header http.Header
}

// Conn is an open upstream session.
type Conn struct {
	// Session is the client session with the upstream server.
	Session *pmcp.ClientSession
	// Exited, when not nil, reports why the upstream ended once the session
	// is done (a child process's exit status); it may block until it knows.
	Exited func() error
}

// DialFunc opens an upstream session with c, the client the proxy built for
// it (its handlers forward the upstream's requests and notifications).
type DialFunc func(ctx context.Context, c *pmcp.Client, d Downstream) (Conn, error)

// HTTP returns a DialFunc for the MCP server at the Streamable HTTP endpoint
// url. opts carries the upstream's own credentials (Header, OAuth with a
// token store): nothing of the downstream request, its Authorization header
// included, is ever sent upstream.
func HTTP(url string, opts pmcp.HTTPClientOptions) DialFunc {
	return func(ctx context.Context, c *pmcp.Client, _ Downstream) (Conn, error) {
		s, err := c.ConnectHTTP(ctx, url, opts)
		if err != nil {
			return Conn{}, err
		}
		return Conn{Session: s}, nil
	}
}

// CommandOptions configures Command.
type CommandOptions struct {
	// Dir is the child's working directory; "" means the proxy's.
	Dir string
	// Env is added to the proxy's environment for the child ("NAME=value").
	Env []string
	// HeaderToEnv maps a downstream HTTP header to an environment variable
	// of a per-session child (header name → variable name), for per-user
	// credentials of the child. Only children dialed with a
	// Downstream.Header get them: per-session ones, and, when the
	// Upstream's SessionHeaders name these headers, the ones modern-era
	// requests get per distinct value; a missing header leaves the
	// variable unset. The Authorization header may not be mapped: a
	// downstream token is never passed on.
	HeaderToEnv map[string]string
	// Logger receives the child's standard error, one record per line
	// (Info, with the upstream's name). Nil discards it.
	Logger *slog.Logger
	// Transport configures the child's supervision (shutdown delays, stdio
	// limits). Its Stderr is ignored: stderr goes to Logger.
	Transport command.Options
}

// ErrHeaderToEnvAuthorization is returned by Command for a HeaderToEnv entry
// that maps the Authorization header.
var ErrHeaderToEnvAuthorization = errors.New("proxy: the Authorization header cannot be mapped to a child's environment (no token passthrough)")

// Command returns a DialFunc that starts name with args as a child process
// speaking MCP over stdio (package transport/command): closing the session
// closes its stdin, then SIGTERM, then SIGKILL.
func Command(name string, args []string, opts CommandOptions) (DialFunc, error) {
	for h := range opts.HeaderToEnv {
		if strings.EqualFold(h, "Authorization") {
			return nil, ErrHeaderToEnvAuthorization
		}
	}
	args = append([]string(nil), args...)
	return func(ctx context.Context, c *pmcp.Client, d Downstream) (Conn, error) {
		cmd := exec.Command(name, args...)
		cmd.Dir = opts.Dir
		cmd.Env = append(os.Environ(), opts.Env...)
		for h, v := range opts.HeaderToEnv {
			if val := d.Header.Get(h); val != "" && d.Header != nil {
				cmd.Env = append(cmd.Env, v+"="+val)
			}
		}
		to := opts.Transport
		to.Stderr = nil
		var lw *lineLogger
		if opts.Logger != nil {
			lw = &lineLogger{log: opts.Logger, name: name}
			to.Stderr = lw
		}
		t, err := command.New(cmd, to)
		if err != nil {
			return Conn{}, err
		}
		st, err := t.Start()
		if err != nil {
			return Conn{}, err
		}
		s, err := c.Connect(ctx, st)
		if err != nil {
			return Conn{}, err
		}
		return Conn{Session: s, Exited: func() error {
			err := t.Wait()
			if lw != nil {
				lw.flush()
			}
			if err == nil {
				return errors.New("the process exited with status 0")
			}
			return fmt.Errorf("the process ended: %w", err)
		}}, nil
	}, nil
}

// maxStderrLine bounds one logged line of a child's stderr; longer lines
// are cut.
const maxStderrLine = 4096

// lineLogger turns a child's stderr into log records, one per line.
type lineLogger struct {
	log  *slog.Logger
	name string
	mu   sync.Mutex
	buf  []byte
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			room := maxStderrLine - len(l.buf)
			l.buf = append(l.buf, p[:max(0, min(room, len(p)))]...)
			break
		}
		room := maxStderrLine - len(l.buf)
		l.buf = append(l.buf, p[:max(0, min(room, i))]...)
		l.emit()
		p = p[i+1:]
	}
	return n, nil
}

func (l *lineLogger) emit() {
	line := strings.TrimRight(string(l.buf), "\r")
	l.buf = l.buf[:0]
	l.log.Info("upstream stderr", "command", l.name, "line", line)
}

func (l *lineLogger) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.emit()
	}
}

var _ io.Writer = (*lineLogger)(nil)
