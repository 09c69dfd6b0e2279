package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"golang.org/x/term"
)

const shellHelp = `commands:
  tools                      list the tools
  call TOOL [key=value ...]  call a tool (values as JSON when they parse; quote with ' or ")
  read URI                   read a resource
  get PROMPT [key=value ...] render a prompt
  help                       this text
  exit                       leave (also Ctrl-D)
Tab completes commands and tool names; Up and Down walk the history.
`

// shell runs `pmcp shell`: one session, many commands, typed at a prompt.
func shell(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	v, a := clientVerb("shell")
	pos, tail, code, done := v.start(args, stdout, stderr)
	if done {
		return code
	}
	err := a.finish(v, pos, tail)
	if err == nil && len(pos) > 0 {
		err = fmt.Errorf("unexpected argument %q", pos[0])
	}
	if err != nil {
		return v.usageError(stderr, err)
	}
	var (
		out, errw io.Writer = stdout, &syncWriter{w: stderr}
		readLine  func() (string, error)
		names     []string // tool names, for completion
		tt        *term.Terminal
	)
	// On a terminal (stdin and stderr) the line editor runs on stderr;
	// results go to stdout, through the editor when that is the terminal.
	inFile, _ := stdin.(*os.File)
	if inFile != nil && isTerminal(inFile) && isTerminal(stderr) {
		old, err := term.MakeRaw(int(inFile.Fd()))
		if err != nil {
			return v.fail(stderr, exitError, err)
		}
		defer func() { _ = term.Restore(int(inFile.Fd()), old) }()
		tt = term.NewTerminal(struct {
			io.Reader
			io.Writer
		}{inFile, stderr}, "pmcp> ")
		tt.AutoCompleteCallback = func(line string, pos int, key rune) (string, int, bool) {
			if key != '\t' {
				return "", 0, false
			}
			return complete(line, pos, names)
		}
		errw, readLine = &syncWriter{w: tt}, tt.ReadLine
		if isTerminal(stdout) {
			out = tt
		}
	} else {
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 4096), maxAnswerLine)
		readLine = func() (string, error) {
			if sc.Scan() {
				return sc.Text(), nil
			}
			if err := sc.Err(); err != nil {
				return "", err
			}
			return "", io.EOF
		}
	}
	a.auth.tty = isTerminal(stderr)
	defer a.auth.close()
	in := &interaction{in: stdin, errw: errw, tty: tt != nil, elicitJSON: a.elicitJSON,
		samplingCmd: a.samplingCmd, samplingTO: a.timeout, stop: make(chan struct{})}
	if tt != nil {
		// Elicitation prompts are read by the same line editor.
		in.readFn = func(context.Context) (string, error) {
			tt.SetPrompt("")
			defer tt.SetPrompt("pmcp> ")
			return tt.ReadLine()
		}
	}
	defer in.close()
	s, child, err := connect(ctx, a, in, errw)
	if err != nil {
		return v.fail(errw, exitConn, connectFailure(err, a, child))
	}
	defer closeSession(s)
	o := &output{json: a.json, w: out, errw: errw, progress: a.progress, width: columns(stdout)}
	if s.ServerCapabilities().Tools != nil {
		if tools, err := s.AllTools(ctx); err == nil {
			for _, t := range tools {
				names = append(names, t.Name)
			}
			sort.Strings(names)
			fmt.Fprintf(out, "%s: %d tools: %s\n", sanitize(s.ServerInfo().Name), len(names), sanitize(strings.Join(names, ", ")))
		}
	}
	fmt.Fprint(out, "type help for the commands\n")
	for ctx.Err() == nil {
		line, err := readLine()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return exitOK
			}
			return v.fail(errw, exitError, err)
		}
		f, err := splitWords(line)
		if err != nil {
			fmt.Fprintf(errw, "%s\n", err)
			continue
		}
		if len(f) == 0 {
			continue
		}
		var cerr error
		switch f[0] {
		case "exit", "quit":
			return exitOK
		case "help", "?":
			fmt.Fprint(out, shellHelp)
		case "tools":
			cerr = listCmd(ctx, "tools", s, o)
		case "call":
			if len(f) < 2 {
				cerr = errors.New("usage: call TOOL [key=value ...]")
				break
			}
			targs, err := toolArgs(f[2:])
			if err != nil {
				cerr = err
				break
			}
			_, cerr = callCmd(ctx, s, o, f[1], targs, a.url != "", false)
		case "read":
			if len(f) != 2 {
				cerr = errors.New("usage: read URI")
				break
			}
			cerr = readCmd(ctx, s, o, f[1])
		case "get":
			if len(f) < 2 {
				cerr = errors.New("usage: get PROMPT [key=value ...]")
				break
			}
			pargs, err := promptArgs(f[2:])
			if err != nil {
				cerr = err
				break
			}
			cerr = getCmd(ctx, s, o, f[1], pargs)
		default:
			cerr = fmt.Errorf("unknown command %q (help lists them)", f[0])
		}
		if cerr != nil {
			if msg, ok := missingCapability(cerr); ok {
				cerr = errors.New(msg)
			}
			fmt.Fprintf(errw, "%s\n", errText(cerr))
			select {
			case <-s.Done(): // the connection is gone: no next command
				return v.fail(errw, exitConn, childExit(errors.New("the connection ended"), child))
			default:
			}
		}
	}
	return exitError
}

var shellCommands = []string{"call", "exit", "get", "help", "quit", "read", "tools"}

// complete completes the word before pos: a command as the first word,
// a tool name after "call ". With one match it is completed (and a space
// added); with several, as far as they agree.
func complete(line string, pos int, names []string) (string, int, bool) {
	head := line[:pos]
	words := strings.Fields(head)
	var cands []string
	word := ""
	if len(words) > 0 && !strings.HasSuffix(head, " ") {
		word = words[len(words)-1]
	}
	n := len(words)
	if word == "" {
		n++
	}
	switch {
	case n == 1:
		cands = shellCommands
	case n == 2 && words[0] == "call":
		cands = names
	default:
		return "", 0, false
	}
	var match []string
	for _, c := range cands {
		if strings.HasPrefix(c, word) {
			match = append(match, c)
		}
	}
	if len(match) == 0 {
		return "", 0, false
	}
	common := match[0]
	for _, m := range match[1:] {
		for !strings.HasPrefix(m, common) {
			common = common[:len(common)-1]
		}
	}
	if len(match) == 1 {
		common += " "
	}
	if common == word {
		return "", 0, false
	}
	newHead := head[:len(head)-len(word)] + common
	return newHead + line[pos:], len(newHead), true
}

// splitWords splits a line into words: blanks separate, '...' and "..."
// quote (no escapes inside single quotes; \" and \\ inside double).
func splitWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'' || c == '"':
			inWord = true
			j := i + 1
			for ; j < len(line) && line[j] != c; j++ {
				if c == '"' && line[j] == '\\' && j+1 < len(line) && (line[j+1] == '"' || line[j+1] == '\\') {
					j++
				}
				cur.WriteByte(line[j])
			}
			if j >= len(line) {
				return nil, fmt.Errorf("unterminated %c quote", c)
			}
			i = j
		default:
			inWord = true
			cur.WriteByte(c)
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
