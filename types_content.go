package pmcp

import (
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Content is one block of a tool result, prompt message or sampling
// message: *TextContent, *ImageContent, *AudioContent, *ResourceLink or
// *EmbeddedResource (and, in sampling, *ToolUseContent/*ToolResultContent).
// The set is closed.
type Content interface {
	contentType() string
}

// Annotations are optional hints on content and resources.
type Annotations struct {
	Audience     []string `json:"audience,omitempty"`
	Priority     *float64 `json:"priority,omitempty"`
	LastModified string   `json:"lastModified,omitempty"`
}

// TextContent is plain text.
type TextContent struct {
	Text        string       `json:"text"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Meta        Meta         `json:"_meta,omitempty"`
}

// ImageContent is a base64-encoded image.
type ImageContent struct {
	Data        string       `json:"data"`
	MIMEType    string       `json:"mimeType"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Meta        Meta         `json:"_meta,omitempty"`
}

// AudioContent is base64-encoded audio.
type AudioContent struct {
	Data        string       `json:"data"`
	MIMEType    string       `json:"mimeType"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Meta        Meta         `json:"_meta,omitempty"`
}

// ResourceLink points at a resource the client may read.
type ResourceLink struct {
	URI         string       `json:"uri"`
	Name        string       `json:"name"`
	Title       string       `json:"title,omitempty"`
	Description string       `json:"description,omitempty"`
	MIMEType    string       `json:"mimeType,omitempty"`
	Size        *int64       `json:"size,omitempty"`
	Icons       []Icon       `json:"icons,omitempty"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Meta        Meta         `json:"_meta,omitempty"`
}

// EmbeddedResource carries a resource's contents inline.
type EmbeddedResource struct {
	Resource    *ResourceContents `json:"resource"`
	Annotations *Annotations      `json:"annotations,omitempty"`
	Meta        Meta              `json:"_meta,omitempty"`
}

// ToolUseContent is a model's request to call a tool (sampling with tools).
type ToolUseContent struct {
	ID    string         `json:"id"`
	Name  string         `json:"name"`
	Input map[string]any `json:"input"`
	Meta  Meta           `json:"_meta,omitempty"`
}

// ToolResultContent answers a ToolUseContent (sampling with tools).
type ToolResultContent struct {
	ToolUseID         string         `json:"toolUseId"`
	Content           []Content      `json:"content"`
	StructuredContent map[string]any `json:"structuredContent,omitempty"`
	IsError           bool           `json:"isError,omitzero"`
	Meta              Meta           `json:"_meta,omitempty"`
}

func (*TextContent) contentType() string       { return "text" }
func (*ImageContent) contentType() string      { return "image" }
func (*AudioContent) contentType() string      { return "audio" }
func (*ResourceLink) contentType() string      { return "resource_link" }
func (*EmbeddedResource) contentType() string  { return "resource" }
func (*ToolUseContent) contentType() string    { return "tool_use" }
func (*ToolResultContent) contentType() string { return "tool_result" }

// Text returns a *TextContent.
func Text(s string) *TextContent { return &TextContent{Text: s} }

// ResourceContents is the contents of a resource: Text or Blob (base64).
type ResourceContents struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     string `json:"blob,omitempty"`
	Meta     Meta   `json:"_meta,omitempty"`
}

// MarshalJSONTo writes text or blob (exactly one), so an empty text body is
// still emitted as "text":"".
func (rc *ResourceContents) MarshalJSONTo(enc *jsontext.Encoder) error {
	type text struct {
		URI      string `json:"uri"`
		MIMEType string `json:"mimeType,omitempty"`
		Text     string `json:"text"`
		Meta     Meta   `json:"_meta,omitempty"`
	}
	type blob struct {
		URI      string `json:"uri"`
		MIMEType string `json:"mimeType,omitempty"`
		Blob     string `json:"blob"`
		Meta     Meta   `json:"_meta,omitempty"`
	}
	if rc.Blob != "" {
		return json.MarshalEncode(enc, blob{rc.URI, rc.MIMEType, rc.Blob, rc.Meta})
	}
	return json.MarshalEncode(enc, text{rc.URI, rc.MIMEType, rc.Text, rc.Meta})
}

