package schema

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Instances are validated as trees of the following types, which have the same
// reflect.Kind as the usual map[string]any, []any and string (so jsonschema-go
// treats them exactly like those), but which format themselves briefly.
// jsonschema-go embeds the offending value in its error messages with %v; with
// plain Go values a failing keyword high up in a large document (for example
// one branch of an anyOf at the root) would print the whole document, once per
// failing branch, which hostile input could exploit.
type (
	jobject map[string]any
	jarray  []any
	jstring string
)

func (m jobject) Format(f fmt.State, _ rune) { fmt.Fprintf(f, "{object with %d properties}", len(m)) }
func (a jarray) Format(f fmt.State, _ rune)  { fmt.Fprintf(f, "[array of %d items]", len(a)) }
func (s jstring) Format(f fmt.State, _ rune) {
	io.WriteString(f, strconv.Quote(truncate(string(s), 40)))
}

// decodeState accumulates facts about an instance while it is decoded or
// converted.
type decodeState struct {
	maxDepth int
	maxBytes int
	size     int // estimated encoded size, for converted values
}

var errInstanceDepth = errors.New("nested too deeply")

// pooledDecoder is a reusable decoder and the bytes.Buffer it reads from
// (a bytes.Buffer lets the decoder parse the input in place, without copying).
type pooledDecoder struct {
	dec jsontext.Decoder
	buf bytes.Buffer
}

var decoderPool = sync.Pool{New: func() any { return new(pooledDecoder) }}

// decodeInstance parses data as a single JSON value into the safe tree types.
// Duplicate object member names and invalid UTF-8 are rejected.
func decodeInstance(data []byte, lim Limits) (any, error) {
	if len(data) > lim.MaxInstanceBytes {
		return nil, limitError(fmt.Sprintf("too large (%d bytes; the limit is %d)", len(data), lim.MaxInstanceBytes))
	}
	pd := decoderPool.Get().(*pooledDecoder)
	pd.buf = *bytes.NewBuffer(data)
	dec := &pd.dec
	dec.Reset(&pd.buf, jsontext.AllowDuplicateNames(false), jsontext.AllowInvalidUTF8(false))
	defer func() {
		pd.buf = bytes.Buffer{} // drop the reference to data
		dec.Reset(&pd.buf)
		decoderPool.Put(pd)
	}()
	st := &decodeState{maxDepth: lim.MaxInstanceDepth}
	v, err := st.readValue(dec, 0)
	if err == nil {
		// Exactly one value is allowed.
		if _, err2 := dec.ReadToken(); err2 != io.EOF {
			if err2 == nil {
				err2 = errors.New("unexpected data after the top-level value")
			}
			err = err2
		}
	}
	if err != nil {
		if errors.Is(err, errInstanceDepth) {
			return nil, limitError(fmt.Sprintf("nested too deeply (the limit is %d levels)", lim.MaxInstanceDepth))
		}
		if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
			err = io.ErrUnexpectedEOF
		}
		msg := strings.TrimPrefix(err.Error(), "jsontext: ")
		return nil, &ValidationError{Errors: []string{truncate("invalid JSON: "+msg, maxMessageLen)}, cause: err}
	}
	return v, nil
}

