package pmcp

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/yosida95/uritemplate/v3"

	"github.com/gopmcp/pmcp/internal/schema"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// TestWireSchema marshals every result, notification params object and
// server-to-client request params object the SDK emits (and the results
// and request params the client side emits), in both protocol eras, and
// validates the JSON against the official MCP schema of that era, loaded
// from testdata/schema (see its README for provenance).
//
// Each payload is checked twice:
//
//   - against the official schema, unchanged;
//   - against a strict variant in which every object schema that lists its
//     "properties" but says nothing about additional ones is closed
//     ("additionalProperties": false). The official schemas never forbid
//     extra members, so without this a misspelled optional member (or a
//     member from the wrong era) would pass unnoticed. _meta objects,
//     allOf branches and schemas that state additionalProperties are left
//     open.
//
// Legacy results are also checked for the modern-only members resultType,
// ttlMs and cacheScope, which the legacy Result schema cannot reject
// because it is open.
//
// The legacy cases are additionally run (official schema only) against
// 2025-06-18, the previous legacy revision, unless they use a member that
// revision does not have.
func TestWireSchema(t *testing.T) {
	ws := newWireSchemas(t)
	for _, tc := range wireCases(t) {
		t.Run(tc.era+"/"+tc.def+"/"+tc.variant, func(t *testing.T) {
			data, inst := tc.encode(t)
			version := wireEraVersion[tc.era]
			if err := ws.validate(version, tc.def, false, inst); err != nil {
				t.Fatalf("payload does not match %s: %s\npayload: %s\n%#v", ws.location(version, tc.def), wireErrSummary(err), data, err)
			}
			if err := ws.validate(version, tc.def, true, inst); err != nil {
				t.Errorf("payload carries a member %s does not declare (strict check): %s\npayload: %s\n%#v", ws.location(version, tc.def), wireErrSummary(err), data, err)
			}
			if tc.era == wireLegacy {
				if err := wireNoModernMembers(tc, inst); err != nil {
					t.Errorf("%v\npayload: %s", err, data)
				}
			}
		})
	}
	for _, tc := range wireCases(t) {
		if tc.era != wireLegacy || tc.since20251125 || !ws.has(version20250618, tc.def) {
			continue
		}
		t.Run(wireLegacyOld+"/"+tc.def+"/"+tc.variant, func(t *testing.T) {
			data, inst := tc.encode(t)
			if err := ws.validate(version20250618, tc.def, false, inst); err != nil {
				t.Fatalf("payload does not match %s: %s\npayload: %s\n%#v", ws.location(version20250618, tc.def), wireErrSummary(err), data, err)
			}
		})
	}
}

const (
	wireLegacy    = "legacy"            // 2025-11-25
	wireModern    = "modern"            // 2026-07-28
	wireLegacyOld = "legacy-2025-06-18" // previous legacy revision, official schema only
)

var wireEraVersion = map[string]string{wireLegacy: Version20251125, wireModern: Version20260728}

// wireCase is one payload to validate against <era schema>#/$defs/<def>.
type wireCase struct {
	era, def, variant string
	// value is marshaled with Marshal; msg, when set, builds a whole
	// JSON-RPC message instead (encoded with jsonrpc.AppendMessage).
	value any
	msg   func() (jsonrpc.Message, error)
	// since20251125 marks payloads using members that 2025-06-18 lacks.
	since20251125 bool
}

func (tc *wireCase) encode(t *testing.T) ([]byte, any) {
	t.Helper()
	var data []byte
	var err error
	if tc.msg != nil {
		var m jsonrpc.Message
		if m, err = tc.msg(); err == nil {
			data, err = jsonrpc.AppendMessage(nil, m)
		}
	} else {
		data, err = Marshal(tc.value)
	}
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("emitted invalid JSON: %v\n%s", err, data)
	}
	return data, inst
}

// wireNoModernMembers rejects resultType, ttlMs and cacheScope on a legacy
// result (the payload itself, or the result member of a response).
func wireNoModernMembers(tc wireCase, inst any) error {
	obj, _ := inst.(map[string]any)
	if tc.msg != nil {
		obj, _ = obj["result"].(map[string]any)
	}
	for _, k := range []string{"resultType", "ttlMs", "cacheScope"} {
		if _, ok := obj[k]; ok {
			return fmt.Errorf("legacy (%s) payload carries the 2026-07-28 member %q", Version20251125, k)
		}
	}
	return nil
}

// ---- schema loading ----

// wireSchemas compiles definitions of the schema files in testdata/schema,
// official and strict, on demand.
type wireSchemas struct {
	t        *testing.T
	c        *jsonschema.Compiler
	urls     map[string]string         // version -> URL of the official document
	defsKey  map[string]string         // version -> "$defs" or "definitions"
	defs     map[string]map[string]any // version -> definitions
	compiled map[string]*jsonschema.Schema
}

// wireLocalOnly is the compiler's URL loader: every schema document is
// registered up front from testdata, so any other load is refused (no
// network, nothing outside the repository).
type wireLocalOnly struct{}

func (wireLocalOnly) Load(url string) (any, error) {
	return nil, fmt.Errorf("refusing to load %s: only the schema files under testdata/schema may be used", url)
}

func newWireSchemas(t *testing.T) *wireSchemas {
	t.Helper()
	ws := &wireSchemas{
		t:        t,
		c:        jsonschema.NewCompiler(),
		urls:     map[string]string{},
		defsKey:  map[string]string{},
		defs:     map[string]map[string]any{},
		compiled: map[string]*jsonschema.Schema{},
	}
	ws.c.UseLoader(wireLocalOnly{})
	ws.c.AssertFormat()
	// The library's uri-template check parses the template as a URL, so it
	// rejects valid RFC 6570 query expansions such as "{?q}"; use the parser
	// the SDK itself matches templates with.
	ws.c.RegisterFormat(&jsonschema.Format{Name: "uri-template", Validate: func(v any) error {
		s, ok := v.(string)
		if !ok {
			return nil
		}
		_, err := uritemplate.New(s)
		return err
	}})
	// "byte" (base64) is not a standard format; check it too.
	ws.c.RegisterFormat(&jsonschema.Format{Name: "byte", Validate: func(v any) error {
		s, ok := v.(string)
		if !ok {
			return nil
		}
		_, err := base64.StdEncoding.DecodeString(s)
		return err
	}})
	for _, v := range []string{version20250618, Version20251125, Version20260728} {
		path, err := filepath.Abs(filepath.Join("testdata", "schema", v, "schema.json"))
		if err != nil {
			t.Fatal(err)
		}
		load := func() map[string]any {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			m, ok := doc.(map[string]any)
			if !ok {
				t.Fatalf("%s: not a JSON object", path)
			}
			return m
		}
		official, strict := load(), load()
		key := "$defs"
		if _, ok := official[key]; !ok {
			key = "definitions"
		}
		defs, ok := official[key].(map[string]any)
		if !ok {
			t.Fatalf("%s: no $defs or definitions", path)
		}
		wireStrictify(strict, false)
		url := "file://" + filepath.ToSlash(path)
		if err := ws.c.AddResource(url, official); err != nil {
			t.Fatal(err)
		}
		if err := ws.c.AddResource(wireStrictURL(url), strict); err != nil {
			t.Fatal(err)
		}
		ws.urls[v], ws.defsKey[v], ws.defs[v] = url, key, defs
	}
	return ws
}

