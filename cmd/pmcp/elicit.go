package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// DefaultSamplingTimeout bounds one run of --sampling-cmd.
const DefaultSamplingTimeout = 2 * time.Minute

// DefaultSamplingOutputLimit bounds what --sampling-cmd may print (its
// result JSON); more is an error.
const DefaultSamplingOutputLimit = 1 << 20

// maxAnswerLine bounds one line typed at an elicitation prompt.
const maxAnswerLine = 64 << 10

// interaction answers the server's elicitation and sampling requests for
// the client commands: on a terminal by asking, else from --elicit-json,
// else by declining.
type interaction struct {
	in   io.Reader // the terminal (when tty)
	errw io.Writer // prompts and notes
	tty  bool      // stdin and stderr are a terminal
	// elicitJSON are the --elicit-json answers: one answers every form,
	// several answer the forms in the order asked, one each (elicited
	// counts the forms answered so far; in.mu guards it).
	elicitJSON  []map[string]any
	elicited    int
	samplingCmd string
	samplingTO  time.Duration
	samplingMax int
	// readFn, when set, reads the answers instead of in (pmcp shell's
	// line editor).
	readFn func(ctx context.Context) (string, error)

	mu      sync.Mutex // one elicitation at a time
	once    sync.Once
	lines   chan lineResult
	stop    chan struct{}
	readErr error // the terminal's read error (io.EOF after Ctrl-D), sticky
}

type lineResult struct {
	s   string
	err error
}

// close stops the terminal reader (a read already blocked ends when the
// terminal does).
func (in *interaction) close() { close(in.stop) }

