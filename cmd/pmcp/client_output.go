package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
)

// output renders results: human-readable text by default, indented JSON
// with --json. Progress goes to errw: one rewritten line on a terminal,
// one line per update otherwise.
type output struct {
	json     bool
	w        io.Writer
	errw     io.Writer
	progress bool
	tty      bool
	width    int // lists are fitted to it (0: DefaultColumns)

	mu       sync.Mutex
	progLine bool // a \r-rewritten progress line is showing
}

// emitJSON writes v as indented JSON.
func (o *output) emitJSON(v any) error {
	b, err := pmcp.Marshal(v)
	if err != nil {
		return err
	}
	raw := jsontext.Value(b)
	if err := raw.Indent(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(o.w, "%s\n", raw)
	return err
}

// printf writes human output, with server-controlled text sanitised by
// the caller.
func (o *output) printf(format string, args ...any) { fmt.Fprintf(o.w, format, args...) }

// onProgress displays one progress notification.
func (o *output) onProgress(_ context.Context, p *pmcp.ProgressParams) {
	if !o.progress {
		return
	}
	line := fmt.Sprintf("progress %g", p.Progress)
	if p.Total != nil {
		line = fmt.Sprintf("progress %g/%g", p.Progress, *p.Total)
		if *p.Total > 0 {
			line += fmt.Sprintf(" (%.0f%%)", 100*p.Progress / *p.Total)
		}
	}
	if p.Message != "" {
		line += " " + sanitize(strings.ReplaceAll(p.Message, "\n", " "))
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.tty {
		fmt.Fprintf(o.errw, "\r\x1b[K%s", line)
		o.progLine = true
		return
	}
	fmt.Fprintln(o.errw, line)
}

// endProgress ends a terminal progress line.
func (o *output) endProgress() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.progLine {
		fmt.Fprint(o.errw, "\r\x1b[K")
		o.progLine = false
	}
}

// firstLine returns the first line of s, sanitised and cut to n runes.
func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	s = sanitize(strings.TrimSpace(s))
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}

// inspectReport is the --json shape of `pmcp inspect`.
type inspectReport struct {
	Server            *pmcp.Implementation     `json:"serverInfo,omitempty"`
	ProtocolVersion   string                   `json:"protocolVersion"`
	Era               string                   `json:"era"`
	Capabilities      *pmcp.ServerCapabilities `json:"capabilities"`
	Instructions      string                   `json:"instructions,omitempty"`
	Tools             []*pmcp.Tool             `json:"tools"`
	Resources         []*pmcp.Resource         `json:"resources"`
	ResourceTemplates []*pmcp.ResourceTemplate `json:"resourceTemplates"`
	Prompts           []*pmcp.Prompt           `json:"prompts"`
}

