package interop

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
)

// A probe is one request of the matrix. The list methods carry no params
// at all (params == nil), exactly as the TypeScript SDK sends them; the
// modern clients send only _meta.
type probe struct {
	Name       string            `json:"name"`
	Method     string            `json:"method"`
	Tool       string            `json:"-"` // tools/call
	Args       map[string]any    `json:"-"` // tools/call
	Prompt     string            `json:"-"` // prompts/get
	PromptArgs map[string]string `json:"-"` // prompts/get
	URI        string            `json:"-"` // resources/read
	Ref        map[string]any    `json:"-"` // completion/complete
	Argument   map[string]string `json:"-"` // completion/complete
	// Progress asks for progress notifications (tools/call).
	Progress bool `json:"progress,omitempty"`
	// Extra marks a second probe of a method, which the Inspector CLI
	// (one process per probe) leaves out.
	Extra bool `json:"-"`
	// Task makes a tools/call task-augmented: "wait" polls tasks/get to
	// the end and fetches tasks/result, "cancel" cancels it first.
	Task string `json:"task,omitempty"`
}

// arguments is a tools/call's arguments: always an object.
func (p probe) arguments() map[string]any {
	if p.Args == nil {
		return map[string]any{}
	}
	return p.Args
}

// params is the probe's wire params, nil for none.
func (p probe) params() map[string]any {
	switch p.Method {
	case "tools/call":
		m := map[string]any{"name": p.Tool, "arguments": p.arguments()}
		if p.Task != "" {
			m["task"] = map[string]any{"ttl": 60000}
		}
		return m
	case "prompts/get":
		return map[string]any{"name": p.Prompt, "arguments": p.PromptArgs}
	case "resources/read":
		return map[string]any{"uri": p.URI}
	case "completion/complete":
		return map[string]any{"ref": p.Ref, "argument": p.Argument}
	}
	return nil
}

// MarshalJSON is the form probe.mjs reads.
func (p probe) MarshalJSON() ([]byte, error) {
	type wire probe
	return json.Marshal(struct {
		wire
		Params map[string]any `json:"params,omitempty"`
	}{wire(p), p.params()})
}

// listProbes are the methods whose params are all optional, sent without
// params (issue 18 item 1).
var listProbes = []probe{
	{Name: "ping", Method: "ping"},
	{Name: "tools/list", Method: "tools/list"},
	{Name: "prompts/list", Method: "prompts/list"},
	{Name: "resources/list", Method: "resources/list"},
	{Name: "resources/templates/list", Method: "resources/templates/list"},
}