func (st *decodeState) readValue(dec *jsontext.Decoder, depth int) (any, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case 'n':
		return nil, nil
	case 't':
		return true, nil
	case 'f':
		return false, nil
	case '"':
		return jstring(tok.String()), nil
	case '0':
		f, err := tok.Float()
		if err != nil || math.IsInf(f, 0) {
			return nil, fmt.Errorf("number %s is out of range", truncate(tok.String(), 40))
		}
		return f, nil
	case '{':
		if depth >= st.maxDepth {
			return nil, errInstanceDepth
		}
		m := make(jobject)
		for dec.PeekKind() != '}' {
			ktok, err := dec.ReadToken()
			if err != nil {
				return nil, err
			}
			k := ktok.String()
			v, err := st.readValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		return m, nil
	case '[':
		if depth >= st.maxDepth {
			return nil, errInstanceDepth
		}
		a := make(jarray, 0, 4)
		for dec.PeekKind() != ']' {
			v, err := st.readValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		return a, nil
	default:
		// PeekKind returns 0 on error; ReadToken reports it.
		return nil, fmt.Errorf("unexpected token %v", tok)
	}
}

// errNotPlain reports that a value contains Go types other than the ones
// produced by decoding JSON into an any.
var errNotPlain = errors.New("not a plain JSON value")

// convertInstance converts an already-decoded JSON value into the safe tree
// types, enforcing the depth and (estimated) size limits. Values that are not
// made of the types produced by unmarshaling into an any (nil, bool, float64,
// string, []any, map[string]any, and encoding/json's Number) are
// round-tripped through JSON instead.
func convertInstance(v any, lim Limits) (any, error) {
	st := &decodeState{maxDepth: lim.MaxInstanceDepth, maxBytes: lim.MaxInstanceBytes}
	out, err := st.convert(v, 0)
	if err == nil {
		return out, nil
	}
	if errors.Is(err, errNotPlain) {
		data, merr := json.Marshal(v, json.Deterministic(true))
		if merr != nil {
			msg := strings.TrimPrefix(merr.Error(), "jsontext: ")
			return nil, &ValidationError{Errors: []string{truncate("cannot be encoded as JSON: "+msg, maxMessageLen)}, cause: merr}
		}
		return decodeInstance(data, lim)
	}
	if errors.Is(err, errInstanceDepth) {
		return nil, limitError(fmt.Sprintf("nested too deeply (the limit is %d levels)", lim.MaxInstanceDepth))
	}
	return nil, limitError(fmt.Sprintf("too large (more than %d bytes)", lim.MaxInstanceBytes))
}

var errInstanceSize = errors.New("too large")

func (st *decodeState) grow(n int) error {
	st.size += n
	if st.size > st.maxBytes {
		return errInstanceSize
	}
	return nil
}

func (st *decodeState) convert(v any, depth int) (any, error) {
	switch v := v.(type) {
	case nil:
		return nil, st.grow(4)
	case bool:
		return v, st.grow(5)
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, errNotPlain // let the JSON encoder report it
		}
		return v, st.grow(8)
	case string:
		if !utf8.ValidString(v) {
			return nil, errNotPlain
		}
		return jstring(v), st.grow(len(v) + 2)
	case jstring:
		return v, st.grow(len(v) + 2)
	case stdjson.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, errNotPlain // let the JSON encoder report it
		}
		return f, st.grow(len(v))
	case map[string]any:
		return st.convertObject(v, depth)
	case jobject:
		return st.convertObject(v, depth)
	case []any:
		return st.convertArray(v, depth)
	case jarray:
		return st.convertArray(v, depth)
	default:
		return nil, errNotPlain
	}
}

func (st *decodeState) convertObject(m map[string]any, depth int) (any, error) {
	if depth >= st.maxDepth {
		return nil, errInstanceDepth
	}
	if err := st.grow(2); err != nil {
		return nil, err
	}
	out := make(jobject, len(m))
	for k, e := range m {
		if !utf8.ValidString(k) {
			return nil, errNotPlain
		}
		if err := st.grow(len(k) + 4); err != nil {
			return nil, err
		}
		ce, err := st.convert(e, depth+1)
		if err != nil {
			return nil, err
		}
		out[k] = ce
	}
	return out, nil
}

func (st *decodeState) convertArray(a []any, depth int) (any, error) {
	if depth >= st.maxDepth {
		return nil, errInstanceDepth
	}
	if err := st.grow(2); err != nil {
		return nil, err
	}
	out := make(jarray, len(a))
	for i, e := range a {
		if err := st.grow(1); err != nil {
			return nil, err
		}
		ce, err := st.convert(e, depth+1)
		if err != nil {
			return nil, err
		}
		out[i] = ce
	}
	return out, nil
}

// jsonTypeOf returns the JSON Schema type name of a safe-tree value, the way
// jsonschema-go computes it (a number with a zero fractional part is an
// "integer").
func jsonTypeOf(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if _, frac := math.Modf(v); frac == 0 {
			return "integer"
		}
		return "number"
	case jstring, string:
		return "string"
	case jarray, []any:
		return "array"
	case jobject, map[string]any:
		return "object"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// truncate shortens s to at most n bytes (on a rune boundary), marking the
// cut with an ellipsis.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
