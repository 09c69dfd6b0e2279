package jsonrpc

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// This file holds the single-pass parser behind Decode.

var parserPool = sync.Pool{New: func() any { return new(parser) }}

type presence uint8

const (
	absent presence = iota
	present
	invalid
)

// parser holds the state for decoding one message. It is pooled so that
// the jsontext.Decoder's internal buffers are reused.
type parser struct {
	buf     bytes.Buffer
	dec     jsontext.Decoder
	scratch []byte
	fields
}

// fields is what one message has been found to contain so far.
type fields struct {
	data    []byte
	version presence
	idState presence // present: id holds a valid id; invalid: bad or null
	idNull  bool
	id      ID
	method  string
	hasMeth bool
	params  jsontext.Value
	result  jsontext.Value
	hasRes  bool
	errObj  *Error
	hasErr  bool

	// semantic is the first JSON-RPC-level problem found. Parsing goes on
	// after it so that syntax errors later in the input still win.
	semantic    string
	semanticErr error
}

func (p *parser) reset(data []byte) {
	p.fields = fields{data: data}
	p.buf = *bytes.NewBuffer(data)
	p.dec.Reset(&p.buf)
}

func (p *parser) release() {
	p.fields = fields{}
	p.buf = bytes.Buffer{}
	p.dec.Reset(&p.buf) // drop the decoder's reference to data
	if cap(p.scratch) > 1<<10 {
		p.scratch = nil
	}
}

func (p *parser) fail(msg string, err error) {
	if p.semantic == "" {
		p.semantic, p.semanticErr = msg, err
	}
}

// unquote returns the decoded contents of the raw JSON string s. The result
// aliases s or p.scratch and is valid until the next unquote call.
func (p *parser) unquote(s []byte) []byte {
	if bytes.IndexByte(s, '\\') < 0 {
		return s[1 : len(s)-1]
	}
	p.scratch, _ = jsontext.AppendUnquote(p.scratch[:0], s) // s was validated
	return p.scratch
}

func (p *parser) unquoteString(s []byte) string {
	if bytes.IndexByte(s, '\\') < 0 {
		return string(s[1 : len(s)-1])
	}
	return string(p.unquote(s))
}

func clip(v jsontext.Value) jsontext.Value { return v[:len(v):len(v)] }

func (p *parser) parse() (Message, error) {
	if err := p.parseTop(); err != nil {
		return nil, p.syntaxError(err)
	}
	// The whole input is valid JSON; now judge it as JSON-RPC.
	if p.semantic == "" {
		p.validate()
	}
	if p.semantic != "" {
		e := &DecodeError{Code: CodeInvalidRequest, Msg: p.semantic, Err: p.semanticErr,
			response: !p.hasMeth && (p.hasRes || p.hasErr)}
		if p.idState == present {
			e.ID = p.id
		}
		return nil, e
	}
	if p.hasMeth {
		return &Request{ID: p.id, Method: p.method, Params: p.params}, nil
	}
	return &Response{ID: p.id, Result: p.result, Error: p.errObj}, nil
}

// parseTop reads the top-level value and checks nothing follows it. It
// returns only JSON syntax errors; JSON-RPC problems go to p.fail.
func (p *parser) parseTop() error {
	d := &p.dec
	switch k := d.PeekKind(); k {
	case '{':
		if err := p.parseObject(); err != nil {
			return err
		}
	case '[':
		if _, err := d.ReadValue(); err != nil {
			return err
		}
		p.fail("batch messages (JSON arrays) are not supported", ErrBatch)
	default:
		if _, err := d.ReadValue(); err != nil {
			return err
		}
		p.fail("message must be a JSON object, not "+kindName(k), nil)
	}
	return p.checkEOF()
}

func (p *parser) checkEOF() error {
	_, err := p.dec.ReadToken()
	switch err {
	case io.EOF:
		return nil
	case nil:
		return errTrailingData
	}
	return err
}

var errTrailingData = errors.New("unexpected data after the message")

