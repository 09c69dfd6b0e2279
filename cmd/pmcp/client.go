package main

import (
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
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
	"github.com/gopmcp/pmcp/transport/command"
)

// exitConn: the server could not be reached, the connection broke, or it
// answered in a way the protocol does not allow.
const exitConn = 3

// defaultClientTimeout bounds connecting and each request.
const defaultClientTimeout = 60 * time.Second

// clientArgs are the arguments of a client command: shared flags, the
// command's own positional arguments, and the server to talk to.
type clientArgs struct {
	url        string
	server     []string // command after "--" (stdio)
	json       bool
	headers    http.Header
	era        pmcp.Era
	timeout    time.Duration
	timeoutSet bool
	logLevel   pmcp.LoggingLevel
	progress   bool
	// task: pmcp call runs the tool as a task and shows its status.
	task bool
	pos  []string
	auth authArgs // OAuth flags and state (oauth.go)
}

// parseClientArgs reads flags anywhere before "--" (so that
// `pmcp call TOOL --json` works) and takes everything after "--" as the
// server command.
func parseClientArgs(args []string) (*clientArgs, error) {
	a := &clientArgs{headers: http.Header{}, timeout: defaultClientTimeout, logLevel: pmcp.LevelInfo, progress: true}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			a.server = args[i+1:]
			break
		}
		if len(arg) < 2 || arg[0] != '-' {
			a.pos = append(a.pos, arg)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		value := func() (string, error) {
			if hasVal {
				return val, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("flag %s needs a value", arg)
			}
			i++
			return args[i], nil
		}
		var err error
		switch name {
		case "json":
			a.json = true
		case "no-progress":
			a.progress = false
		case "task":
			a.task = true
		case "url":
			a.url, err = value()
		case "H", "header":
			var h string
			if h, err = value(); err == nil {
				k, v, ok := strings.Cut(h, ":")
				if !ok || strings.TrimSpace(k) == "" {
					return nil, fmt.Errorf("--header wants Name: value, got %q", h)
				}
				a.headers.Add(strings.TrimSpace(k), strings.TrimSpace(v))
			}
		case "era":
			var e string
			if e, err = value(); err == nil {
				switch e {
				case "auto":
					a.era = pmcp.EraUnknown
				case "modern":
					a.era = pmcp.EraModern
				case "legacy":
					a.era = pmcp.EraLegacy
				default:
					return nil, fmt.Errorf("--era wants auto, modern or legacy, got %q", e)
				}
			}
		case "timeout":
			var d string
			if d, err = value(); err == nil {
				a.timeoutSet = true
				if a.timeout, err = time.ParseDuration(d); err != nil || a.timeout <= 0 {
					return nil, fmt.Errorf("--timeout wants a positive duration such as 30s, got %q", d)
				}
			}
		case "log-level":
			var l string
			if l, err = value(); err == nil {
				if l == "off" {
					a.logLevel = pmcp.LevelOff
				} else if a.logLevel, err = pmcp.ParseLoggingLevel(l); err != nil {
					return nil, fmt.Errorf("--log-level wants off or debug ... emergency, got %q", l)
				}
			}
		case "h", "help":
			return nil, errHelp
		default:
			var known bool
			if known, err = a.auth.parseFlag(name, value); !known {
				return nil, fmt.Errorf("unknown flag %s", arg)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	switch {
	case a.url != "" && len(a.server) > 0:
		return nil, errors.New("give either --url URL or -- COMMAND ARGS..., not both")
	case a.url == "" && len(a.server) == 0:
		return nil, errors.New("no server: give --url URL (Streamable HTTP) or -- COMMAND ARGS... (stdio)")
	}
	return a, nil
}

var errHelp = errors.New("help requested")

// syncWriter serialises writes to stderr from the log and progress
// handlers and the main goroutine.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// clientCommand runs one of the client commands (inspect, tools, resources,
// prompts, call, read, get).
func clientCommand(ctx context.Context, cmd string, args []string, stdout, stderr io.Writer) int {
	a, err := parseClientArgs(args)
	if errors.Is(err, errHelp) {
		usage(stdout)
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "pmcp %s: %v\n", cmd, err)
		return exitUsage
	}
	op, err := newOperation(cmd, a)
	if err != nil {
		fmt.Fprintf(stderr, "pmcp %s: %v\n", cmd, err)
		return exitUsage
	}
	errw := &syncWriter{w: stderr}
	a.auth.tty = isTerminal(stderr)
	defer a.auth.close()
	s, err := connect(ctx, a, errw)
	if err != nil {
		fmt.Fprintf(errw, "pmcp %s: connect: %v\n", cmd, err)
		return exitConn
	}
	defer s.Close()
	code, err := op(ctx, s, &output{json: a.json, w: stdout, errw: errw, progress: a.progress, tty: isTerminal(stderr)})
	if err != nil {
		fmt.Fprintf(errw, "pmcp %s: %v\n", cmd, err)
		return exitFor(err)
	}
	return code
}

// exitFor maps an operation's error: the server's JSON-RPC error is an
// ordinary failure (1), anything else a connection or protocol failure (3).
func exitFor(err error) int {
	var re *jsonrpc.Error
	if errors.As(err, &re) {
		return exitError
	}
	if errors.Is(err, context.Canceled) {
		return exitError
	}
	return exitConn
}

// connect opens the session the arguments describe.
func connect(ctx context.Context, a *clientArgs, stderr io.Writer) (*pmcp.ClientSession, error) {
	c := pmcp.NewClient(pmcp.ClientOptions{
		Name:         "pmcp-cli",
		Version:      "1.0.0",
		Era:          a.era,
		CallTimeout:  a.timeout,
		ProbeTimeout: a.timeout,
		LogLevel:     a.logLevel,
		Logger:       slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Notifications: pmcp.ClientNotificationHandlers{
			LogMessage: func(ctx context.Context, p *pmcp.LoggingMessageParams) {
				// A legacy server may not honour logging/setLevel (or
				// lack the logging capability): filter here too.
				if p.Level >= a.logLevel && a.logLevel != pmcp.LevelOff {
					printLog(stderr, p)
				}
			},
		},
	})
	cctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	if a.url != "" {
		o := pmcp.HTTPClientOptions{Header: a.headers}
		if err := a.auth.apply(&o, stderr); err != nil {
			return nil, err
		}
		return c.ConnectHTTP(cctx, a.url, o)
	}
	tr, err := command.New(exec.Command(a.server[0], a.server[1:]...), command.Options{Stderr: stderr})
	if err != nil {
		return nil, err
	}
	st, err := tr.Start()
	if err != nil {
		return nil, err
	}
	return c.Connect(cctx, st)
}

func printLog(w io.Writer, p *pmcp.LoggingMessageParams) {
	var data string
	switch d := p.Data.(type) {
	case string:
		data = d
	default:
		b, err := json.Marshal(d)
		if err != nil {
			data = fmt.Sprint(d)
		} else {
			data = string(b)
		}
	}
	if p.Logger != "" {
		fmt.Fprintf(w, "[server %s] %s: %s\n", p.Level, p.Logger, sanitize(data))
		return
	}
	fmt.Fprintf(w, "[server %s] %s\n", p.Level, sanitize(data))
}

// sanitize keeps server text from driving the terminal: control
// characters other than newline and tab are shown as U+FFFD.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || (r >= 0x20 && r != 0x7f && !(r >= 0x80 && r < 0xa0)) {
			return r
		}
		return '\uFFFD'
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// operation runs a command over an open session; it returns the exit
// code when it ran to the end.
type operation func(ctx context.Context, s *pmcp.ClientSession, out *output) (int, error)