// probesFor is the probe set of an upstream family.
func probesFor(family, fsRoot string, tasks bool) []probe {
	if tasks {
		return []probe{
			{Name: "task", Method: "tools/call", Tool: "slow_compute", Args: map[string]any{"seconds": 0.1, "label": "bridged"}, Task: "wait"},
			{Name: "task-failing", Method: "tools/call", Tool: "failing_job", Task: "wait"},
			// Long enough to be cancelled while it works; short, as a
			// server that ignores the task asked for runs it at once.
			{Name: "task-cancel", Method: "tools/call", Tool: "slow_compute", Args: map[string]any{"seconds": 5, "label": "cancelled"}, Task: "cancel"},
			// Without params, as the list methods; after the three above.
			{Name: "tasks/list", Method: "tasks/list"},
		}
	}
	ps := slices.Clone(listProbes)
	switch family {
	case "pmcp":
		ps = append(ps,
			probe{Name: "call", Method: "tools/call", Tool: "echo", Args: map[string]any{"text": "through"}},
			probe{Name: "call-add", Method: "tools/call", Tool: "add", Args: map[string]any{"a": 2, "b": 40}, Extra: true},
			probe{Name: "prompt", Method: "prompts/get", Prompt: "test_prompt_with_arguments", PromptArgs: map[string]string{"arg1": "x", "arg2": "y"}},
			probe{Name: "read", Method: "resources/read", URI: "test://static-text"},
			probe{Name: "read-template", Method: "resources/read", URI: "test://template/7/data", Extra: true},
			probe{Name: "complete", Method: "completion/complete", Ref: map[string]any{"type": "ref/prompt", "name": "test_prompt_with_arguments"}, Argument: map[string]string{"name": "arg1", "value": "t"}},
			probe{Name: "progress", Method: "tools/call", Tool: "test_tool_with_progress", Progress: true})
	case "everything":
		ps = append(ps,
			probe{Name: "call", Method: "tools/call", Tool: "echo", Args: map[string]any{"message": "through"}},
			probe{Name: "call-add", Method: "tools/call", Tool: "get-sum", Args: map[string]any{"a": 2, "b": 40}, Extra: true},
			probe{Name: "prompt", Method: "prompts/get", Prompt: "args-prompt", PromptArgs: map[string]string{"city": "Paris"}},
			probe{Name: "read", Method: "resources/read", URI: "demo://resource/static/document/architecture.md"},
			probe{Name: "complete", Method: "completion/complete", Ref: map[string]any{"type": "ref/prompt", "name": "completable-prompt"}, Argument: map[string]string{"name": "department", "value": "E"}},
			probe{Name: "progress", Method: "tools/call", Tool: "trigger-long-running-operation", Args: map[string]any{"duration": 0.2, "steps": 2}, Progress: true})
	case "filesystem":
		ps = append(ps,
			probe{Name: "call", Method: "tools/call", Tool: "read_text_file", Args: map[string]any{"path": filepath.Join(fsRoot, "hello.txt")}},
			probe{Name: "call-dirs", Method: "tools/call", Tool: "list_allowed_directories", Extra: true})
	case gosdkFamily:
		ps = append(ps,
			probe{Name: "call", Method: "tools/call", Tool: "add", Args: map[string]any{"a": 2, "b": 40}},
			probe{Name: "prompt", Method: "prompts/get", Prompt: "greet", PromptArgs: map[string]string{"name": "gateway"}},
			probe{Name: "read", Method: "resources/read", URI: "test://hello"},
			probe{Name: "progress", Method: "tools/call", Tool: "slow_progress", Progress: true})
	}
	return ps
}

// targetProbes is the probe set a client of era sends to tg: its
// family's, without what the era does not have, the tool and prompt names
// with the target's prefix.
func targetProbes(tg *target, fsRoot string, tasks bool, era string) []probe {
	ps := probesFor(tg.family, fsRoot, tasks)
	if era == modernVersion {
		ps = modernProbes(ps)
	}
	if tg.prefix == "" {
		return ps
	}
	for i := range ps {
		p := &ps[i]
		if p.Tool != "" {
			p.Tool = tg.prefix + p.Tool
		}
		if p.Prompt != "" {
			p.Prompt = tg.prefix + p.Prompt
		}
		if p.Ref != nil && p.Ref["type"] == "ref/prompt" {
			p.Ref = maps.Clone(p.Ref)
			p.Ref["name"] = tg.prefix + fmt.Sprint(p.Ref["name"])
		}
	}
	return ps
}

// unprefixLists takes a gateway's prefix off the tool and prompt names and
// the ui:// resource URIs of normalised lists, so they compare with the
// upstream's own.
func unprefixLists(norm map[string]any, prefix string) {
	if prefix == "" {
		return
	}
	for _, k := range []string{"tools/list", "prompts/list"} {
		l, ok := norm[k].([]any)
		if !ok {
			continue
		}
		for i, n := range l {
			if s, ok := n.(string); ok {
				l[i] = strings.TrimPrefix(s, prefix)
			}
		}
	}
	// MCP Apps views (ui:// URIs) are namespaced like tool names
	// (README, "MCP Apps").
	if l, ok := norm["resources/list"].([]any); ok {
		for i, n := range l {
			if s, ok := n.(string); ok {
				if rest, ok := strings.CutPrefix(s, "ui://"+prefix); ok {
					l[i] = "ui://" + rest
				}
			}
		}
	}
}