func (p *parser) parseObject() error {
	d := &p.dec
	if _, err := d.ReadToken(); err != nil { // '{'
		return err
	}
	for d.PeekKind() != '}' {
		raw, err := d.ReadValue()
		if err != nil {
			return err
		}
		name := p.unquote(raw)
		switch string(name) {
		case "jsonrpc":
			err = p.readVersion()
		case "id":
			err = p.readID()
		case "method":
			err = p.readMethod()
		case "params":
			err = p.readParams()
		case "result":
			var v jsontext.Value
			v, err = d.ReadValue()
			p.result, p.hasRes = clip(v), true
		case "error":
			p.hasErr = true
			err = p.readError()
		default:
			if want, ok := caseVariant(name, topLevelNames); ok {
				p.fail(caseMessage(name, want), nil)
			}
			_, err = d.ReadValue()
		}
		if err != nil {
			return err
		}
	}
	_, err := d.ReadToken() // '}'
	return err
}

var topLevelNames = []string{"jsonrpc", "id", "method", "params", "result", "error"}

// caseVariant reports whether name matches one of known ignoring case.
func caseVariant(name []byte, known []string) (string, bool) {
	for _, k := range known {
		if len(name) == len(k) && bytes.EqualFold(name, []byte(k)) {
			return k, true
		}
	}
	return "", false
}

func caseMessage(got []byte, want string) string {
	return "member names are case-sensitive: got " + quoteName(got) + ", want " + strconv.Quote(want)
}

// quoteName quotes a member name for an error message, truncating it.
func quoteName[S ~[]byte | ~string](s S) string {
	const max = 64
	if len(s) > max {
		return strconv.Quote(string(s[:max])) + "..."
	}
	return strconv.Quote(string(s))
}

func (p *parser) readVersion() error {
	v, err := p.dec.ReadValue()
	if err != nil {
		return err
	}
	if v.Kind() == '"' && string(p.unquote(v)) == Version {
		p.version = present
	} else {
		p.version = invalid
	}
	return nil
}

func (p *parser) readID() error {
	v, err := p.dec.ReadValue()
	if err != nil {
		return err
	}
	switch v.Kind() {
	case '"':
		p.id, p.idState = StringID(p.unquoteString(v)), present
		return nil
	case '0':
		if n, ok := parseInt(v); ok {
			p.id, p.idState = Int64ID(n), present
			return nil
		}
		p.idState = invalid
		p.fail("id must be a string or an integer, got the number "+truncate(v), nil)
		return nil
	case 'n':
		p.idState, p.idNull = invalid, true
		return nil // whether null is allowed depends on the message kind
	}
	p.idState = invalid
	p.fail("id must be a string or an integer, not "+kindName(v.Kind()), nil)
	return nil
}

func (p *parser) readMethod() error {
	v, err := p.dec.ReadValue()
	if err != nil {
		return err
	}
	p.hasMeth = true
	if v.Kind() != '"' {
		p.fail("method must be a string, not "+kindName(v.Kind()), nil)
		return nil
	}
	p.method = internMethod(p.unquote(v))
	return nil
}

func (p *parser) readParams() error {
	v, err := p.dec.ReadValue()
	if err != nil {
		return err
	}
	if k := v.Kind(); k != '{' && k != '[' {
		p.fail("params must be an object or an array, not "+kindName(k), nil)
		return nil
	}
	p.params = clip(v)
	return nil
}

var errorNames = []string{"code", "message", "data"}