// Each content type writes its own "type" member when marshaled (first, as
// the struct's own members follow): the Go type is the kind, so there is no
// Type field to set or to get wrong.

// typed is a content block with its "type" member in front.
type typed[T any] struct {
	Type string `json:"type"`
	V    T      `json:",embed"`
}

func (c *TextContent) MarshalJSONTo(enc *jsontext.Encoder) error {
	type plain TextContent
	v := typed[plain]{Type: "text", V: plain(*c)}
	return json.MarshalEncode(enc, &v)
}

func (c *ImageContent) MarshalJSONTo(enc *jsontext.Encoder) error {
	type plain ImageContent
	v := typed[plain]{Type: "image", V: plain(*c)}
	return json.MarshalEncode(enc, &v)
}

func (c *AudioContent) MarshalJSONTo(enc *jsontext.Encoder) error {
	type plain AudioContent
	v := typed[plain]{Type: "audio", V: plain(*c)}
	return json.MarshalEncode(enc, &v)
}

func (c *ResourceLink) MarshalJSONTo(enc *jsontext.Encoder) error {
	type plain ResourceLink
	v := typed[plain]{Type: "resource_link", V: plain(*c)}
	return json.MarshalEncode(enc, &v)
}

func (c *EmbeddedResource) MarshalJSONTo(enc *jsontext.Encoder) error {
	type plain EmbeddedResource
	v := typed[plain]{Type: "resource", V: plain(*c)}
	return json.MarshalEncode(enc, &v)
}

func (c *ToolUseContent) MarshalJSONTo(enc *jsontext.Encoder) error {
	type plain ToolUseContent
	v := typed[plain]{Type: "tool_use", V: plain(*c)}
	if v.V.Input == nil {
		v.V.Input = map[string]any{}
	}
	return json.MarshalEncode(enc, &v)
}

func (c *ToolResultContent) MarshalJSONTo(enc *jsontext.Encoder) error {
	type plain ToolResultContent
	v := typed[plain]{Type: "tool_result", V: plain(*c)}
	if v.V.Content == nil {
		v.V.Content = []Content{}
	}
	return json.MarshalEncode(enc, &v)
}

func unmarshalContent(dec *jsontext.Decoder) (Content, error) {
	raw, err := dec.ReadValue()
	if err != nil {
		return nil, err
	}
	var probe struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, err
	}
	var c Content
	switch probe.Type {
	case "text":
		c = new(TextContent)
	case "image":
		c = new(ImageContent)
	case "audio":
		c = new(AudioContent)
	case "resource_link":
		c = new(ResourceLink)
	case "resource":
		c = new(EmbeddedResource)
	case "tool_use":
		c = new(ToolUseContent)
	case "tool_result":
		c = new(ToolResultContent)
	default:
		return nil, fmt.Errorf("pmcp: unknown content type %q", probe.Type)
	}
	if err := json.Unmarshal(raw, c, jsonOpts); err != nil {
		return nil, err
	}
	return c, nil
}

var contentUnmarshalers = json.UnmarshalFromFunc(func(dec *jsontext.Decoder, c *Content) error {
	v, err := unmarshalContent(dec)
	if err != nil {
		return err
	}
	*c = v
	return nil
})

// jsonOpts are the options every MCP payload is marshaled with.
var jsonOpts json.Options

func init() { jsonOpts = json.WithUnmarshalers(contentUnmarshalers) }

// Marshal encodes v with the options MCP payloads need (content unions).
func Marshal(v any) ([]byte, error) { return json.Marshal(v, jsonOpts) }

// Unmarshal decodes data into v strictly: member names are case-sensitive
// and duplicate names are rejected.
func Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v, jsonOpts) }