func wireStrictURL(url string) string { return strings.TrimSuffix(url, ".json") + ".strict.json" }

func (ws *wireSchemas) has(version, def string) bool {
	_, ok := ws.defs[version][def]
	return ok
}

func (ws *wireSchemas) location(version, def string) string {
	return "testdata/schema/" + version + "/schema.json#/" + ws.defsKey[version] + "/" + def
}

func (ws *wireSchemas) validate(version, def string, strict bool, inst any) error {
	ws.t.Helper()
	if !ws.has(version, def) {
		ws.t.Fatalf("schema %s has no definition %q", version, def)
	}
	url := ws.urls[version]
	if strict {
		url = wireStrictURL(url)
	}
	loc := url + "#/" + ws.defsKey[version] + "/" + def
	sch, ok := ws.compiled[loc]
	if !ok {
		var err error
		if sch, err = ws.c.Compile(loc); err != nil {
			ws.t.Fatalf("compile %s: %v", loc, err)
		}
		ws.compiled[loc] = sch
	}
	return sch.Validate(inst)
}

// wireStrictify closes every object schema under node that lists
// "properties" and does not itself say anything about other members.
// open exempts node itself (its subschemas are still visited): _meta
// objects are open by definition, and so are allOf branches, which only
// ever see part of the members.
func wireStrictify(node any, open bool) {
	switch n := node.(type) {
	case []any:
		for _, v := range n {
			wireStrictify(v, false)
		}
	case map[string]any:
		_, hasProps := n["properties"].(map[string]any)
		_, hasAP := n["additionalProperties"]
		_, hasUP := n["unevaluatedProperties"]
		if hasProps && !hasAP && !hasUP && !open {
			n["additionalProperties"] = false
		}
		for k, v := range n {
			switch k {
			case "properties":
				props, _ := v.(map[string]any)
				for name, sub := range props {
					wireStrictify(sub, wireOpenMembers[name])
				}
			case "$defs", "definitions":
				defs, _ := v.(map[string]any)
				for name, sub := range defs {
					wireStrictify(sub, strings.HasSuffix(name, "MetaObject"))
				}
			case "allOf":
				branches, _ := v.([]any)
				for _, b := range branches {
					wireStrictify(b, true)
				}
			case "const", "enum", "default", "examples":
				// values, not schemas
			default:
				wireStrictify(v, false)
			}
		}
	}
}

// wireOpenMembers name members whose own object stays open in the strict
// variant: _meta objects, and members holding a JSON Schema supplied by the
// application (any keyword may appear there).
var wireOpenMembers = map[string]bool{"_meta": true, "inputSchema": true, "outputSchema": true, "requestedSchema": true}

// wireErrSummary is the one-line form of a validation error: the innermost
// causes with their instance locations.
func wireErrSummary(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var leaves []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			msg := fmt.Sprintf("%T", e.ErrorKind)
			if out := e.BasicOutput(); out.Error != nil {
				msg = out.Error.String()
			}
			leaves = append(leaves, "at /"+strings.Join(e.InstanceLocation, "/")+": "+msg)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	slices.Sort(leaves)
	leaves = slices.Compact(leaves)
	return strings.Join(leaves, "; ")
}

// ---- fixtures ----

var wireServerInfo = Implementation{
	Name:        "pmcp-wire-test",
	Title:       "PMCP wire test",
	Version:     "1.2.3",
	Description: "Server used by the wire schema test",
	WebsiteURL:  "https://example.com/pmcp",
	Icons:       wireIcons(),
}

func wireIcons() []Icon {
	return []Icon{
		{Src: "https://example.com/icon.png", MIMEType: "image/png", Sizes: []string{"48x48", "96x96"}, Theme: "light"},
		{Src: "data:image/svg+xml;base64,PHN2Zy8+", MIMEType: "image/svg+xml", Sizes: []string{"any"}},
	}
}

// wireComplete is what the modern dispatcher stamps on a finished result.
func wireComplete() ResultFields {
	return ResultFields{ResultType: resultTypeComplete, Meta: Meta{MetaServerInfo: &wireServerInfo}}
}

// wireInputRequired is what the modern dispatcher stamps on an
// input_required result.
func wireInputRequired() ResultFields {
	return ResultFields{ResultType: resultTypeInputRequired, Meta: Meta{MetaServerInfo: &wireServerInfo}}
}

func wireCache(ttl int64, scope string) CacheFields {
	return CacheFields{TTLMs: &ttl, CacheScope: scope}
}

func wireServerCaps() ServerCapabilities {
	return ServerCapabilities{
		Logging:     map[string]any{},
		Completions: map[string]any{},
		Prompts:     &ListChangedCapability{ListChanged: true},
		Resources:   &ResourcesCapability{Subscribe: true, ListChanged: true},
		Tools:       &ListChangedCapability{ListChanged: true},
	}
}

func wireModernServerCaps() ServerCapabilities {
	c := wireServerCaps()
	// resources/subscribe is gone in 2026-07-28 (subscriptions/listen
	// replaces it), so the modern resources capability has no subscribe.
	c.Resources = &ResourcesCapability{ListChanged: true}
	return c
}

func wireAnnotations() *Annotations {
	return &Annotations{Audience: []string{"user", "assistant"}, Priority: new(0.5), LastModified: "2025-01-12T15:00:58Z"}
}

type wireWeatherIn struct {
	City string `json:"city"`
	Days int    `json:"days,omitempty"`
}