func (p *parser) readError() error {
	d := &p.dec
	if k := d.PeekKind(); k != '{' {
		if _, err := d.ReadValue(); err != nil {
			return err
		}
		p.fail("error must be an object, not "+kindName(k), nil)
		return nil
	}
	if _, err := d.ReadToken(); err != nil {
		return err
	}
	e := new(Error)
	var hasCode, hasMsg bool
	for d.PeekKind() != '}' {
		raw, err := d.ReadValue()
		if err != nil {
			return err
		}
		name := p.unquote(raw)
		var what string // which member, for the failure below
		switch string(name) {
		case "code":
			what = "code"
		case "message":
			what = "message"
		case "data":
			what = "data"
		default:
			if want, ok := caseVariant(name, errorNames); ok {
				p.fail(caseMessage(name, want)+" in error object", nil)
			}
		}
		v, err := d.ReadValue()
		if err != nil {
			return err
		}
		switch what {
		case "code":
			hasCode = true
			n, ok := parseInt(v)
			if v.Kind() != '0' || !ok {
				p.fail("error code must be an integer", nil)
			}
			e.Code = n
		case "message":
			hasMsg = true
			if v.Kind() != '"' {
				p.fail("error message must be a string, not "+kindName(v.Kind()), nil)
			} else {
				e.Message = p.unquoteString(v)
			}
		case "data":
			e.Data = clip(v)
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return err
	}
	if !hasCode {
		p.fail(`error object is missing "code"`, nil)
	}
	if !hasMsg {
		p.fail(`error object is missing "message"`, nil)
	}
	p.errObj = e
	return nil
}

// validate checks the message-level rules once all members are read.
func (p *parser) validate() {
	switch p.version {
	case absent:
		p.fail(`missing "jsonrpc" member`, nil)
		return
	case invalid:
		p.fail(`"jsonrpc" must be "2.0"`, nil)
		return
	}
	switch {
	case p.hasMeth:
		if p.hasRes || p.hasErr {
			p.fail(`a message must not have both "method" and "result" or "error"`, nil)
		} else if p.idNull {
			p.fail("request id must not be null (omit it for a notification)", nil)
		}
	case p.hasRes && p.hasErr:
		p.fail(`a response must not have both "result" and "error"`, nil)
	case p.hasRes || p.hasErr:
		if p.idState == absent {
			p.fail(`response is missing "id"`, nil)
		} else if p.idNull && p.hasRes {
			p.fail("success response id must not be null", nil)
		}
	default:
		p.fail(`message has no "method", "result" or "error" member`, nil)
	}
}

// syntaxError converts an error from the JSON parser.
func (p *parser) syntaxError(err error) *DecodeError {
	switch err {
	case errTrailingData:
		return parseError("invalid JSON: unexpected data after the message", err)
	case io.EOF: // no value at all; never let io.EOF escape as a cause
		return parseError("empty message", io.ErrUnexpectedEOF)
	}
	var serr *jsontext.SyntacticError
	if errors.As(err, &serr) && serr.Err == jsontext.ErrDuplicateName {
		return p.duplicateError(serr)
	}
	return parseError("invalid JSON: "+strings.TrimPrefix(err.Error(), "jsontext: "), err)
}

// duplicateError handles a duplicate member name. The rest of the input has
// not been read yet, so it is re-read with duplicates allowed to tell
// malformed JSON (a parse error) from well-formed JSON, and to find the
// top-level id if it occurs exactly once.
func (p *parser) duplicateError(serr *jsontext.SyntacticError) *DecodeError {
	ptr := serr.JSONPointer
	msg := "duplicate member name " + quoteName(ptr.LastToken())
	if parent := ptr.Parent(); parent != "" {
		msg += " in " + quoteName(string(parent))
	}
	r, err := rescan(p.data)
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return parseError("invalid JSON: "+strings.TrimPrefix(err.Error(), "jsontext: "), err)
	}
	return &DecodeError{Code: CodeInvalidRequest, ID: r.id, Msg: msg, Err: serr, response: r.response}
}

type rescanned struct {
	id       ID   // the top-level id, if it occurs exactly once and is valid
	response bool // "result" or "error" occurs, and "method" does not
}

// rescan validates data with duplicate names allowed and looks at its
// top-level members.
func rescan(data []byte) (rescanned, error) {
	d := jsontext.NewDecoder(bytes.NewBuffer(data), jsontext.AllowDuplicateNames(true))
	var r rescanned
	var ids int
	var hasMethod, hasResult bool
	if d.PeekKind() == '{' {
		if _, err := d.ReadToken(); err != nil {
			return r, err
		}
		for d.PeekKind() != '}' {
			tok, err := d.ReadToken()
			if err != nil {
				return r, err
			}
			name := tok.String()
			v, err := d.ReadValue()
			if err != nil {
				return r, err
			}
			switch name {
			case "method":
				hasMethod = true
			case "result", "error":
				hasResult = true
			case "id":
				ids++
				r.id = scalarID(v)
			}
		}
		if _, err := d.ReadToken(); err != nil {
			return r, err
		}
	} else if _, err := d.ReadValue(); err != nil {
		return r, err
	}
	if _, err := d.ReadToken(); err != io.EOF {
		if err == nil {
			err = errTrailingData
		}
		return r, err
	}
	if ids != 1 {
		r.id = ID{}
	}
	r.response = hasResult && !hasMethod
	return r, nil
}