// readLine returns the next line typed (without its newline); io.EOF
// when the terminal ended (Ctrl-D).
func (in *interaction) readLine(ctx context.Context) (string, error) {
	if in.readFn != nil {
		return in.readFn(ctx)
	}
	in.once.Do(func() {
		in.lines = make(chan lineResult)
		stop := in.stop
		go func() {
			sc := bufio.NewScanner(in.in)
			sc.Buffer(make([]byte, 1024), maxAnswerLine)
			for {
				var r lineResult
				if sc.Scan() {
					r.s = strings.TrimRight(sc.Text(), "\r")
				} else if r.err = sc.Err(); r.err == nil {
					r.err = io.EOF
				}
				select {
				case in.lines <- r:
				case <-stop:
					return
				}
				if r.err != nil {
					return
				}
			}
		}()
	})
	if in.readErr != nil {
		return "", in.readErr
	}
	select {
	case r := <-in.lines:
		in.readErr = r.err
		return r.s, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// clientOptions adds the handlers and the capabilities they declare.
func (in *interaction) clientOptions(o *pmcp.ClientOptions) {
	o.Elicitation = in.elicit
	o.ElicitationURL = true
	if in.samplingCmd != "" {
		o.Sampling = in.sample
	}
}

var (
	declined  = &pmcp.ElicitResult{Action: "decline"}
	cancelled = &pmcp.ElicitResult{Action: "cancel"}
)

func (in *interaction) elicit(ctx context.Context, p *pmcp.ElicitParams) (*pmcp.ElicitResult, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	url := p.Mode == "url"
	if !url && len(in.elicitJSON) > 0 {
		answer, n := in.elicitJSON[0], in.elicited
		in.elicited++
		if len(in.elicitJSON) > 1 {
			if n >= len(in.elicitJSON) {
				fmt.Fprintf(in.errw, "pmcp: --elicit-json has %d answers and the server asks form %d %q: declined\n", len(in.elicitJSON), n+1, firstLine(p.Message, 200))
				return declined, nil
			}
			answer = in.elicitJSON[n]
		}
		fields, err := parseForm(p.RequestedSchema)
		if err != nil {
			fmt.Fprintf(in.errw, "pmcp: declined the server's form: %v\n", err)
			return declined, nil
		}
		content, err := validateContent(fields, answer)
		if err != nil {
			fmt.Fprintf(in.errw, "pmcp: --elicit-json does not fit the server's form %d (%v): declined\n", n+1, err)
			return declined, nil
		}
		return &pmcp.ElicitResult{Action: "accept", Content: content}, nil
	}
	if !in.tty {
		what := "form"
		if url {
			what = "URL"
		}
		fmt.Fprintf(in.errw, "pmcp: declined the server's %s request %q (no terminal to ask on; give --elicit-json for forms)\n", what, firstLine(p.Message, 200))
		return declined, nil
	}
	if url {
		return in.askURL(ctx, p)
	}
	return in.askForm(ctx, p)
}

// parseElicitJSON reads one --elicit-json value: a JSON object (one
// answer) or a non-empty JSON array of objects (one answer per form).
func parseElicitJSON(j string) ([]map[string]any, error) {
	bad := fmt.Errorf("want a JSON object or a non-empty array of objects, got %q", firstLine(j, 200))
	var one map[string]any
	if err := json.Unmarshal([]byte(j), &one); err == nil {
		if one == nil {
			return nil, bad
		}
		return []map[string]any{one}, nil
	}
	var many []map[string]any
	if err := json.Unmarshal([]byte(j), &many); err != nil || len(many) == 0 || slices.ContainsFunc(many, func(m map[string]any) bool { return m == nil }) {
		return nil, bad
	}
	return many, nil
}

// askURL shows the URL and waits for Enter (accept); Ctrl-D declines.
func (in *interaction) askURL(ctx context.Context, p *pmcp.ElicitParams) (*pmcp.ElicitResult, error) {
	fmt.Fprintf(in.errw, "\nThe server asks you to open a page: %s\n  %s\nPress Enter once you have opened it (Ctrl-D declines): ", firstLine(p.Message, 500), sanitize(p.URL))
	if _, err := in.readLine(ctx); err != nil {
		return in.ended(err)
	}
	return &pmcp.ElicitResult{Action: "accept"}, nil
}

// ended maps a read that did not give a line: EOF declines, a cancelled
// context cancels.
func (in *interaction) ended(err error) (*pmcp.ElicitResult, error) {
	fmt.Fprintln(in.errw)
	if errors.Is(err, io.EOF) {
		return declined, nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return cancelled, nil
	}
	return nil, err
}

// askForm asks for each field of the form in turn.
func (in *interaction) askForm(ctx context.Context, p *pmcp.ElicitParams) (*pmcp.ElicitResult, error) {
	fields, err := parseForm(p.RequestedSchema)
	if err != nil {
		fmt.Fprintf(in.errw, "pmcp: declined the server's form: %v\n", err)
		return declined, nil
	}
	fmt.Fprintf(in.errw, "\nThe server asks: %s\n", firstLine(p.Message, 500))
	for {
		fmt.Fprint(in.errw, "Answer? [a]ccept (fill in the form), [d]ecline, [c]ancel [a]: ")
		s, err := in.readLine(ctx)
		if err != nil {
			return in.ended(err)
		}
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "", "a", "accept":
		case "d", "decline":
			return declined, nil
		case "c", "cancel":
			return cancelled, nil
		default:
			continue
		}
		break
	}
	content := map[string]any{}
	for _, f := range fields {
		v, err := in.askField(ctx, f)
		if err != nil {
			return in.ended(err)
		}
		if v != nil {
			content[f.name] = v
		}
	}
	return &pmcp.ElicitResult{Action: "accept", Content: content}, nil
}

// askField asks for one field until the answer fits; nil means left out.
func (in *interaction) askField(ctx context.Context, f *formField) (any, error) {
	head := f.label()
	if f.description != "" {
		head += " - " + firstLine(f.description, 200)
	}
	if f.required {
		head += " (required)"
	}
	fmt.Fprintf(in.errw, "  %s\n", head)
	for i, c := range f.choices {
		l := sanitize(c)
		if i < len(f.labels) && f.labels[i] != "" {
			l = sanitize(f.labels[i]) + " (" + l + ")"
		}
		fmt.Fprintf(in.errw, "    %d) %s\n", i+1, l)
	}
	hint := map[string]string{"string": "text", "number": "number", "integer": "integer", "boolean": "y/n", "array": "numbers, comma-separated"}[f.typ]
	if len(f.choices) > 0 && f.typ != "array" {
		hint = fmt.Sprintf("1-%d", len(f.choices))
	}
	if f.typ == "boolean" && f.def != nil {
		hint = f.defaultText()
	} else if d := f.defaultText(); d != "" {
		hint += ", default " + sanitize(d)
	}
	for {
		fmt.Fprintf(in.errw, "  %s [%s]: ", sanitize(f.name), hint)
		s, err := in.readLine(ctx)
		if err != nil {
			return nil, err
		}
		s = strings.TrimSpace(s)
		if s == "" {
			if f.def != nil {
				return f.def, nil
			}
			if f.required {
				fmt.Fprintf(in.errw, "  %s is required\n", sanitize(f.name))
				continue
			}
			return nil, nil
		}
		v, err := f.parseInput(s)
		if err != nil {
			fmt.Fprintf(in.errw, "  %s\n", sanitize(err.Error()))
			continue
		}
		return v, nil
	}
}

// sample runs --sampling-cmd with the request JSON on its stdin and reads
// the result JSON from its stdout, bounded in time and size.
func (in *interaction) sample(ctx context.Context, p *pmcp.CreateMessageParams) (*pmcp.CreateMessageResult, error) {
	req, err := pmcp.Marshal(p)
	if err != nil {
		return nil, err
	}
	to, limit := in.samplingTO, in.samplingMax
	if to <= 0 {
		to = DefaultSamplingTimeout
	}
	if limit <= 0 {
		limit = DefaultSamplingOutputLimit
	}
	ctx, cancel := context.WithTimeout(ctx, to)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", in.samplingCmd)
	cmd.Stdin = bytes.NewReader(req)
	out := &capBuffer{max: limit}
	cmd.Stdout = out
	cmd.Stderr = in.errw
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	switch {
	case out.over:
		return nil, samplingError(fmt.Sprintf("--sampling-cmd printed more than %d bytes", limit))
	case ctx.Err() != nil:
		return nil, samplingError(fmt.Sprintf("--sampling-cmd did not finish within %v", to))
	case err != nil:
		return nil, samplingError(fmt.Sprintf("--sampling-cmd failed: %v", err))
	}
	var res pmcp.CreateMessageResult
	if err := pmcp.Unmarshal(out.Bytes(), &res); err != nil {
		return nil, samplingError(fmt.Sprintf("--sampling-cmd printed no CreateMessageResult JSON: %v", err))
	}
	if res.Content == nil || res.Role == "" {
		return nil, samplingError("--sampling-cmd printed a result without role or content")
	}
	return &res, nil
}

// samplingError is what the server gets when the sampling command fails.
func samplingError(msg string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}
}