func inspect(ctx context.Context, s *pmcp.ClientSession, out *output) (int, error) {
	caps := s.ServerCapabilities()
	r := &inspectReport{
		Server: s.ServerInfo(), ProtocolVersion: s.ProtocolVersion(), Era: s.Era().String(),
		Capabilities: caps, Instructions: s.Instructions(),
		Tools: []*pmcp.Tool{}, Resources: []*pmcp.Resource{}, ResourceTemplates: []*pmcp.ResourceTemplate{}, Prompts: []*pmcp.Prompt{},
	}
	var err error
	if caps.Tools != nil {
		if r.Tools, err = s.AllTools(ctx); err != nil {
			return 0, fmt.Errorf("tools/list: %w", err)
		}
	}
	if caps.Resources != nil {
		if r.Resources, err = s.AllResources(ctx); err != nil {
			return 0, fmt.Errorf("resources/list: %w", err)
		}
		if r.ResourceTemplates, err = s.AllResourceTemplates(ctx); err != nil {
			return 0, fmt.Errorf("resources/templates/list: %w", err)
		}
	}
	if caps.Prompts != nil {
		if r.Prompts, err = s.AllPrompts(ctx); err != nil {
			return 0, fmt.Errorf("prompts/list: %w", err)
		}
	}
	if out.json {
		return exitOK, out.emitJSON(r)
	}
	name, version := "(unnamed)", ""
	if r.Server != nil {
		name, version = sanitize(r.Server.Name), sanitize(r.Server.Version)
		if r.Server.Title != "" {
			name += " (" + sanitize(r.Server.Title) + ")"
		}
	}
	out.printf("Server:       %s %s\n", name, version)
	out.printf("Protocol:     %s (%s era)\n", r.ProtocolVersion, r.Era)
	out.printf("Capabilities: %s\n", capabilityList(caps))
	if r.Instructions != "" {
		instr := firstLine(r.Instructions, 1000)
		if out.width > 0 {
			instr = cut(instr, max(out.width-14, 20))
		}
		out.printf("Instructions: %s\n", instr)
	}
	out.printf("\nTools (%d):\n", len(r.Tools))
	printTools(out, r.Tools)
	out.printf("\nResources (%d):\n", len(r.Resources))
	printResources(out, r.Resources)
	out.printf("\nResource templates (%d):\n", len(r.ResourceTemplates))
	printTemplates(out, r.ResourceTemplates, "")
	out.printf("\nPrompts (%d):\n", len(r.Prompts))
	printPrompts(out, r.Prompts)
	return exitOK, nil
}

// capabilityList renders server capabilities as "tools (listChanged),
// resources (subscribe), ...".
func capabilityList(c *pmcp.ServerCapabilities) string {
	var parts []string
	lc := func(name string, on bool) {
		if on {
			parts = append(parts, name+" (listChanged)")
		} else {
			parts = append(parts, name)
		}
	}
	if c.Tools != nil {
		lc("tools", c.Tools.ListChanged)
	}
	if c.Resources != nil {
		var f []string
		if c.Resources.Subscribe {
			f = append(f, "subscribe")
		}
		if c.Resources.ListChanged {
			f = append(f, "listChanged")
		}
		if len(f) > 0 {
			parts = append(parts, "resources ("+strings.Join(f, ", ")+")")
		} else {
			parts = append(parts, "resources")
		}
	}
	if c.Prompts != nil {
		lc("prompts", c.Prompts.ListChanged)
	}
	if c.Logging != nil {
		parts = append(parts, "logging")
	}
	if c.Completions != nil {
		parts = append(parts, "completions")
	}
	exts := make([]string, 0, len(c.Extensions))
	for k := range c.Extensions {
		exts = append(exts, sanitize(k))
	}
	sort.Strings(exts)
	parts = append(parts, exts...)
	if len(parts) == 0 {
		return "(none)"
	}
	return strings.Join(parts, ", ")
}

func printTools(out *output, tools []*pmcp.Tool) {
	rows := make([][2]string, 0, len(tools))
	for _, t := range tools {
		rows = append(rows, [2]string{sanitize(t.Name), firstLine(t.Description, 1000)})
	}
	printColumns(out, rows)
}

// maxNameColumn caps the width of a list's name column; a longer name is
// shown whole all the same (names are what one types to use them).
const maxNameColumn = 40

// printColumns prints name/description rows. Names are never cut. Fitted
// to a width (a terminal's, or $COLUMNS), the name column is as wide as
// the longest name up to maxNameColumn (and half the width); a longer
// name has a line of its own, its description on the next line in the
// column; descriptions beyond the width end in "…". Without a width
// (piped output) nothing is cut and a longer name pushes its description
// along on its line.
func printColumns(out *output, rows [][2]string) {
	width := out.width
	col := 0
	for _, r := range rows {
		col = max(col, utf8.RuneCountInString(r[0]))
	}
	col = min(col, maxNameColumn)
	if width > 0 {
		col = min(col, max((width-3)/2, 8))
	}
	for _, r := range rows {
		name, desc := r[0], r[1]
		if width > 0 {
			if desc = cut(desc, width-3-col); width-3-col < 8 {
				desc = ""
			}
		}
		pad := col - utf8.RuneCountInString(name)
		switch {
		case desc == "":
			out.printf("  %s\n", name)
		case pad < 0 && width > 0:
			out.printf("  %s\n  %s %s\n", name, strings.Repeat(" ", col), desc)
		default:
			out.printf("  %s%s %s\n", name, strings.Repeat(" ", max(pad, 0)), desc)
		}
	}
}