// newOperation checks a command's positional arguments and returns what
// it will do once connected.
func newOperation(cmd string, a *clientArgs) (operation, error) {
	pos := a.pos
	list := func(what string) error {
		if len(pos) > 1 || (len(pos) == 1 && pos[0] != "list") {
			return fmt.Errorf("usage: pmcp %s list [flags] (--url URL | -- COMMAND ARGS...)", what)
		}
		return nil
	}
	switch cmd {
	case "inspect":
		if len(pos) != 0 {
			return nil, fmt.Errorf("inspect takes no arguments, got %q", pos)
		}
		return inspect, nil
	case "tools", "resources", "prompts":
		if err := list(cmd); err != nil {
			return nil, err
		}
		return func(ctx context.Context, s *pmcp.ClientSession, out *output) (int, error) {
			return exitOK, listCmd(ctx, cmd, s, out)
		}, nil
	case "call":
		if len(pos) < 1 {
			return nil, errors.New("usage: pmcp call TOOL [key=value ... | '{json}']")
		}
		args, err := toolArgs(pos[1:])
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, s *pmcp.ClientSession, out *output) (int, error) {
			return callCmd(ctx, s, out, pos[0], args, a.url != "", a.task)
		}, nil
	case "read":
		if len(pos) != 1 {
			return nil, errors.New("usage: pmcp read URI")
		}
		return func(ctx context.Context, s *pmcp.ClientSession, out *output) (int, error) {
			return exitOK, readCmd(ctx, s, out, pos[0])
		}, nil
	case "get":
		if len(pos) < 1 {
			return nil, errors.New("usage: pmcp get PROMPT [key=value ...]")
		}
		args, err := promptArgs(pos[1:])
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, s *pmcp.ClientSession, out *output) (int, error) {
			return exitOK, getCmd(ctx, s, out, pos[0], args)
		}, nil
	}
	return nil, fmt.Errorf("unknown command %q", cmd)
}

// toolArgs turns the arguments after the tool name into a JSON object:
// either one JSON object, or key=value pairs whose values are read as
// JSON when they parse (numbers, booleans, null, objects, arrays, quoted
// strings) and as plain strings otherwise.
func toolArgs(pos []string) (jsontext.Value, error) {
	if len(pos) == 1 && strings.HasPrefix(strings.TrimSpace(pos[0]), "{") {
		v := jsontext.Value(pos[0])
		if !v.IsValid() || v.Kind() != '{' {
			return nil, fmt.Errorf("the arguments %q are not a valid JSON object", pos[0])
		}
		return v, nil
	}
	obj := map[string]jsontext.Value{}
	for _, kv := range pos {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("argument %q is not key=value (or give a single JSON object)", kv)
		}
		if _, dup := obj[k]; dup {
			return nil, fmt.Errorf("argument %q given twice", k)
		}
		raw := jsontext.Value(v)
		if v == "" || !raw.IsValid() {
			raw, _ = jsontext.AppendQuote(nil, v)
		}
		obj[k] = raw
	}
	if len(obj) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(obj, json.Deterministic(true))
	if err != nil {
		return nil, err
	}
	return b, nil
}

// promptArgs reads key=value pairs (prompt arguments are strings).
func promptArgs(pos []string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range pos {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("argument %q is not key=value", kv)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("argument %q given twice", k)
		}
		out[k] = v
	}
	return out, nil
}