// modernProbes drops what the modern era does not have (ping).
func modernProbes(ps []probe) []probe {
	return slices.DeleteFunc(slices.Clone(ps), func(p probe) bool { return p.Method == "ping" })
}

// normalizeAll reduces every outcome to a small comparable value.
func normalizeAll(r results, ps []probe) map[string]any {
	out := map[string]any{}
	if o, ok := r["initialize"]; ok {
		out["initialize"] = normalizeInit(o)
	}
	for _, p := range ps {
		if o, ok := r[p.Name]; ok {
			out[p.Name] = normalize(p, o)
		}
	}
	return out
}

func normalizeInit(o outcome) any {
	if o.Error != nil {
		return errorValue(o)
	}
	var r struct {
		ProtocolVersion string                     `json:"protocolVersion"`
		Capabilities    map[string]json.RawMessage `json:"capabilities"`
	}
	_ = json.Unmarshal(o.Result, &r)
	var caps []any
	for k, v := range r.Capabilities {
		if string(v) != "null" {
			caps = append(caps, k)
		}
	}
	// The 2026-07-28 era declares tasks as an extension: the same fact as
	// the legacy "tasks" capability, so both eras compare alike.
	var ext map[string]json.RawMessage
	if _, legacy := r.Capabilities["tasks"]; !legacy && json.Unmarshal(r.Capabilities["extensions"], &ext) == nil {
		if v, ok := ext["io.modelcontextprotocol/tasks"]; ok && string(v) != "null" {
			caps = append(caps, "tasks")
		}
	}
	sort.Slice(caps, func(i, j int) bool { return caps[i].(string) < caps[j].(string) })
	return map[string]any{"protocolVersion": r.ProtocolVersion, "capabilities": caps}
}

// knownBridgeGaps are capabilities of an upstream that the bridge does
// not offer today, with the reason; TestThirdPartyMatrix tolerates them
// (TestThirdPartyTasksThroughBridge does not tolerate "tasks"). Delete an
// entry when the bridge learns the capability.
var knownBridgeGaps = map[string]string{}

// missingCaps lists the capabilities the upstream declared (want) that
// the target does not (got). A bridge may declare more (its set is fixed:
// it aggregates upstreams), never less, apart from knownBridgeGaps.
func missingCaps(got, want any, tasks bool) []string {
	has := map[any]bool{}
	if m, ok := got.(map[string]any); ok {
		caps, _ := m["capabilities"].([]any)
		for _, c := range caps {
			has[c] = true
		}
	}
	var missing []string
	if m, ok := want.(map[string]any); ok {
		caps, _ := m["capabilities"].([]any)
		for _, c := range caps {
			name, _ := c.(string)
			if has[c] || knownBridgeGaps[name] != "" && !(tasks && name == "tasks") {
				continue
			}
			missing = append(missing, name)
		}
	}
	return missing
}

// sameOutcome compares normalised outcomes. Two differences are allowed
// through a bridge (direct is false), both from its fixed capability
// sets: a list method the upstream does not have (-32601, it did not
// declare the capability) may be an empty list, as the bridge declares
// every list capability (see missingCaps); and knownBridgeExtraTools.
func sameOutcome(p probe, got, want any, direct bool) bool {
	if reflect.DeepEqual(got, want) {
		return true
	}
	if direct {
		return false
	}
	if m, ok := want.(map[string]any); ok && m["error"] == int64(jsonrpcMethodNotFound) {
		l, ok := got.([]any)
		return ok && len(l) == 0
	}
	if p.Method == "tools/list" {
		known := func(v any) []any {
			l, _ := v.([]any)
			return slices.DeleteFunc(slices.Clone(l), func(n any) bool { return knownBridgeExtraTools[fmt.Sprint(n)] })
		}
		return reflect.DeepEqual(known(got), known(want))
	}
	return false
}