type wireWeatherOut struct {
	TempC   int    `json:"tempC"`
	Summary string `json:"summary"`
}

// wireTools returns a fully populated raw tool, a minimal one and a typed
// tool whose schemas are inferred the way AddTool infers them.
func wireTools(t *testing.T, legacy bool) []*Tool {
	t.Helper()
	in, err := schema.For[wireWeatherIn](schema.ForOptions{})
	if err != nil {
		t.Fatalf("infer input schema: %v", err)
	}
	out, err := schema.For[wireWeatherOut](schema.ForOptions{})
	if err != nil {
		t.Fatalf("infer output schema: %v", err)
	}
	full := &Tool{
		Name:        "get_weather",
		Title:       "Get weather",
		Description: "Current weather for a city.",
		InputSchema: jsontext.Value(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1}},"required":["city"],"additionalProperties":false}`),
		OutputSchema: jsontext.Value(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",` +
			`"properties":{"tempC":{"type":"number"}},"required":["tempC"]}`),
		Annotations: &ToolAnnotations{
			Title:           "Weather",
			ReadOnlyHint:    new(true),
			DestructiveHint: new(false),
			IdempotentHint:  new(true),
			OpenWorldHint:   new(true),
		},
		Icons: wireIcons(),
		Meta:  Meta{"com.example/category": "weather"},
	}
	if legacy {
		full.Execution = &ToolExecution{TaskSupport: "optional"}
	}
	return []*Tool{
		full,
		{Name: "noop", InputSchema: jsontext.Value(`{"type":"object"}`)},
		{Name: "typed_weather", InputSchema: in.JSON(), OutputSchema: out.JSON()},
	}
}

func wireContents() map[string]Content {
	return map[string]Content{
		"text":          &TextContent{Text: "Sunny, 21°C", Annotations: wireAnnotations(), Meta: Meta{"com.example/lang": "en"}},
		"text-empty":    Text(""),
		"image":         &ImageContent{Data: "iVBORw0KGgo=", MIMEType: "image/png", Annotations: wireAnnotations()},
		"audio":         &AudioContent{Data: "UklGRiQAAABXQVZF", MIMEType: "audio/wav"},
		"resource_link": &ResourceLink{URI: "file:///srv/data/report.pdf", Name: "report.pdf", Title: "Report", Description: "Quarterly report", MIMEType: "application/pdf", Size: new(int64(48213)), Icons: wireIcons(), Annotations: wireAnnotations()},
		"embedded-text": &EmbeddedResource{Resource: &ResourceContents{URI: "file:///srv/data/notes.md", MIMEType: "text/markdown", Text: "# Notes"}, Annotations: wireAnnotations()},
		"embedded-blob": &EmbeddedResource{Resource: &ResourceContents{URI: "file:///srv/data/logo.png", MIMEType: "image/png", Blob: "iVBORw0KGgo="}},
	}
}

var wireContentKinds = []string{"text", "text-empty", "image", "audio", "resource_link", "embedded-text", "embedded-blob"}

func wireAllContent() []Content {
	c := wireContents()
	out := make([]Content, 0, len(wireContentKinds))
	for _, k := range wireContentKinds {
		out = append(out, c[k])
	}
	return out
}

func wireResources() []*Resource {
	return []*Resource{
		{URI: "file:///srv/data/notes.md", Name: "notes.md", Title: "Notes", Description: "Team notes", MIMEType: "text/markdown", Size: new(int64(1024)), Annotations: wireAnnotations(), Icons: wireIcons(), Meta: Meta{"com.example/owner": "ops"}},
		{URI: "https://example.com/status", Name: "status"},
	}
}

func wireTemplates() []*ResourceTemplate {
	return []*ResourceTemplate{
		{URITemplate: "file:///srv/data/{name}", Name: "data-file", Title: "Data file", Description: "A file in the data directory", MIMEType: "text/plain", Annotations: wireAnnotations(), Icons: wireIcons()},
		{URITemplate: "https://example.com/users/{id}{?fields*}", Name: "user"},
	}
}

func wirePrompts() []*Prompt {
	return []*Prompt{
		{Name: "summarize", Title: "Summarize", Description: "Summarize a document", Arguments: []*PromptArgument{
			{Name: "doc", Title: "Document", Description: "URI of the document", Required: true},
			{Name: "style"},
		}, Icons: wireIcons(), Meta: Meta{"com.example/tier": "free"}},
		{Name: "hello"},
	}
}

func wireElicitForm() *ElicitParams {
	return &ElicitParams{
		Message: "Which city?",
		RequestedSchema: jsontext.Value(`{"type":"object","properties":{` +
			`"city":{"type":"string","title":"City","minLength":1},` +
			`"days":{"type":"integer","minimum":1,"maximum":14},` +
			`"metric":{"type":"boolean","default":true},` +
			`"units":{"type":"string","enum":["c","f"]}` +
			`},"required":["city"]}`),
	}
}

func wireSampling() *CreateMessageParams {
	return &CreateMessageParams{
		Messages: []*SamplingMessage{
			{Role: "user", Content: Text("Summarize the weather.")},
			{Role: "assistant", Content: &ImageContent{Data: "iVBORw0KGgo=", MIMEType: "image/png"}},
		},
		ModelPreferences: &ModelPreferences{
			Hints:                []ModelHint{{Name: "claude-3-5-sonnet"}, {Name: "claude"}},
			CostPriority:         new(0.3),
			SpeedPriority:        new(0.8),
			IntelligencePriority: new(0.5),
		},
		SystemPrompt:   "You are terse.",
		IncludeContext: "none",
		Temperature:    new(0.7),
		MaxTokens:      256,
		StopSequences:  []string{"\n\n"},
		Metadata:       map[string]any{"requestId": "abc", "attempt": 1},
	}
}

