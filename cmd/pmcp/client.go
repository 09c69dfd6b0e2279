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
	pos        []string
	auth       authArgs // OAuth flags and state (oauth.go)
	// elicitJSON answers form elicitations (--elicit-json; see
	// interaction.elicitJSON); samplingCmd answers sampling
	// (--sampling-cmd).
	elicitJSON  []map[string]any
	samplingCmd string
	// task: pmcp call runs the tool as a task and shows its status.
	task bool
	// childStderr keeps a stdio server's stderr below --log-level debug,
	// to be shown when the server fails (see failure).
	childStderr *keptStderr
}

// clientSynopsis is each client command's usage line.
var clientSynopsis = map[string]string{
	"inspect":   "pmcp inspect [flags] (--url URL | -- COMMAND ARGS...)",
	"tools":     "pmcp tools list [flags] (--url URL | -- COMMAND ARGS...)",
	"resources": "pmcp resources list [flags] (--url URL | -- COMMAND ARGS...)",
	"prompts":   "pmcp prompts list [flags] (--url URL | -- COMMAND ARGS...)",
	"call":      "pmcp call TOOL [key=value ... | '{json}'] [flags] (--url URL | -- COMMAND ARGS...)",
	"read":      "pmcp read URI [flags] (--url URL | -- COMMAND ARGS...)",
	"get":       "pmcp get PROMPT [key=value ...] [flags] (--url URL | -- COMMAND ARGS...)",
	"login":     "pmcp login --url URL [flags]",
	"shell":     "pmcp shell [flags] (--url URL | -- COMMAND ARGS...)",
}

var clientAbout = map[string]string{
	"inspect":   "Show the server's name, protocol era, capabilities and its tool,\nresource and prompt lists (names cut to the terminal width; --json for all).",
	"tools":     "List the server's tools.",
	"resources": "List the server's resources and resource templates.",
	"prompts":   "List the server's prompts.",
	"call": `Call a tool. A value is read as JSON when it parses (42, true, null,
{"a":1}, "quoted"), else as a plain string. When the server asks the user
(elicitation), the CLI asks on the terminal; without one, --elicit-json
answers: one object answers every form, several (a JSON array, or the flag
repeated) answer the forms in the order asked, one each; else the request
is declined. Sampling is answered by --sampling-cmd (request JSON on its
stdin, result JSON on its stdout) or not offered.`,
	"read":  "Read a resource.",
	"get":   "Render a prompt (argument values are strings).",
	"shell": "An interactive session with one server: list and call tools, read\nresources, get prompts; tab completion of commands and tool names, history\nwith Up and Down. Type help at the prompt.",
	"login": "Sign in with OAuth: open the authorization page in a browser ($BROWSER,\nelse xdg-open/open; \"none\" only prints the URL), take the redirect on a\nloopback port and store the tokens (never shown).",
}

