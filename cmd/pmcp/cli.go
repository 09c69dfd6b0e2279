package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gopmcp/pmcp"
	"golang.org/x/term"
)

// verb is one command of the command line: its flags, its usage text and
// its parsing, the same for every command.
type verb struct {
	name     string
	synopsis string // after "usage: "
	about    string // what the command does, before the flags
	fs       *flag.FlagSet
	// logLevel is --log-level (every verb has it).
	logLevel logLevel
}

// newVerb returns a verb with the flags every command has.
func newVerb(name, synopsis, about string) *verb {
	v := &verb{name: name, synopsis: synopsis, about: about, fs: flag.NewFlagSet("pmcp "+name, flag.ContinueOnError)}
	v.fs.SetOutput(io.Discard)
	v.fs.Usage = func() {}
	v.logLevel = logLevel{level: pmcp.LevelInfo}
	v.fs.Var(&v.logLevel, "log-level", logLevelUsage(name))
	return v
}

// logLevelUsage describes --log-level for the command name: what the
// level filters besides the diagnostics.
func logLevelUsage(name string) string {
	shows := "diagnostics shown on stderr"
	switch name {
	case "serve":
		shows += ", also the access log"
	case "bridge", "gateway":
		shows += ", at debug also the access log"
	case "login", "logout", "version", "doctor":
	default:
		shows += ", also the server's log records"
	}
	return shows + ": off, debug, info, notice, warning, error, critical, alert, emergency"
}

// usage writes the command's usage text and its flags.
func (v *verb) usage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s\n\n", v.synopsis)
	if v.about != "" {
		fmt.Fprintf(w, "%s\n\n", strings.TrimSpace(v.about))
	}
	if strings.Contains(v.synopsis, "-- COMMAND") {
		fmt.Fprintln(w, "flags (anywhere before --):")
	} else {
		fmt.Fprintln(w, "flags:")
	}
	v.fs.VisitAll(func(f *flag.Flag) {
		name, text := flag.UnquoteUsage(f)
		dash := "--"
		if len(f.Name) == 1 {
			dash = "-"
		}
		head := "  " + dash + f.Name
		switch {
		case name == "value":
			head += " VALUE"
		case name != "":
			head += " " + strings.ToUpper(name)
		}
		if !isZeroDefault(f) {
			text += " (default " + f.DefValue + ")"
		}
		fmt.Fprintf(w, "%s\n      %s\n", head, text)
	})
	fmt.Fprint(w, "\nexit codes: 0 success, 1 error (the server's or the tool's), 2 usage error, 3 connection or protocol failure\n")
}

// isZeroDefault reports whether f's default is its type's zero value
// ("", false, 0, 0s, []), which usage does not show: a flag whose real
// default is applied later says so in its text.
func isZeroDefault(f *flag.Flag) bool {
	if f.DefValue == "" || f.DefValue == "[]" {
		return true
	}
	t := reflect.TypeOf(f.Value)
	if t.Kind() != reflect.Pointer {
		return false
	}
	zero, ok := reflect.New(t.Elem()).Interface().(flag.Value)
	return ok && f.DefValue == zero.String()
}

// parse reads flags anywhere before "--": it returns the positional
// arguments and, when "--" is present, everything after it (tail is
// non-nil then, even if empty).
func (v *verb) parse(args []string) (pos, tail []string, err error) {
	head := args
	if i := slices.Index(args, "--"); i >= 0 {
		head, tail = args[:i], append([]string{}, args[i+1:]...)
	}
	for {
		if err := v.fs.Parse(head); err != nil {
			return nil, nil, err
		}
		rest := v.fs.Args()
		if len(rest) == 0 {
			return pos, tail, nil
		}
		pos = append(pos, rest[0])
		head = rest[1:]
	}
}

// start parses args for the verb: -h prints the usage on stdout (done,
// exit 0); a bad flag prints one line on stderr (done, exit 2).
func (v *verb) start(args []string, stdout, stderr io.Writer) (pos, tail []string, code int, done bool) {
	pos, tail, err := v.parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		v.usage(stdout)
		return nil, nil, exitOK, true
	case err != nil:
		return nil, nil, v.usageError(stderr, flagError(err)), true
	}
	return pos, tail, exitOK, false
}

var (
	undefinedFlag = regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)
	invalidFlag   = regexp.MustCompile(`^invalid (?:boolean )?value (".*") for flag -([^:]*): (.*)$`)
	missingValue  = regexp.MustCompile(`^flag needs an argument: -+(.*)$`)
)