// knownBridgeExtraTools are tools the npm everything server lists only to
// a client that declared sampling, elicitation or roots. The bridge
// declares them upstream whatever its own client declared (its upstream
// client's capabilities are fixed), so a client without them sees these
// tools through the bridge and not directly.
var knownBridgeExtraTools = map[string]bool{
	"get-roots-list":              true,
	"trigger-elicitation-request": true,
	"trigger-sampling-request":    true,
	"trigger-url-elicitation":     true,
}

const jsonrpcMethodNotFound = -32601

func errorValue(o outcome) any {
	if o.Error.Code == nil {
		return map[string]any{"error": "no code"}
	}
	return map[string]any{"error": *o.Error.Code}
}

func normalize(p probe, o outcome) any {
	if o.Error != nil {
		return errorValue(o)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(o.Result, &m); err != nil && p.Task == "" {
		return "undecodable: " + string(o.Result)
	}
	field := func(list, key string) any {
		var items []map[string]any
		_ = json.Unmarshal(m[list], &items)
		names := []any{}
		for _, it := range items {
			names = append(names, it[key])
		}
		sort.Slice(names, func(i, j int) bool { return fmt.Sprint(names[i]) < fmt.Sprint(names[j]) })
		return names
	}
	switch {
	case p.Task != "":
		return normalizeTask(o.Result)
	case p.Method == "ping":
		return "ok"
	case p.Method == "tools/list":
		return field("tools", "name")
	case p.Method == "tasks/list":
		return field("tasks", "status")
	case p.Method == "prompts/list":
		return field("prompts", "name")
	case p.Method == "resources/list":
		return field("resources", "uri")
	case p.Method == "resources/templates/list":
		return field("resourceTemplates", "uriTemplate")
	case p.Method == "tools/call":
		v := map[string]any{"content": contentText(m["content"]), "isError": string(m["isError"]) == "true"}
		if p.Progress {
			// Whether the last notification beats the response to the
			// client's handler is up to the client (the TypeScript SDK
			// dispatches notifications a microtask late): compare that
			// some came, increasing.
			v["progress"] = len(o.Progress) > 0 && slices.IsSorted(o.Progress) && !hasDup(o.Progress)
		}
		return v
	case p.Method == "prompts/get":
		var msgs []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		_ = json.Unmarshal(m["messages"], &msgs)
		var out []any
		for _, msg := range msgs {
			out = append(out, msg.Role+": "+contentText(json.RawMessage("["+string(msg.Content)+"]")))
		}
		return out
	case p.Method == "resources/read":
		var cs []struct {
			URI, MimeType, Text, Blob string
		}
		_ = json.Unmarshal(m["contents"], &cs)
		var out []any
		for _, c := range cs {
			text := canonicalJSON(c.Text)
			if len(text) > 200 {
				text = fmt.Sprintf("%d bytes, sha256 %x", len(text), sha256.Sum256([]byte(text)))
			}
			out = append(out, fmt.Sprintf("%s %s text=%q blob=%d", c.URI, c.MimeType, text, len(c.Blob)))
		}
		return out
	case p.Method == "completion/complete":
		var c struct {
			Values []string `json:"values"`
		}
		_ = json.Unmarshal(m["completion"], &c)
		return c.Values
	}
	return string(o.Result)
}

// canonicalJSON re-encodes a text that is a JSON object with sorted keys
// (the everything server's templated resource is a JSON object whose key
// order varies); any other text is returned as is.
func canonicalJSON(s string) string {
	var v map[string]any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return s
	}
	return string(b)
}

func hasDup(f []float64) bool {
	for i := 1; i < len(f); i++ {
		if f[i] == f[i-1] {
			return true
		}
	}
	return false
}

// contentText renders a content list as text: text blocks verbatim, other
// blocks by type.
func contentText(raw json.RawMessage) string {
	var cs []map[string]any
	_ = json.Unmarshal(raw, &cs)
	var parts []string
	for _, c := range cs {
		if s, ok := c["text"].(string); ok {
			parts = append(parts, s)
		} else {
			parts = append(parts, fmt.Sprintf("<%v>", c["type"]))
		}
	}
	return strings.Join(parts, " | ")
}