// clientVerb returns the verb of a client command (or login) and the
// arguments its flags fill in.
func clientVerb(cmd string) (*verb, *clientArgs) {
	v := newVerb(cmd, clientSynopsis[cmd], clientAbout[cmd])
	a := &clientArgs{headers: http.Header{}, timeout: defaultClientTimeout, progress: true}
	fs := v.fs
	login := cmd == "login"
	if login {
		fs.StringVar(&a.url, "url", "", "the server's Streamable HTTP endpoint (http:// or https://)")
	} else {
		fs.StringVar(&a.url, "url", "", "the server's Streamable HTTP endpoint (http:// or https://); or give a stdio server as -- COMMAND ARGS... last on the line")
		fs.BoolVar(&a.json, "json", false, "print results as JSON (for scripts)")
		fs.BoolFunc("no-progress", "do not show progress on stderr", func(string) error { a.progress = false; return nil })
	}
	fs.Func("header", "'Name: value' added to every HTTP request (repeatable)", headerFlag(a.headers))
	fs.Func("H", "short for --header", headerFlag(a.headers))
	era := func(e string) error {
		switch e {
		case "auto":
			a.era = pmcp.EraUnknown
		case "modern":
			a.era = pmcp.EraModern
		case "legacy":
			a.era = pmcp.EraLegacy
		default:
			return fmt.Errorf("want auto, modern or legacy, got %q", e)
		}
		return nil
	}
	timeoutText := "bound connecting and each request (default 60s)"
	if login {
		// Era negotiation is no business of a sign-in.
		timeoutText = "bound the whole sign-in, the browser included (default 5m0s)"
	} else {
		fs.Func("era", "the protocol era: auto, modern or legacy (default auto)", era)
	}
	fs.Func("timeout", timeoutText, func(d string) (err error) {
		a.timeoutSet = true
		if a.timeout, err = time.ParseDuration(d); err != nil || a.timeout <= 0 {
			return fmt.Errorf("want a positive duration such as 30s, got %q", d)
		}
		return nil
	})
	if cmd == "call" {
		fs.BoolVar(&a.task, "task", false, "run the tool as a task; show its status live")
	}
	if cmd != "login" {
		fs.Func("elicit-json", "answer form elicitations with this JSON object, or a JSON array of objects, one per form in order (repeatable: one answer each; a single object answers every form; checked against the form)", func(j string) error {
			answers, err := parseElicitJSON(j)
			if err != nil {
				return err
			}
			a.elicitJSON = append(a.elicitJSON, answers...)
			return nil
		})
		fs.Func("sampling-cmd", "answer sampling with this shell command: the request JSON on its stdin, the result JSON on its stdout (bounded by --timeout and 1 MiB)", func(c string) error {
			if strings.TrimSpace(c) == "" {
				return errors.New("want a command")
			}
			a.samplingCmd = c
			return nil
		})
	}
	a.auth.register(fs, cmd == "login")
	return v, a
}

// headerFlag parses --header 'Name: value' into h.
func headerFlag(h http.Header) func(string) error {
	return func(s string) error {
		k, val, ok := strings.Cut(s, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return fmt.Errorf("want 'Name: value', got %q", s)
		}
		h.Add(strings.TrimSpace(k), strings.TrimSpace(val))
		return nil
	}
}

// finish checks the server arguments once the flags are parsed.
func (a *clientArgs) finish(v *verb, pos, tail []string) error {
	a.pos, a.server = pos, tail
	a.logLevel = v.logLevel.level
	switch {
	case a.url != "" && tail != nil:
		return errors.New("give either --url URL or -- COMMAND ARGS..., not both")
	case a.url == "" && len(tail) == 0:
		return errors.New("no server: give --url URL (Streamable HTTP) or -- COMMAND ARGS... (stdio)")
	case a.url != "":
		return checkURL(a.url)
	}
	return nil
}

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
func clientCommand(ctx context.Context, cmd string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	v, a := clientVerb(cmd)
	pos, tail, code, done := v.start(args, stdout, stderr)
	if done {
		return code
	}
	err := a.finish(v, pos, tail)
	var op operation
	if err == nil {
		op, err = newOperation(cmd, a)
	}
	if err != nil {
		return v.usageError(stderr, err)
	}
	errw := &syncWriter{w: stderr}
	a.auth.tty = isTerminal(stderr)
	defer a.auth.close()
	in := &interaction{in: stdin, errw: errw, tty: isTerminal(stdin) && isTerminal(stderr),
		elicitJSON: a.elicitJSON, samplingCmd: a.samplingCmd, samplingTO: a.timeout, stop: make(chan struct{})}
	defer in.close()
	s, child, err := connect(ctx, a, in, errw)
	if err != nil {
		return v.fail(errw, exitConn, connectFailure(err, a, child))
	}
	defer closeSession(s)
	code, err = op(ctx, s, &output{json: a.json, w: stdout, errw: errw, progress: a.progress, tty: isTerminal(stderr), width: columns(stdout)})
	if hint := stdoutNoise(child); hint != "" && (err == nil || exitFor(err) != exitConn) {
		// (A connection failure says it in its error: see failure.)
		fmt.Fprintf(errw, "pmcp %s: warning: %s\n", v.name, hint)
	}
	if err != nil {
		if msg, ok := missingCapability(err); ok {
			return v.fail(errw, exitError, errors.New(msg))
		}
		if code = exitFor(err); code == exitConn {
			err = failure(err, a, child)
		}
		return v.fail(errw, code, err)
	}
	return code
}