// cut shortens s to n runes, ending in "…" when it was longer.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:max(n-1, 0)]) + "…"
}

func printResources(out *output, rs []*pmcp.Resource) {
	rows := make([][2]string, 0, len(rs))
	for _, r := range rs {
		desc := firstLine(r.Name, 1000)
		if r.MIMEType != "" {
			desc += "  [" + sanitize(r.MIMEType) + "]"
		}
		rows = append(rows, [2]string{sanitize(r.URI), desc})
	}
	printColumns(out, rows)
}

func printTemplates(out *output, ts []*pmcp.ResourceTemplate, suffix string) {
	rows := make([][2]string, 0, len(ts))
	for _, t := range ts {
		rows = append(rows, [2]string{sanitize(t.URITemplate), firstLine(t.Name, 1000) + suffix})
	}
	printColumns(out, rows)
}

func printPrompts(out *output, ps []*pmcp.Prompt) {
	rows := make([][2]string, 0, len(ps))
	for _, p := range ps {
		args := make([]string, 0, len(p.Arguments))
		for _, a := range p.Arguments {
			if a == nil {
				continue
			}
			n := sanitize(a.Name)
			if a.Required {
				n += "*"
			}
			args = append(args, n)
		}
		rows = append(rows, [2]string{sanitize(p.Name) + "(" + strings.Join(args, ", ") + ")", firstLine(p.Description, 1000)})
	}
	printColumns(out, rows)
}

func listCmd(ctx context.Context, what string, s *pmcp.ClientSession, out *output) error {
	switch what {
	case "tools":
		tools, err := s.AllTools(ctx)
		if err != nil {
			return err
		}
		if out.json {
			return out.emitJSON(map[string]any{"tools": tools})
		}
		printTools(out, tools)
	case "resources":
		rs, err := s.AllResources(ctx)
		if err != nil {
			return err
		}
		ts, err := s.AllResourceTemplates(ctx)
		if err != nil {
			return err
		}
		if out.json {
			return out.emitJSON(map[string]any{"resources": rs, "resourceTemplates": ts})
		}
		printResources(out, rs)
		printTemplates(out, ts, "  (template)")
	case "prompts":
		ps, err := s.AllPrompts(ctx)
		if err != nil {
			return err
		}
		if out.json {
			return out.emitJSON(map[string]any{"prompts": ps})
		}
		printPrompts(out, ps)
	}
	return nil
}

// callCmd calls a tool. Over HTTP it lists the tools first, so that the
// client knows the tool's x-mcp-header annotations (Mcp-Param-* headers).
// A result with isError exits 1.
func callCmd(ctx context.Context, s *pmcp.ClientSession, out *output, tool string, args jsontext.Value, http, task bool) (int, error) {
	if http && s.Era() == pmcp.EraModern && s.ServerCapabilities().Tools != nil {
		if _, err := s.AllTools(ctx); err != nil {
			return 0, fmt.Errorf("tools/list: %w", err)
		}
	}
	var a any
	if args != nil {
		a = args
	}
	var res *pmcp.CallToolResult
	var err error
	if task {
		res, err = callTask(ctx, s, out, tool, a)
	} else {
		res, err = s.CallTool(ctx, tool, a, pmcp.WithProgress(out.onProgress))
	}
	out.endProgress()
	if err != nil {
		return 0, err
	}
	code := exitOK
	if res.IsError {
		code = exitError
		fmt.Fprintf(out.errw, "pmcp call: tool %q reported an error\n", sanitize(tool))
	}
	if out.json {
		return code, out.emitJSON(res)
	}
	printContent(out, res.Content)
	if len(res.Content) == 0 && res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err == nil {
			raw := jsontext.Value(b)
			_ = raw.Indent()
			out.printf("%s\n", raw)
		}
	}
	return code, nil
}