// normalizeTask reduces a task probe's steps to each step's method and
// the task status or result it reported.
func normalizeTask(raw json.RawMessage) any {
	var steps []struct {
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  *probeError     `json:"error"`
	}
	if err := json.Unmarshal(raw, &steps); err != nil {
		return "undecodable: " + string(raw)
	}
	var out []any
	for _, s := range steps {
		if s.Error != nil {
			out = append(out, s.Method+": error "+errorString(s.Error))
			continue
		}
		var r struct {
			Task *struct {
				Status string `json:"status"`
			} `json:"task"`
			Status  string          `json:"status"`
			Content json.RawMessage `json:"content"`
			IsError bool            `json:"isError"`
		}
		_ = json.Unmarshal(s.Result, &r)
		switch {
		case r.Task != nil:
			out = append(out, s.Method+": task created")
		case s.Method == "tasks/cancel":
			out = append(out, s.Method+": ok")
		case r.Status != "":
			out = append(out, s.Method+": "+r.Status)
		default:
			out = append(out, fmt.Sprintf("%s: %q isError=%v", s.Method, contentText(r.Content), r.IsError))
		}
	}
	return out
}

func errorString(e *probeError) string {
	if e.Code == nil {
		return e.Message
	}
	return fmt.Sprint(*e.Code)
}

// checkExpected pins a few values of every run, so that a baseline that
// is wrong everywhere (say, every list empty) cannot pass the comparison.
func checkExpected(t *testing.T, family, era string, norm map[string]any, raw results) {
	t.Helper()
	var want map[string]string
	switch family {
	case "pmcp":
		want = map[string]string{
			"call":         `{"content":"through","isError":false}`,
			"call-add":     `{"content":"{\"sum\":42}","isError":false}`,
			"prompt":       `["user: Prompt with arguments: arg1='x', arg2='y'"]`,
			"read":         `["test://static-text text/plain text=\"This is the content of the static text resource.\" blob=0"]`,
			"progress":     `{"content":"Progress test completed","isError":false,"progress":true}`,
			"task":         `["tools/call: task created","tasks/get: completed","tasks/result: \"computed \\\"bridged\\\" after 0.1 seconds\" isError=false"]`,
			"task-failing": `["tools/call: task created","tasks/get: failed","tasks/result: \"the job failed on purpose\" isError=true"]`,
			"task-cancel":  `["tools/call: task created","tasks/cancel: ok","tasks/get: cancelled"]`,
			"tasks/list":   `["cancelled","completed","failed"]`,
			"ping":         `"ok"`,
		}
		if era == modernVersion {
			// A tool error is a completed task in 2026-07-28 (README, Tasks).
			want["task-failing"] = `["tools/call: task created","tasks/get: completed","tasks/result: \"the job failed on purpose\" isError=true"]`
		}
	case "everything":
		want = map[string]string{
			"call":     `{"content":"Echo: through","isError":false}`,
			"progress": `{"content":"Long running operation completed. Duration: 0.2 seconds, Steps: 2.","isError":false,"progress":true}`,
		}
	case "filesystem":
		want = map[string]string{
			"call": `{"content":"hello from the filesystem server\n","isError":false}`,
		}
	case gosdkFamily:
		want = map[string]string{
			"call":     `{"content":"42","isError":false}`,
			"progress": `{"content":"done","isError":false,"progress":true}`,
		}
	}
	for name, w := range want {
		g, ok := norm[name]
		if !ok {
			continue // not probed by this client
		}
		if js(g) != w {
			t.Errorf("%s: %s, want %s\n raw %s", name, js(g), w, rawOf(raw, name))
		}
	}
	if tools, _ := norm["tools/list"].([]any); norm["tools/list"] != nil && len(tools) == 0 {
		t.Errorf("tools/list: %s\n raw %s", js(norm["tools/list"]), rawOf(raw, "tools/list"))
	}
}