// flagError rewords the flag package's errors in the CLI's terms
// (flags are written with two dashes).
func flagError(err error) error {
	s := err.Error()
	if m := undefinedFlag.FindStringSubmatch(s); m != nil {
		return fmt.Errorf("unknown flag --%s", m[1])
	}
	if m := invalidFlag.FindStringSubmatch(s); m != nil {
		if strings.Contains(m[3], m[1]) {
			return fmt.Errorf("--%s: %s", m[2], m[3])
		}
		return fmt.Errorf("--%s: %s: %s", m[2], m[1], m[3])
	}
	if m := missingValue.FindStringSubmatch(s); m != nil {
		return fmt.Errorf("--%s needs a value", m[1])
	}
	return err
}

// usageError prints one line naming the command and returns exitUsage.
func (v *verb) usageError(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "pmcp %s: %s (pmcp help %s)\n", v.name, errText(err), v.name)
	return exitUsage
}

// fail prints an error of the command (one line per error, without the
// library's own "pmcp: " prefix) and returns code.
func (v *verb) fail(stderr io.Writer, code int, err error) int {
	fmt.Fprintf(stderr, "pmcp %s: %s\n", v.name, errText(err))
	return code
}

// errText is an error's message without the "pmcp: " prefixes the
// library's errors carry (the CLI names itself once, in front).
func errText(err error) string {
	s := err.Error()
	for {
		t := strings.TrimPrefix(s, "pmcp: ")
		t = strings.ReplaceAll(t, ": pmcp: ", ": ")
		if t == s {
			return s
		}
		s = t
	}
}

// logLevel is --log-level: off, or an MCP logging level (slog's warn is
// taken for warning).
type logLevel struct {
	level pmcp.LoggingLevel // LevelOff: off
}

func (l *logLevel) String() string {
	if l == nil || l.level == pmcp.LevelUnset {
		return "" // the zero value: no level chosen (usage shows the default, info)
	}
	if l.level == pmcp.LevelOff {
		return "off"
	}
	b, _ := l.level.MarshalText()
	return string(b)
}

func (l *logLevel) Set(s string) error {
	s = strings.ToLower(s)
	switch s {
	case "off":
		l.level = pmcp.LevelOff
		return nil
	case "warn":
		s = "warning"
	}
	v, err := pmcp.ParseLoggingLevel(s)
	if err != nil {
		return fmt.Errorf("%q is not off, debug, info, notice, warning, error, critical, alert or emergency", s)
	}
	l.level = v
	return nil
}

// slog is the diagnostics level: ok is false for off.
func (l *logLevel) slog() (lv slog.Level, ok bool) {
	switch {
	case l.level == pmcp.LevelOff:
		return 0, false
	case l.level <= pmcp.LevelDebug:
		return slog.LevelDebug, true
	case l.level <= pmcp.LevelNotice:
		return slog.LevelInfo, true
	case l.level <= pmcp.LevelWarning:
		return slog.LevelWarn, true
	}
	return slog.LevelError, true
}

// logger returns the diagnostics logger on w (nil for off); format is
// "text" or "json".
func (l *logLevel) logger(w io.Writer, format string) (*slog.Logger, error) {
	lv, ok := l.slog()
	ho := &slog.HandlerOptions{Level: lv}
	var h slog.Handler
	switch format {
	case "text":
		h = slog.NewTextHandler(w, ho)
	case "json":
		h = slog.NewJSONHandler(w, ho)
	default:
		return nil, fmt.Errorf("--log-format: %q is not text or json", format)
	}
	if !ok {
		return nil, nil
	}
	return slog.New(h), nil
}

// verbFor returns a fresh verb of the command name (for `pmcp help
// VERB`), or nil.
func verbFor(name string) *verb {
	switch name {
	case "serve":
		v, _ := serveVerb()
		return v
	case "bridge":
		v, _ := bridgeVerb()
		return v
	case "gateway":
		v, _ := gatewayVerb()
		return v
	case "inspect", "tools", "resources", "prompts", "call", "read", "get", "login", "shell":
		v, _ := clientVerb(name)
		return v
	case "logout":
		v, _, _ := logoutVerb()
		return v
	case "version":
		v, _ := versionVerb()
		return v
	case "doctor":
		v, _ := doctorVerb()
		return v
	}
	return nil
}

// help runs `pmcp help [VERB]`.
func help(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		return exitOK
	}
	v := verbFor(args[0])
	if v == nil {
		fmt.Fprintf(stderr, "pmcp help: %s\n", unknownCommand(args[0]))
		return exitUsage
	}
	v.usage(stdout)
	return exitOK
}

// columns is the width lists are fitted to: the terminal's, else
// $COLUMNS, else 0 (no limit: piped output keeps whole names).
func columns(w io.Writer) int {
	if f, ok := w.(*os.File); ok && isTerminal(f) {
		if c, _, err := term.GetSize(int(f.Fd())); err == nil && c > 0 {
			return c
		}
	}
	if c, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && c > 0 {
		return c
	}
	return 0
}