func wireMeta(t *testing.T, v any) jsontext.Value {
	t.Helper()
	b, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wireModernRequestMeta is the _meta a modern client puts on every request.
func wireModernRequestMeta(t *testing.T) jsontext.Value {
	return wireMeta(t, map[string]any{
		MetaProtocolVersion: Version20260728,
		MetaClientCapabilities: ClientCapabilities{
			Sampling:    &SamplingCapability{},
			Elicitation: &ElicitationCapability{Form: map[string]any{}, URL: map[string]any{}},
		},
		MetaClientInfo:    Implementation{Name: "pmcp-wire-client", Version: "0.1.0"},
		MetaLogLevel:      LevelInfo,
		MetaProgressToken: "req-7",
	})
}

// ---- envelopes ----

func wireResponse(id jsonrpc.ID, v any) func() (jsonrpc.Message, error) {
	return func() (jsonrpc.Message, error) {
		b, err := Marshal(v)
		if err != nil {
			return nil, err
		}
		return &jsonrpc.Response{ID: id, Result: b}, nil
	}
}

func wireRequest(id jsonrpc.ID, method string, params any) func() (jsonrpc.Message, error) {
	return func() (jsonrpc.Message, error) {
		b, err := Marshal(params)
		if err != nil {
			return nil, err
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: b}, nil
	}
}

func wireNotification(method string, params any) func() (jsonrpc.Message, error) {
	return wireRequest(jsonrpc.ID{}, method, params)
}

func wireErrorResponse(id jsonrpc.ID, e *jsonrpc.Error) func() (jsonrpc.Message, error) {
	return func() (jsonrpc.Message, error) { return &jsonrpc.Response{ID: id, Error: e}, nil }
}

// ---- the table ----

func wireCases(t *testing.T) []wireCase {
	var cs []wireCase
	add := func(era, def, variant string, v any) {
		cs = append(cs, wireCase{era: era, def: def, variant: variant, value: v})
	}
	addNew := func(era, def, variant string, v any) { // not in 2025-06-18
		cs = append(cs, wireCase{era: era, def: def, variant: variant, value: v, since20251125: true})
	}
	addMsg := func(era, def, variant string, m func() (jsonrpc.Message, error)) {
		cs = append(cs, wireCase{era: era, def: def, variant: variant, msg: m})
	}
	addMsgNew := func(era, def, variant string, m func() (jsonrpc.Message, error)) {
		cs = append(cs, wireCase{era: era, def: def, variant: variant, msg: m, since20251125: true})
	}
	L, M := wireLegacy, wireModern
	publicCache := func() CacheFields { return wireCache(60000, CacheScopePublic) }

	// --- handshake / discovery ---
	add(L, "InitializeResult", "full", &InitializeResult{
		ProtocolVersion: Version20251125,
		Capabilities:    wireServerCaps(),
		ServerInfo:      wireServerInfo,
		Instructions:    "Use get_weather for forecasts.",
	})
	add(L, "InitializeResult", "minimal", &InitializeResult{
		ProtocolVersion: Version20251125,
		ServerInfo:      Implementation{Name: "pmcp-server", Version: "0.0.0"},
	})
	add(L, "InitializeResult", "with-meta", &InitializeResult{
		ResultFields:    ResultFields{Meta: Meta{"com.example/trace": "t-1"}},
		ProtocolVersion: version20250618,
		Capabilities:    ServerCapabilities{Logging: map[string]any{}, Completions: map[string]any{}},
		ServerInfo:      Implementation{Name: "pmcp-server", Version: "0.0.0"},
	})
	add(M, "DiscoverResult", "full", &discoverResult{
		ResultFields:      wireComplete(),
		CacheFields:       publicCache(),
		SupportedVersions: SupportedVersions(),
		Capabilities:      wireModernServerCaps(),
		Instructions:      "Use get_weather for forecasts.",
	})
	add(M, "DiscoverResult", "private-zero-ttl", &discoverResult{
		ResultFields:      wireComplete(),
		CacheFields:       wireCache(0, CacheScopePrivate),
		SupportedVersions: []string{Version20260728},
		Capabilities:      ServerCapabilities{Logging: map[string]any{}, Completions: map[string]any{}},
	})

	// --- tools ---
	for _, era := range []string{L, M} {
		legacy := era == L
		res := &ListToolsResult{Tools: wireTools(t, legacy), NextCursor: "cursor-2"}
		empty := &ListToolsResult{}
		if !legacy {
			res.ResultFields, res.CacheFields = wireComplete(), publicCache()
			empty.ResultFields, empty.CacheFields = wireComplete(), publicCache()
		}
		if legacy {
			addNew(era, "ListToolsResult", "tools", res) // execution is 2025-11-25
		} else {
			add(era, "ListToolsResult", "tools", res)
		}
		add(era, "ListToolsResult", "empty", empty)

		stamp := func(r *CallToolResult) *CallToolResult {
			if !legacy {
				r.ResultFields = wireComplete()
			}
			return r
		}
		contents := wireContents()
		for _, k := range wireContentKinds {
			add(era, "CallToolResult", "content-"+k, stamp(&CallToolResult{Content: []Content{contents[k]}}))
		}
		add(era, "CallToolResult", "content-all", stamp(&CallToolResult{Content: wireAllContent()}))
		add(era, "CallToolResult", "no-content", stamp(&CallToolResult{}))
		add(era, "CallToolResult", "isError", stamp(toolError("city not found: Atlantis")))
		add(era, "CallToolResult", "structured-object", stamp(&CallToolResult{
			Content:           []Content{Text(`{"tempC":21,"summary":"sunny"}`)},
			StructuredContent: map[string]any{"tempC": 21, "summary": "sunny"},
		}))
		typed, err := typedResult(wireWeatherOut{TempC: 21, Summary: "sunny"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		outSchema, err := schema.For[wireWeatherOut](schema.ForOptions{})
		if err != nil {
			t.Fatal(err)
		}
		typedStructured, err := typedResult(&wireWeatherOut{TempC: 21, Summary: "sunny"}, outSchema)
		if err != nil {
			t.Fatal(err)
		}
		add(era, "CallToolResult", "typed-text", stamp(typed))
		add(era, "CallToolResult", "typed-structured", stamp(typedStructured))
		withMeta := &CallToolResult{
			ResultFields:      ResultFields{Meta: Meta{"com.example/cost": 3}},
			Content:           []Content{Text("1 item")},
			StructuredContent: map[string]any{"items": []any{"a"}},
		}
		if !legacy {
			withMeta.ResultType = resultTypeComplete
			withMeta.Meta[MetaServerInfo] = &wireServerInfo
		}
		add(era, "CallToolResult", "structured-with-meta", withMeta)
	}
	// 2026-07-28 lets structuredContent be any JSON value; 2025-11-25
	// requires an object (see the report on CallToolResult.StructuredContent).
	add(M, "CallToolResult", "structured-array", &CallToolResult{
		ResultFields:      wireComplete(),
		Content:           []Content{Text("3 items")},
		StructuredContent: []any{"a", "b", "c"},
	})

	// --- resources ---
	for _, era := range []string{L, M} {
		legacy := era == L
		lr := &ListResourcesResult{Resources: wireResources(), NextCursor: "c2"}
		lt := &ListResourceTemplatesResult{ResourceTemplates: wireTemplates()}
		rt := &ReadResourceResult{Contents: []*ResourceContents{{URI: "file:///srv/data/notes.md", MIMEType: "text/markdown", Text: "# Notes", Meta: Meta{"com.example/etag": "x1"}}}}
		rb := &ReadResourceResult{Contents: []*ResourceContents{{URI: "file:///srv/data/logo.png", MIMEType: "image/png", Blob: "iVBORw0KGgo="}}}
		re := &ReadResourceResult{Contents: []*ResourceContents{{URI: "file:///srv/data/empty.txt"}}}
		rm := &ReadResourceResult{Contents: []*ResourceContents{rt.Contents[0], rb.Contents[0], re.Contents[0]}}
		if !legacy {
			for _, r := range []*ReadResourceResult{rt, rb, re, rm} {
				r.ResultFields, r.CacheFields = wireComplete(), publicCache()
			}
			rt.ResultFields.Meta["com.example/etag"] = "x1"
			lr.ResultFields, lr.CacheFields = wireComplete(), publicCache()
			lt.ResultFields, lt.CacheFields = wireComplete(), wireCache(300000, CacheScopePrivate)
		}
		add(era, "ListResourcesResult", "resources", lr)
		add(era, "ListResourceTemplatesResult", "templates", lt)
		add(era, "ReadResourceResult", "text", rt)
		add(era, "ReadResourceResult", "blob", rb)
		add(era, "ReadResourceResult", "empty-text", re)
		add(era, "ReadResourceResult", "mixed", rm)
	}

	// --- prompts and completion ---
	for _, era := range []string{L, M} {
		legacy := era == L
		lp := &ListPromptsResult{Prompts: wirePrompts()}
		c := wireContents()
		gp := &GetPromptResult{Description: "Summarize a document", Messages: []*PromptMessage{
			{Role: "user", Content: c["text"]},
			{Role: "user", Content: c["image"]},
			{Role: "user", Content: c["audio"]},
			{Role: "user", Content: c["embedded-text"]},
			{Role: "user", Content: c["embedded-blob"]},
			{Role: "assistant", Content: c["resource_link"]},
		}}
		gpEmpty := &GetPromptResult{}
		cr := &CompleteResult{Completion: Completion{Values: []string{"Paris", "Parma"}, Total: new(12), HasMore: true}}
		crEmpty := &CompleteResult{}
		if !legacy {
			lp.ResultFields, lp.CacheFields = wireComplete(), publicCache()
			gp.ResultFields, gpEmpty.ResultFields = wireComplete(), wireComplete()
			cr.ResultFields, crEmpty.ResultFields = wireComplete(), wireComplete()
		}
		add(era, "ListPromptsResult", "prompts", lp)
		add(era, "GetPromptResult", "all-content", gp)
		add(era, "GetPromptResult", "no-messages", gpEmpty)
		add(era, "CompleteResult", "values", cr)
		add(era, "CompleteResult", "no-values", crEmpty)
	}

	// --- legacy-only results ---
	add(L, "EmptyResult", "empty", &EmptyResult{})
	add(L, "EmptyResult", "with-meta", &EmptyResult{ResultFields{Meta: Meta{"com.example/trace": "t-1"}}})

	// --- modern multi-round-trip ---
	ir := func(reqs map[string]*InputRequest, state string) *InputRequiredResult {
		return &InputRequiredResult{ResultFields: wireInputRequired(), InputRequests: reqs, RequestState: state}
	}
	elicit := &InputRequest{Method: MethodElicitationCreate, Params: wireElicitForm()}
	elicitURL := &InputRequest{Method: MethodElicitationCreate, Params: &ElicitParams{Mode: "url", Message: "Sign in to continue", URL: "https://example.com/oauth/start?state=xyz"}}
	sample := &InputRequest{Method: MethodSamplingCreateMessage, Params: wireSampling()}
	roots := &InputRequest{Method: MethodRootsList, Params: &ListRootsParams{}}
	add(M, "InputRequiredResult", "elicitation-form", ir(map[string]*InputRequest{"pmcp-input-1": elicit}, "st.AAAA"))
	add(M, "InputRequiredResult", "elicitation-url", ir(map[string]*InputRequest{"login": elicitURL}, "st.AAAA"))
	add(M, "InputRequiredResult", "sampling", ir(map[string]*InputRequest{"pmcp-input-1": sample}, "st.AAAA"))
	add(M, "InputRequiredResult", "roots", ir(map[string]*InputRequest{"pmcp-input-1": roots}, "st.AAAA"))
	add(M, "InputRequiredResult", "all-kinds", ir(map[string]*InputRequest{"a": elicit, "b": sample, "c": roots}, "st.AAAA"))
	add(M, "InputRequiredResult", "state-only", ir(nil, "st.AAAA"))
	// RequireInput callers build InputRequests themselves; roots/list has
	// no params of its own.
	add(M, "InputRequiredResult", "roots-without-params", ir(map[string]*InputRequest{"r": {Method: MethodRootsList}}, ""))
	for key, r := range map[string]*InputRequest{"elicitation": elicit, "elicitation-url": elicitURL, "sampling": sample, "roots": roots} {
		add(M, "InputRequest", key, r)
	}

	// --- notifications (params) ---
	for _, era := range []string{L, M} {
		add(era, "LoggingMessageNotificationParams", "string", &LoggingMessageParams{Level: LevelWarning, Logger: "weather", Data: "rate limited"})
		add(era, "LoggingMessageNotificationParams", "object", &LoggingMessageParams{Level: LevelError, Data: map[string]any{"message": "boom", "data": map[string]any{"code": 7}}})
		add(era, "LoggingMessageNotificationParams", "null-data", &LoggingMessageParams{Level: LevelDebug})
		for _, lvl := range []LoggingLevel{LevelDebug, LevelInfo, LevelNotice, LevelWarning, LevelError, LevelCritical, LevelAlert, LevelEmergency} {
			add(era, "LoggingMessageNotificationParams", "level-"+lvl.String(), &LoggingMessageParams{Level: lvl, Data: lvl.String()})
		}
		add(era, "ProgressNotificationParams", "string-token", &ProgressParams{ProgressToken: jsontext.Value(`"tok-1"`), Progress: 0.5, Total: new(1.0), Message: "halfway"})
		add(era, "ProgressNotificationParams", "int-token", &ProgressParams{ProgressToken: jsontext.Value(`42`), Progress: 3})
		add(era, "ResourceUpdatedNotificationParams", "plain", &ResourceUpdatedParams{URI: "file:///srv/data/notes.md"})
	}
	add(M, "ResourceUpdatedNotificationParams", "subscription", &ResourceUpdatedParams{URI: "file:///srv/data/notes.md", Meta: Meta{MetaSubscriptionID: jsonrpc.Int64ID(7)}})
	add(M, "SubscriptionsAcknowledgedNotificationParams", "all", &SubscriptionsAckParams{
		Notifications: SubscriptionFilter{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true, ResourceSubscriptions: []string{"file:///srv/data/notes.md"}},
		Meta:          Meta{MetaSubscriptionID: jsonrpc.Int64ID(7)},
	})
	add(M, "SubscriptionsAcknowledgedNotificationParams", "none-string-id", &SubscriptionsAckParams{
		Meta: Meta{MetaSubscriptionID: jsonrpc.StringID("listen-1")},
	})

	// --- legacy server-to-client request params ---
	add(L, "CreateMessageRequestParams", "full", wireSampling())
	add(L, "CreateMessageRequestParams", "minimal", &CreateMessageParams{Messages: []*SamplingMessage{{Role: "user", Content: Text("hi")}}, MaxTokens: 16})
	add(L, "CreateMessageRequestParams", "tools", &CreateMessageParams{
		Messages: []*SamplingMessage{
			{Role: "user", Content: Text("Weather in Paris?")},
			{Role: "assistant", Content: &ToolUseContent{ID: "tu-1", Name: "get_weather", Input: map[string]any{"city": "Paris"}}},
			{Role: "user", Content: &ToolResultContent{ToolUseID: "tu-1", Content: []Content{Text("21C")}, StructuredContent: map[string]any{"tempC": 21}}},
		},
		MaxTokens:  128,
		Tools:      wireTools(t, false)[:2],
		ToolChoice: map[string]any{"mode": "auto"},
	})
	add(L, "ElicitRequestParams", "form", wireElicitForm())
	add(L, "ElicitRequestFormParams", "form", wireElicitForm())
	add(L, "ElicitRequestFormParams", "form-explicit-mode", &ElicitParams{Mode: "form", Message: "Name?", RequestedSchema: jsontext.Value(`{"type":"object","properties":{"name":{"type":"string"}}}`)})
	add(L, "ElicitRequestURLParams", "url", &ElicitParams{Mode: "url", Message: "Sign in", URL: "https://example.com/oauth/start", ElicitationID: "el-1"})
	add(L, "RequestParams", "roots-list", &ListRootsParams{})

	// --- client-side results and request params ---
	for _, era := range []string{L, M} {
		add(era, "ElicitResult", "accept", &ElicitResult{Action: "accept", Content: map[string]any{"city": "Paris", "days": 3, "metric": true}})
		if era == L {
			addNew(era, "ElicitResult", "accept-multiselect", &ElicitResult{Action: "accept", Content: map[string]any{"tags": []string{"a", "b"}}})
		} else {
			add(era, "ElicitResult", "accept-multiselect", &ElicitResult{Action: "accept", Content: map[string]any{"tags": []string{"a", "b"}}})
		}
		add(era, "ElicitResult", "decline", &ElicitResult{Action: "decline"})
		add(era, "ElicitResult", "cancel", &ElicitResult{Action: "cancel"})
		add(era, "CreateMessageResult", "text", &CreateMessageResult{Role: "assistant", Content: Text("Sunny."), Model: "claude-3-5-sonnet", StopReason: "endTurn"})
		add(era, "CreateMessageResult", "image", &CreateMessageResult{Role: "assistant", Content: &ImageContent{Data: "iVBORw0KGgo=", MIMEType: "image/png"}, Model: "m"})
		if era == L {
			addNew(era, "CreateMessageResult", "tool-use", &CreateMessageResult{Role: "assistant", Content: &ToolUseContent{ID: "tu-1", Name: "get_weather", Input: map[string]any{"city": "Paris"}}, Model: "m", StopReason: "toolUse"})
		} else {
			add(era, "CreateMessageResult", "tool-use", &CreateMessageResult{Role: "assistant", Content: &ToolUseContent{ID: "tu-1", Name: "get_weather", Input: map[string]any{"city": "Paris"}}, Model: "m", StopReason: "toolUse"})
		}
		add(era, "ListRootsResult", "roots", &ListRootsResult{Roots: []*Root{{URI: "file:///home/user/project", Name: "project"}, {URI: "file:///tmp"}}})
		add(era, "ListRootsResult", "empty", &ListRootsResult{})
	}
	add(L, "InitializeRequestParams", "full", &initializeParams{
		ProtocolVersion: Version20251125,
		Capabilities: ClientCapabilities{
			Roots:       &RootsCapability{ListChanged: true},
			Sampling:    &SamplingCapability{Context: map[string]any{}, Tools: map[string]any{}},
			Elicitation: &ElicitationCapability{Form: map[string]any{}, URL: map[string]any{}},
		},
		ClientInfo: Implementation{Name: "pmcp-wire-client", Version: "0.1.0", Icons: wireIcons()},
	})
	add(L, "InitializeRequestParams", "minimal", &initializeParams{
		ProtocolVersion: Version20251125,
		ClientInfo:      Implementation{Name: "c", Version: "1"},
	})
	add(L, "CallToolRequestParams", "args", &CallToolParams{Name: "get_weather", Arguments: jsontext.Value(`{"city":"Paris"}`), Meta: wireMeta(t, map[string]any{MetaProgressToken: 5})})
	add(M, "CallToolRequestParams", "first-call", &CallToolParams{Name: "get_weather", Arguments: jsontext.Value(`{"city":"Paris"}`), Meta: wireModernRequestMeta(t)})
	add(M, "CallToolRequestParams", "retry", &CallToolParams{
		Name:      "get_weather",
		Arguments: jsontext.Value(`{"city":"Paris"}`),
		InputResponses: wireMeta(t, map[string]any{
			"a": &ElicitResult{Action: "accept", Content: map[string]any{"city": "Paris"}},
			"b": &CreateMessageResult{Role: "assistant", Content: Text("ok"), Model: "m"},
			"c": &ListRootsResult{Roots: []*Root{{URI: "file:///tmp"}}},
		}),
		RequestState: new("st.AAAA"),
		Meta:         wireModernRequestMeta(t),
	})
	add(M, "GetPromptRequestParams", "args", &GetPromptParams{Name: "summarize", Arguments: map[string]string{"doc": "file:///a"}, Meta: wireModernRequestMeta(t)})
	add(M, "ReadResourceRequestParams", "uri", &ReadResourceParams{URI: "file:///srv/data/notes.md", Meta: wireModernRequestMeta(t)})
	add(M, "PaginatedRequestParams", "cursor", &paginatedParams{Cursor: "c2", Meta: wireModernRequestMeta(t)})
	add(M, "SubscriptionsListenRequestParams", "all", &ListenParams{
		Notifications: SubscriptionFilter{ToolsListChanged: true, ResourceSubscriptions: []string{"file:///srv/data/notes.md"}},
		Meta:          wireModernRequestMeta(t),
	})

	// --- decorated by the dispatcher itself ---
	srv, err := NewServer(ServerOptions{Name: "pmcp-wire-test", Version: "1.2.3", Title: "PMCP wire test", CacheTTL: 90 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	decorated := func(r Result, env *requestEnv) Result {
		out, err := srv.finishResult(r, env, new(reqState), EraModern)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	add(M, "DiscoverResult", "via-dispatcher", decorated(&discoverResult{SupportedVersions: SupportedVersions(), Capabilities: srv.capabilities(EraModern)}, &requestEnv{}))
	add(M, "ListToolsResult", "via-dispatcher", decorated(&ListToolsResult{Tools: wireTools(t, false)}, &requestEnv{}))
	add(M, "ListResourcesResult", "via-dispatcher-authenticated", decorated(&ListResourcesResult{Resources: wireResources()}, &requestEnv{authInfo: &AuthInfo{}}))
	add(M, "CallToolResult", "via-dispatcher", decorated(&CallToolResult{Content: wireAllContent()}, &requestEnv{}))
	add(M, "InputRequiredResult", "via-dispatcher", decorated(&InputRequiredResult{InputRequests: map[string]*InputRequest{"a": elicit, "b": sample, "c": roots}, RequestState: "st.AAAA"}, &requestEnv{}))
	add(L, "InitializeResult", "server-capabilities", &InitializeResult{ProtocolVersion: Version20251125, Capabilities: srv.capabilities(EraLegacy), ServerInfo: wireServerInfo})

	// --- whole JSON-RPC messages ---
	id1, idS := jsonrpc.Int64ID(1), jsonrpc.StringID("req-abc")
	initRes := &InitializeResult{ProtocolVersion: Version20251125, Capabilities: wireServerCaps(), ServerInfo: wireServerInfo}
	addMsg(L, "JSONRPCResponse", "InitializeResult", wireResponse(id1, initRes))
	addMsg(L, "JSONRPCResultResponse", "EmptyResult", wireResponse(idS, &EmptyResult{}))
	addMsg(L, "JSONRPCResponse", "CallToolResult", wireResponse(idS, &CallToolResult{Content: wireAllContent()}))
	addMsg(L, "JSONRPCResponse", "ElicitResult", wireResponse(jsonrpc.Int64ID(3), &ElicitResult{Action: "accept", Content: map[string]any{"city": "Paris"}}))
	addMsg(L, "JSONRPCNotification", "LoggingMessage", wireNotification(NotificationMessage, &LoggingMessageParams{Level: LevelInfo, Data: "hi"}))
	addMsg(L, "LoggingMessageNotification", "message", wireNotification(NotificationMessage, &LoggingMessageParams{Level: LevelInfo, Logger: "l", Data: "hi"}))
	addMsg(L, "ProgressNotification", "progress", wireNotification(NotificationProgress, &ProgressParams{ProgressToken: jsontext.Value(`"tok-1"`), Progress: 1, Total: new(2.0)}))
	addMsg(L, "ResourceUpdatedNotification", "updated", wireNotification(NotificationResourceUpdated, &ResourceUpdatedParams{URI: "file:///srv/data/notes.md"}))
	addMsg(L, "ListRootsRequest", "request", wireRequest(jsonrpc.Int64ID(9), MethodRootsList, &ListRootsParams{}))
	addMsg(L, "CreateMessageRequest", "request", wireRequest(jsonrpc.Int64ID(10), MethodSamplingCreateMessage, wireSampling()))
	addMsg(L, "ElicitRequest", "form", wireRequest(jsonrpc.StringID("s-11"), MethodElicitationCreate, wireElicitForm()))
	addMsgNew(L, "ElicitRequest", "url", wireRequest(jsonrpc.StringID("s-12"), MethodElicitationCreate, &ElicitParams{Mode: "url", Message: "Sign in", URL: "https://example.com/oauth/start", ElicitationID: "el-1"}))

	discover := &discoverResult{ResultFields: wireComplete(), CacheFields: publicCache(), SupportedVersions: SupportedVersions(), Capabilities: wireModernServerCaps()}
	tools := &ListToolsResult{ResultFields: wireComplete(), CacheFields: publicCache(), Tools: wireTools(t, false)}
	call := &CallToolResult{ResultFields: wireComplete(), Content: wireAllContent()}
	prompt := &GetPromptResult{ResultFields: wireComplete(), Messages: []*PromptMessage{{Role: "user", Content: Text("hi")}}}
	addMsg(M, "JSONRPCResponse", "DiscoverResult", wireResponse(id1, discover))
	addMsg(M, "DiscoverResultResponse", "discover", wireResponse(id1, discover))
	addMsg(M, "ListToolsResultResponse", "tools", wireResponse(idS, tools))
	addMsg(M, "CallToolResultResponse", "complete", wireResponse(idS, call))
	addMsg(M, "CallToolResultResponse", "input_required", wireResponse(idS, ir(map[string]*InputRequest{"a": elicit, "b": sample, "c": roots}, "st.AAAA")))
	addMsg(M, "GetPromptResultResponse", "prompt", wireResponse(id1, prompt))
	addMsg(M, "JSONRPCResponse", "CompleteResult", wireResponse(id1, &CompleteResult{ResultFields: wireComplete(), Completion: Completion{Values: []string{}}}))
	addMsg(M, "SubscriptionsAcknowledgedNotification", "ack", wireNotification(NotificationSubscriptionsAck, &SubscriptionsAckParams{
		Notifications: SubscriptionFilter{ToolsListChanged: true},
		Meta:          Meta{MetaSubscriptionID: jsonrpc.Int64ID(7)},
	}))
	// listen streams send list_changed with only the subscription id.
	listChanged := &struct {
		Meta Meta `json:"_meta"`
	}{Meta{MetaSubscriptionID: jsonrpc.Int64ID(7)}}
	addMsg(M, "ToolListChangedNotification", "listen", wireNotification(NotificationToolsListChanged, listChanged))
	addMsg(M, "PromptListChangedNotification", "listen", wireNotification(NotificationPromptsListChanged, listChanged))
	addMsg(M, "ResourceListChangedNotification", "listen", wireNotification(NotificationResourcesListChanged, listChanged))
	addMsg(M, "ResourceUpdatedNotification", "listen", wireNotification(NotificationResourceUpdated, &ResourceUpdatedParams{URI: "file:///srv/data/notes.md", Meta: Meta{MetaSubscriptionID: jsonrpc.Int64ID(7)}}))
	addMsg(M, "LoggingMessageNotification", "message", wireNotification(NotificationMessage, &LoggingMessageParams{Level: LevelInfo, Data: "hi"}))
	addMsg(M, "ProgressNotification", "progress", wireNotification(NotificationProgress, &ProgressParams{ProgressToken: jsontext.Value(`"req-7"`), Progress: 1}))
	addMsg(M, "JSONRPCNotification", "progress", wireNotification(NotificationProgress, &ProgressParams{ProgressToken: jsontext.Value(`7`), Progress: 1}))
	addMsg(M, "UnsupportedProtocolVersionError", "-32022", wireErrorResponse(id1, unsupportedVersion("2099-01-01")))
	addMsg(M, "MissingRequiredClientCapabilityError", "-32021", wireErrorResponse(id1,
		(&MissingCapabilityError{Required: map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}}).rpcError()))
	addMsg(M, "JSONRPCErrorResponse", "method-not-found", wireErrorResponse(idS, methodNotFound("initialize")))

	cs = append(cs, wireCapsCases(t, decorated)...)
	addMsg(M, "CallToolRequest", "request", wireRequest(idS, MethodToolsCall, &CallToolParams{Name: "get_weather", Arguments: jsontext.Value(`{"city":"Paris"}`), Meta: wireModernRequestMeta(t)}))
	return cs
}

// TestWireSchemaRejects checks that the checks of TestWireSchema can fail:
// each payload below is wrong in a way one of them must catch.
func TestWireSchemaRejects(t *testing.T) {
	ws := newWireSchemas(t)
	for _, tc := range []struct {
		era, def, name, payload string
		official                bool // the official schema must reject it
		strict                  bool // the strict variant must reject it
		legacyMember            bool // the legacy resultType check must reject it
	}{
		{wireLegacy, "CallToolResult", "text-without-text", `{"content":[{"type":"text"}]}`, true, true, false},
		{wireLegacy, "CallToolResult", "content-null", `{"content":null}`, true, true, false},
		{wireLegacy, "CallToolResult", "structured-array", `{"content":[],"structuredContent":[1]}`, true, true, false},
		{wireLegacy, "InitializeResult", "resultType", `{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"},"resultType":"complete"}`, false, true, true},
		{wireLegacy, "EmptyResult", "cache-hints", `{"ttlMs":5,"cacheScope":"public"}`, false, false, true},
		{wireLegacy, "ListResourcesResult", "misspelled-member", `{"resources":[{"uri":"file:///a","name":"a","mimetype":"text/plain"}]}`, false, true, false},
		{wireLegacy, "ListResourceTemplatesResult", "bad-template", `{"resourceTemplates":[{"uriTemplate":"file:///{a","name":"a"}]}`, true, true, false},
		{wireLegacy, "ReadResourceResult", "bad-base64", `{"contents":[{"uri":"file:///a","blob":"***"}]}`, true, true, false},
		{wireModern, "ListToolsResult", "no-resultType", `{"tools":[],"ttlMs":0,"cacheScope":"public"}`, true, true, false},
		{wireModern, "ListToolsResult", "no-cache-hints", `{"tools":[],"resultType":"complete"}`, true, true, false},
		{wireModern, "ListToolsResult", "input-schema-not-object", `{"tools":[{"name":"t","inputSchema":{"type":"string"}}],"resultType":"complete","ttlMs":0,"cacheScope":"public"}`, true, true, false},
		{wireModern, "InputRequest", "null-params", `{"method":"roots/list","params":null}`, true, true, false},
		{wireModern, "InputRequest", "elicitation-without-schema", `{"method":"elicitation/create","params":{"message":"m"}}`, true, true, false},
		{wireModern, "ElicitRequestURLParams", "legacy-elicitationId", `{"mode":"url","message":"m","url":"https://example.com","elicitationId":"e"}`, false, true, false},
		{wireModern, "SubscriptionsAcknowledgedNotificationParams", "meta-null", `{"notifications":{},"_meta":null}`, true, true, false},
	} {
		t.Run(tc.era+"/"+tc.def+"/"+tc.name, func(t *testing.T) {
			inst, err := jsonschema.UnmarshalJSON(strings.NewReader(tc.payload))
			if err != nil {
				t.Fatal(err)
			}
			version := wireEraVersion[tc.era]
			if got := ws.validate(version, tc.def, false, inst) != nil; got != tc.official {
				t.Errorf("official schema rejects = %v, want %v", got, tc.official)
			}
			if got := ws.validate(version, tc.def, true, inst) != nil; got != tc.strict {
				t.Errorf("strict schema rejects = %v, want %v", got, tc.strict)
			}
			if tc.era == wireLegacy {
				if got := wireNoModernMembers(wireCase{}, inst) != nil; got != tc.legacyMember {
					t.Errorf("legacy member check rejects = %v, want %v", got, tc.legacyMember)
				}
			}
		})
	}
	t.Run("loader-refuses-remote", func(t *testing.T) {
		doc := map[string]any{"$ref": "https://example.com/schema.json"}
		if err := ws.c.AddResource("file:///pmcp-wire-test/remote-ref.json", doc); err != nil {
			t.Fatal(err)
		}
		_, err := ws.c.Compile("file:///pmcp-wire-test/remote-ref.json")
		if err == nil || !strings.Contains(err.Error(), "refusing to load") {
			t.Fatalf("Compile = %v, want the local-only loader to refuse", err)
		}
	})
}