// scanPrefix reads the complete top-level members at the start of prefix,
// the part of a message before the point where it nests too deeply, and
// reports what rescan would: the id if it occurs exactly once and is valid,
// and whether "result" or "error" occurs without "method".
func scanPrefix(prefix []byte) rescanned {
	d := jsontext.NewDecoder(bytes.NewBuffer(prefix), jsontext.AllowDuplicateNames(true))
	var r rescanned
	if d.PeekKind() != '{' {
		return r
	}
	if _, err := d.ReadToken(); err != nil {
		return r
	}
	var ids int
	var hasMethod, hasResult bool
	for d.PeekKind() == '"' {
		tok, err := d.ReadToken()
		if err != nil {
			break
		}
		name := tok.String()
		switch name {
		case "method":
			hasMethod = true
		case "result", "error":
			hasResult = true
		}
		v, err := d.ReadValue()
		if err != nil {
			break // the deep value, cut off at the limit
		}
		if name == "id" {
			ids++
			r.id = scalarID(v)
		}
	}
	if ids != 1 {
		r.id = ID{}
	}
	r.response = hasResult && !hasMethod
	return r
}

// scalarID returns the id a raw JSON value denotes, or the zero ID.
func scalarID(v jsontext.Value) ID {
	switch v.Kind() {
	case '"':
		s, _ := jsontext.AppendUnquote(nil, v)
		return StringID(string(s))
	case '0':
		if n, ok := parseInt(v); ok {
			return Int64ID(n)
		}
	}
	return ID{}
}

// parseInt parses a JSON number that must be an integer fitting in int64:
// no fraction, no exponent.
func parseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var u uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		u = u*10 + uint64(c-'0') // at most 19 digits: cannot overflow uint64
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true
	}
	if u > 1<<63-1 {
		return 0, false
	}
	return int64(u), true
}

func truncate(v []byte) string {
	if len(v) > 32 {
		return string(v[:32]) + "..."
	}
	return string(v)
}

func kindName(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 'f', 't':
		return "a boolean"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "invalid JSON"
}

// internMethod returns the method name as a string, without allocating for
// the method names MCP defines.
func internMethod(b []byte) string {
	switch string(b) {
	case "initialize":
		return "initialize"
	case "ping":
		return "ping"
	case "tools/list":
		return "tools/list"
	case "tools/call":
		return "tools/call"
	case "resources/list":
		return "resources/list"
	case "resources/read":
		return "resources/read"
	case "resources/templates/list":
		return "resources/templates/list"
	case "resources/subscribe":
		return "resources/subscribe"
	case "resources/unsubscribe":
		return "resources/unsubscribe"
	case "prompts/list":
		return "prompts/list"
	case "prompts/get":
		return "prompts/get"
	case "completion/complete":
		return "completion/complete"
	case "logging/setLevel":
		return "logging/setLevel"
	case "sampling/createMessage":
		return "sampling/createMessage"
	case "elicitation/create":
		return "elicitation/create"
	case "roots/list":
		return "roots/list"
	case "notifications/initialized":
		return "notifications/initialized"
	case "notifications/cancelled":
		return "notifications/cancelled"
	case "notifications/progress":
		return "notifications/progress"
	case "notifications/message":
		return "notifications/message"
	case "notifications/resources/updated":
		return "notifications/resources/updated"
	case "notifications/resources/list_changed":
		return "notifications/resources/list_changed"
	case "notifications/tools/list_changed":
		return "notifications/tools/list_changed"
	case "notifications/prompts/list_changed":
		return "notifications/prompts/list_changed"
	case "notifications/roots/list_changed":
		return "notifications/roots/list_changed"
	}
	return string(b)
}