// closeSession ends the session and waits for its notification handlers,
// so every log record the server sent before it was closed is printed and
// nothing is written after the command returns.
func closeSession(s *pmcp.ClientSession) {
	_ = s.Close()
	_ = s.Wait()
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
func connect(ctx context.Context, a *clientArgs, in *interaction, stderr io.Writer) (*pmcp.ClientSession, *command.Transport, error) {
	co := pmcp.ClientOptions{
		Name:         "pmcp-cli",
		Version:      "1.0.0",
		Era:          a.era,
		CallTimeout:  a.timeout,
		ProbeTimeout: a.timeout,
		LogLevel:     a.logLevel,
		Logger:       diagLogger(a.logLevel, stderr),
		Notifications: pmcp.ClientNotificationHandlers{
			LogMessage: func(ctx context.Context, p *pmcp.LoggingMessageParams) {
				// A legacy server may not honour logging/setLevel (or
				// lack the logging capability): filter here too.
				if p.Level >= a.logLevel && a.logLevel != pmcp.LevelOff {
					printLog(stderr, p)
				}
			},
		},
	}
	in.clientOptions(&co)
	c := pmcp.NewClient(co)
	cctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	if a.url != "" {
		o := pmcp.HTTPClientOptions{Header: a.headers}
		if err := a.auth.apply(&o, stderr); err != nil {
			return nil, nil, err
		}
		s, err := c.ConnectHTTP(cctx, a.url, o)
		return s, nil, err
	}
	// A server's stderr is its log (pmcp serve's access log, for one):
	// shown as it comes at debug, else kept for when the server fails.
	cmdOpts := command.Options{Stderr: stderr}
	if a.logLevel > pmcp.LevelDebug {
		a.childStderr = newKeptStderr()
		cmdOpts = command.Options{Stderr: a.childStderr, MaxStderrBytes: maxKeptStderr}
	}
	tr, err := command.New(exec.Command(a.server[0], a.server[1:]...), cmdOpts)
	if err != nil {
		return nil, nil, err
	}
	st, err := tr.Start()
	if err != nil {
		return nil, nil, err
	}
	// The timeout bounds the whole start: a server that has not answered
	// by then is killed with its process group, not asked to exit and
	// waited for.
	stop := context.AfterFunc(cctx, func() { _ = tr.Kill() })
	s, err := c.Connect(cctx, st)
	if !stop() && err == nil {
		_ = s.Close()
		return nil, tr, cctx.Err()
	}
	return s, tr, err
}

// connectFailure describes a failed connection (see failure).
func connectFailure(err error, a *clientArgs, child *command.Transport) error {
	// The library's own timeout error already says "connect".
	if !strings.HasPrefix(errText(err), "connect: ") {
		err = fmt.Errorf("connect: %w", err)
	}
	return failure(err, a, child)
}

// failure describes err, a failure of the connection or of a request: a
// refusal of the server says what it said and what to do; a timeout says once what timed out (a stdio server is killed at once, its
// process group with it, so its end is no news); otherwise how a stdio
// server ended, when it did.
func failure(err error, a *clientArgs, child *command.Transport) error {
	if msg, ok := authFailure(err, a); ok {
		return msg
	}
	err = stdioFailure(err, a, child)
	if hint := stdoutNoise(child); hint != "" {
		err = fmt.Errorf("%w; %s", err, hint)
	}
	if e := a.childStderr.String(); e != "" {
		err = fmt.Errorf("%w\nthe server's stderr:\n  %s", err, strings.ReplaceAll(sanitize(e), "\n", "\n  "))
	}
	return err
}

// maxKeptStderr bounds the stderr kept of a stdio server.
const maxKeptStderr = 16 << 10

// keptStderr keeps what a stdio server wrote on stderr (the transport
// caps it at maxKeptStderr) to show it when the server fails. A nil
// *keptStderr kept nothing. Make it with newKeptStderr.
type keptStderr struct {
	syncWriter // writes into b
	b          strings.Builder
}

func newKeptStderr() *keptStderr {
	k := &keptStderr{}
	k.w = &k.b
	return k
}

func (k *keptStderr) String() string {
	if k == nil {
		return ""
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return strings.TrimSpace(k.b.String())
}

// stdoutNoise says which line a stdio server wrote on stdout that was not
// JSON-RPC (the first, bounded by the stream), or "" when there was none.
func stdoutNoise(child *command.Transport) string {
	if child == nil {
		return ""
	}
	line := child.FirstInvalidLine()
	if line == "" {
		return ""
	}
	return fmt.Sprintf("the server wrote a line on stdout that is not JSON-RPC: %q (a stdio server logs to stderr; stdout carries only protocol messages)", line)
}

// stdioFailure is failure's description of what is not an authorization
// refusal.
func stdioFailure(err error, a *clientArgs, child *command.Transport) error {
	if !errors.Is(err, context.DeadlineExceeded) {
		return childExit(err, child)
	}
	if child != nil {
		_ = child.Kill()
	}
	what := strings.TrimSuffix(strings.TrimSuffix(errText(err), context.DeadlineExceeded.Error()), ": ")
	if what == "" {
		what = "the request"
	}
	return fmt.Errorf("%s: timed out after %v (--timeout)", what, a.timeout)
}

// diagLogger is the client's diagnostics logger at --log-level.
func diagLogger(level pmcp.LoggingLevel, w io.Writer) *slog.Logger {
	l := logLevel{level: level}
	lv, ok := l.slog()
	if !ok {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lv}))
}