// printContent renders content blocks: text as it is, everything else as
// a one-line description.
func printContent(out *output, cs []pmcp.Content) {
	for _, c := range cs {
		switch c := c.(type) {
		case *pmcp.TextContent:
			out.printf("%s\n", sanitize(c.Text))
		case *pmcp.ImageContent:
			out.printf("[image %s, %d bytes base64]\n", sanitize(c.MIMEType), len(c.Data))
		case *pmcp.AudioContent:
			out.printf("[audio %s, %d bytes base64]\n", sanitize(c.MIMEType), len(c.Data))
		case *pmcp.ResourceLink:
			out.printf("[resource link %s %s]\n", sanitize(c.URI), firstLine(c.Name, 60))
		case *pmcp.EmbeddedResource:
			if c.Resource != nil {
				printContents(out, []*pmcp.ResourceContents{c.Resource})
			}
		default:
			b, err := pmcp.Marshal(c)
			if err == nil {
				out.printf("%s\n", sanitize(string(b)))
			}
		}
	}
}

func printContents(out *output, cs []*pmcp.ResourceContents) {
	for _, c := range cs {
		if c == nil {
			continue
		}
		if c.Blob != "" {
			out.printf("[%s: blob %s, %d bytes base64]\n", sanitize(c.URI), sanitize(c.MIMEType), len(c.Blob))
			continue
		}
		out.printf("%s\n", sanitize(c.Text))
	}
}

func readCmd(ctx context.Context, s *pmcp.ClientSession, out *output, uri string) error {
	res, err := s.ReadResource(ctx, uri, pmcp.WithProgress(out.onProgress))
	out.endProgress()
	if err != nil {
		return err
	}
	if out.json {
		return out.emitJSON(res)
	}
	printContents(out, res.Contents)
	return nil
}

func getCmd(ctx context.Context, s *pmcp.ClientSession, out *output, name string, args map[string]string) error {
	res, err := s.GetPrompt(ctx, name, args, pmcp.WithProgress(out.onProgress))
	out.endProgress()
	if err != nil {
		return err
	}
	if out.json {
		return out.emitJSON(res)
	}
	if res.Description != "" {
		out.printf("# %s\n", firstLine(res.Description, 200))
	}
	for _, m := range res.Messages {
		if m == nil {
			continue
		}
		out.printf("%s:\n", sanitize(m.Role))
		if m.Content != nil {
			printContent(out, []pmcp.Content{m.Content})
		}
	}
	return nil
}

// callTask runs a tool as a task, printing each status change (and the
// task id) on stderr; Ctrl-C cancels the task on the server.
func callTask(ctx context.Context, s *pmcp.ClientSession, out *output, tool string, args any) (*pmcp.CallToolResult, error) {
	t, err := s.CallToolTask(ctx, tool, args, 0)
	if err != nil {
		return nil, err
	}
	// Wait reports each status once, the one it was created with first.
	res, err := t.Wait(ctx, func(st *pmcp.DetailedTask) {
		if !out.progress {
			return
		}
		line := "task " + sanitize(st.TaskID) + ": " + sanitize(st.Status)
		if st.StatusMessage != "" {
			line += " (" + sanitize(st.StatusMessage) + ")"
		}
		fmt.Fprintln(out.errw, line)
	})
	if err != nil && ctx.Err() != nil && t.ID() != "" {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = t.Cancel(cctx)
	}
	return res, err
}