// capBuffer keeps at most max bytes and notes an overflow (the command is
// then failed by the write error). The buffer is not embedded: its
// ReadFrom would let io.Copy bypass the bound.
type capBuffer struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (b *capBuffer) Write(p []byte) (int, error) {
	if b.buf.Len()+len(p) > b.max {
		b.over = true
		return 0, errors.New("output limit exceeded")
	}
	return b.buf.Write(p)
}

func (b *capBuffer) Bytes() []byte { return b.buf.Bytes() }

// missingCapability explains a -32021 error: which client capabilities
// the server needs, and how the CLI provides them.
func missingCapability(err error) (string, bool) {
	var re *jsonrpc.Error
	if !errors.As(err, &re) || re.Code != jsonrpc.CodeMissingRequiredClientCapability {
		return "", false
	}
	var data struct {
		Required map[string]jsontext.Value `json:"requiredCapabilities"`
	}
	_ = json.Unmarshal(re.Data, &data)
	names := make([]string, 0, len(data.Required))
	for k := range data.Required {
		names = append(names, sanitize(k))
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "the server needs a client capability it did not name (error -32021)", true
	}
	msg := "the server needs the client capability " + strings.Join(names, ", ")
	for _, n := range names {
		switch n {
		case "sampling":
			msg += "; give --sampling-cmd CMD to answer sampling"
		case "roots":
			msg += "; the CLI does not offer roots"
		}
	}
	return msg + " (error -32021)", true
}