// childExitWait bounds how long a failed command waits to learn how its
// stdio server ended (the pipe usually breaks just before the exit).
const childExitWait = 2 * time.Second

// childExit adds the stdio server's exit status to err when the server
// has ended (it usually has when the connection broke).
func childExit(err error, child *command.Transport) error {
	if child == nil {
		return err
	}
	t := time.NewTimer(childExitWait)
	defer t.Stop()
	select {
	case <-child.Done():
	case <-t.C:
		return err
	}
	werr := child.Wait()
	var ee *exec.ExitError
	switch {
	case werr == nil:
		return fmt.Errorf("%w (the server exited with status 0)", err)
	case errors.As(werr, &ee):
		return fmt.Errorf("%w (the server ended: %v)", err, ee)
	}
	return err
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
func isTerminal(w any) bool {
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
			return nil, errors.New("missing the tool name: pmcp call TOOL [key=value ... | '{json}']")
		}
		args, err := toolArgs(pos[1:])
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, s *pmcp.ClientSession, out *output) (int, error) {
			code, err := callCmd(ctx, s, out, pos[0], args, a.url != "", a.task)
			return code, unknownTool(ctx, s, pos[0], err)
		}, nil
	case "read":
		if len(pos) != 1 {
			return nil, errors.New("missing the URI: pmcp read URI")
		}
		return func(ctx context.Context, s *pmcp.ClientSession, out *output) (int, error) {
			return exitOK, readCmd(ctx, s, out, pos[0])
		}, nil
	case "get":
		if len(pos) < 1 {
			return nil, errors.New("missing the prompt name: pmcp get PROMPT [key=value ...]")
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
