package pmcp

import (
	"fmt"

	"github.com/go-json-experiment/json/jsontext"
)

// Meta is a _meta object. Keys follow MCP's naming rules (an optional
// reverse-DNS prefix ending in "/", then a name).
type Meta map[string]any

// Implementation names a client or server. It is self-reported by the peer
// and informational only: never use it for authorization.
type Implementation struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
	WebsiteURL  string `json:"websiteUrl,omitempty"`
	Icons       []Icon `json:"icons,omitempty"`
}

// Icon is a sized icon a client may display.
type Icon struct {
	Src      string   `json:"src"`
	MIMEType string   `json:"mimeType,omitempty"`
	Sizes    []string `json:"sizes,omitempty"`
	Theme    string   `json:"theme,omitempty"`
}

// ClientCapabilities is what a client declares it can do. In the legacy era
// it arrives once at initialize; in the modern era on every request.
type ClientCapabilities struct {
	Experimental map[string]map[string]any `json:"experimental,omitzero"`
	Roots        *RootsCapability          `json:"roots,omitzero"`
	Sampling     *SamplingCapability       `json:"sampling,omitzero"`
	Elicitation  *ElicitationCapability    `json:"elicitation,omitzero"`
	// Tasks is the client's raw 2025-11-25 tasks capability, passed
	// through as received (pmcp's server runs tools/call tasks whatever it
	// says; a pmcp client declares it with ClientOptions.HostTasks).
	Tasks      jsontext.Value            `json:"tasks,omitempty"`
	Extensions map[string]map[string]any `json:"extensions,omitzero"`
}

// RootsCapability: the client can answer roots/list.
type RootsCapability struct {
	ListChanged bool `json:"listChanged,omitzero"`
}

// SamplingCapability: the client can answer sampling/createMessage.
type SamplingCapability struct {
	Context map[string]any `json:"context,omitzero"`
	Tools   map[string]any `json:"tools,omitzero"`
}

// ElicitationCapability: the client can answer elicitation/create. An empty
// object means form mode only.
type ElicitationCapability struct {
	Form map[string]any `json:"form,omitzero"`
	URL  map[string]any `json:"url,omitzero"`
}

// SupportsForm reports whether form-mode elicitation is declared.
func (c *ElicitationCapability) SupportsForm() bool {
	return c != nil && (c.Form != nil || c.URL == nil)
}

// SupportsURL reports whether URL-mode elicitation is declared.
func (c *ElicitationCapability) SupportsURL() bool { return c != nil && c.URL != nil }

// ServerCapabilities is what a server declares.
type ServerCapabilities struct {
	Experimental map[string]map[string]any `json:"experimental,omitzero"`
	Logging      map[string]any            `json:"logging,omitzero"`
	Completions  map[string]any            `json:"completions,omitzero"`
	Prompts      *ListChangedCapability    `json:"prompts,omitzero"`
	Resources    *ResourcesCapability      `json:"resources,omitzero"`
	Tools        *ListChangedCapability    `json:"tools,omitzero"`
	// Tasks is the 2025-11-25 tasks capability, declared by a server with
	// ServerOptions.Tasks (list, cancel, requests.tools.call).
	Tasks      jsontext.Value            `json:"tasks,omitempty"`
	Extensions map[string]map[string]any `json:"extensions,omitzero"`
}

// ListChangedCapability is the shape of the tools and prompts capabilities.
type ListChangedCapability struct {
	ListChanged bool `json:"listChanged,omitzero"`
}

// ResourcesCapability is the resources capability.
type ResourcesCapability struct {
	Subscribe   bool `json:"subscribe,omitzero"`
	ListChanged bool `json:"listChanged,omitzero"`
}

// LoggingLevel is a syslog (RFC 5424) severity. The zero value means "not
// set". Levels compare in severity order: LevelDebug < ... < LevelEmergency,
// so filtering never compares the wire strings.
type LoggingLevel uint8

const (
	LevelUnset LoggingLevel = iota
	LevelDebug
	LevelInfo
	LevelNotice
	LevelWarning
	LevelError
	LevelCritical
	LevelAlert
	LevelEmergency
	// LevelOff is above every real level: nothing passes it. The modern era
	// uses it when a request did not opt in to logging.
	LevelOff
)

var levelNames = [...]string{"", "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency", "off"}

// DefaultLogLevel is the effective level of a request whose level nobody
// set. Modern-era requests never fall back to it: an absent logLevel there
// means LevelOff (the spec forbids sending logs the client did not ask for).
const DefaultLogLevel = LevelInfo

func (l LoggingLevel) String() string {
	if int(l) < len(levelNames) {
		return levelNames[l]
	}
	return fmt.Sprintf("LoggingLevel(%d)", uint8(l))
}

// ParseLoggingLevel parses a wire level name ("debug" ... "emergency").
func ParseLoggingLevel(s string) (LoggingLevel, error) {
	for i := LevelDebug; i <= LevelEmergency; i++ {
		if levelNames[i] == s {
			return i, nil
		}
	}
	return LevelUnset, fmt.Errorf("pmcp: unknown logging level %q", s)
}

// MarshalText implements encoding.TextMarshaler.
func (l LoggingLevel) MarshalText() ([]byte, error) {
	if l < LevelDebug || l > LevelEmergency {
		return nil, fmt.Errorf("pmcp: cannot encode logging level %d", uint8(l))
	}
	return []byte(levelNames[l]), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (l *LoggingLevel) UnmarshalText(b []byte) error {
	v, err := ParseLoggingLevel(string(b))
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// Cache scopes for cacheable results (2026-07-28).
const (
	CacheScopePublic  = "public"
	CacheScopePrivate = "private"
)

// Result types (2026-07-28).
const (
	resultTypeComplete      = "complete"
	resultTypeInputRequired = "input_required"

	// ResultTypeTask marks a 2026-07-28 CreateTaskResult (tools/call run
	// as a task).
	ResultTypeTask = "task"
)

// ResultFields are the members every result may carry. Result types embed
// it; the dispatcher fills ResultType ("complete", or "input_required" for
// an InputRequiredResult) and the cache hints in the modern era and leaves
// them empty in the legacy era. A result left with ResultType set keeps it:
// a middleware that answers a tools/call with a created task (a
// DetailedTask) sets ResultTypeTask.
type ResultFields struct {
	Meta       Meta   `json:"_meta,omitempty"`
	ResultType string `json:"resultType,omitempty"`
}

func (r *ResultFields) resultFields() *ResultFields { return r }

// CacheFields are the caching hints of cacheable modern results.
type CacheFields struct {
	TTLMs      *int64 `json:"ttlMs,omitempty"`
	CacheScope string `json:"cacheScope,omitempty"`
}

func (c *CacheFields) cacheFields() *CacheFields { return c }

// Result is implemented by every result type of this package.
type Result interface {
	resultFields() *ResultFields
}

type cacheable interface {
	cacheFields() *CacheFields
}

// EmptyResult is the result of ping, logging/setLevel and the subscribe
// methods.
type EmptyResult struct {
	ResultFields
}
