package jsonrpc

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

func deep(n int) string {
	return `{"jsonrpc":"2.0","id":1,"method":"m","params":` +
		strings.Repeat("[", n-1) + strings.Repeat("]", n-1) + "}"
}

// nest returns n nested empty arrays.
func nest(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

func TestDecodeInvalid(t *testing.T) {
	big := `{"jsonrpc":"2.0","method":"m","params":{"s":"` + strings.Repeat("x", 100) + `"}}`
	tests := []struct {
		name    string
		in      string
		lim     Limits
		code    int64
		id      ID
		is      error  // sentinel the error must match, if any
		substr  string // part of the message
		noReply bool   // the message was a response: Response() is nil
	}{
		// Unparsable or untrustworthy: -32700, an id only when too deep.
		{name: "empty", in: ``, code: CodeParseError, substr: "empty message"},
		{name: "whitespace only", in: " \r\n\t", code: CodeParseError},
		{name: "truncated", in: `{"jsonrpc":"2.0","id":1,"method":"m"`, code: CodeParseError},
		{name: "garbage", in: `hello`, code: CodeParseError},
		{name: "single quotes", in: `{'jsonrpc':'2.0'}`, code: CodeParseError},
		{name: "trailing comma", in: `{"jsonrpc":"2.0","id":1,"method":"m",}`, code: CodeParseError},
		{name: "trailing data", in: `{"jsonrpc":"2.0","id":1,"method":"m"} x`, code: CodeParseError},
		{name: "two messages", in: `{"jsonrpc":"2.0","id":1,"method":"m"}{"jsonrpc":"2.0","id":2,"method":"m"}`, code: CodeParseError, substr: "unexpected data"},
		{name: "invalid utf8 in params", in: "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":[\"\xff\"]}", code: CodeParseError},
		{name: "lone surrogate", in: `{"jsonrpc":"2.0","id":1,"method":"\ud800"}`, code: CodeParseError},
		{name: "raw newline in string", in: "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\nb\"}", code: CodeParseError},
		// Too deep, but the id is readable: it is echoed so the caller's
		// request does not hang.
		{name: "too deep 10000", in: deep(10000), code: CodeParseError, is: ErrTooDeep, id: Int64ID(1)},
		{name: "too deep by one", in: deep(DefaultMaxDepth + 1), code: CodeParseError, is: ErrTooDeep, id: Int64ID(1)},
		{name: "too deep custom", in: deep(5), lim: Limits{MaxDepth: 4}, code: CodeParseError, is: ErrTooDeep, id: Int64ID(1)},
		{name: "too deep, id after", in: `{"jsonrpc":"2.0","method":"m","params":` + nest(300) + `,"id":"late"}`, code: CodeParseError, is: ErrTooDeep, id: StringID("late")},
		{name: "too deep past parser limit, id after", in: `{"jsonrpc":"2.0","method":"m","params":` + nest(10001) + `,"id":"late"}`, code: CodeParseError, is: ErrTooDeep},
		{name: "too deep, unclosed", in: `{"jsonrpc":"2.0","id":3,"method":"m","params":` + strings.Repeat("[", 300), code: CodeParseError, is: ErrTooDeep, id: Int64ID(3)},
		{name: "too deep, two ids", in: `{"jsonrpc":"2.0","id":1,"method":"m","params":` + nest(300) + `,"id":2}`, code: CodeParseError, is: ErrTooDeep},
		{name: "too deep, bad id", in: `{"jsonrpc":"2.0","id":1.5,"method":"m","params":` + nest(300) + `}`, code: CodeParseError, is: ErrTooDeep},
		{name: "too deep response", in: `{"jsonrpc":"2.0","id":7,"result":` + nest(300) + `}`, code: CodeParseError, is: ErrTooDeep, id: Int64ID(7), noReply: true},
		{name: "too deep response, result after", in: `{"jsonrpc":"2.0","id":7,"x":` + nest(300) + `,"result":1}`, code: CodeParseError, is: ErrTooDeep, id: Int64ID(7), noReply: true},
		{name: "deep batch", in: strings.Repeat("[", 300), code: CodeParseError, is: ErrTooDeep},
		{name: "past parser limit", in: deep(10002), lim: Limits{MaxDepth: -1}, code: CodeParseError},
		{name: "oversize", in: big, lim: Limits{MaxMessageBytes: 64}, code: CodeParseError, is: ErrMessageTooLarge, substr: "exceeds the limit of 64 bytes"},
		{name: "syntax error after duplicate", in: `{"jsonrpc":"2.0","id":1,"id":2,"method":"m"`, code: CodeParseError},

		// Well-formed JSON, not JSON-RPC: -32600.
		{name: "batch", in: `[{"jsonrpc":"2.0","id":1,"method":"m"}]`, code: CodeInvalidRequest, is: ErrBatch},
		{name: "empty batch", in: `[]`, code: CodeInvalidRequest, is: ErrBatch},
		{name: "empty object", in: `{}`, code: CodeInvalidRequest, substr: `missing "jsonrpc"`},
		{name: "scalar", in: `42`, code: CodeInvalidRequest, substr: "not a number"},
		{name: "null", in: `null`, code: CodeInvalidRequest},
		{name: "no jsonrpc", in: `{"id":1,"method":"m"}`, code: CodeInvalidRequest, id: Int64ID(1)},
		{name: "jsonrpc 1.0", in: `{"jsonrpc":"1.0","id":1,"method":"m"}`, code: CodeInvalidRequest, id: Int64ID(1), substr: `"2.0"`},
		{name: "jsonrpc number", in: `{"jsonrpc":2.0,"id":"a","method":"m"}`, code: CodeInvalidRequest, id: StringID("a")},
		{name: "null id request", in: `{"jsonrpc":"2.0","id":null,"method":"m"}`, code: CodeInvalidRequest, substr: "must not be null"},
		{name: "float id", in: `{"jsonrpc":"2.0","id":1.5,"method":"m"}`, code: CodeInvalidRequest},
		{name: "integral float id", in: `{"jsonrpc":"2.0","id":1.0,"method":"m"}`, code: CodeInvalidRequest},
		{name: "exponent id", in: `{"jsonrpc":"2.0","id":1e3,"method":"m"}`, code: CodeInvalidRequest},
		{name: "huge id", in: `{"jsonrpc":"2.0","id":9223372036854775808,"method":"m"}`, code: CodeInvalidRequest},
		{name: "bool id", in: `{"jsonrpc":"2.0","id":true,"method":"m"}`, code: CodeInvalidRequest, substr: "boolean"},
		{name: "object id", in: `{"jsonrpc":"2.0","id":{},"method":"m"}`, code: CodeInvalidRequest},
		{name: "method casing", in: `{"jsonrpc":"2.0","id":7,"Method":"m"}`, code: CodeInvalidRequest, id: Int64ID(7),
			substr: `member names are case-sensitive: got "Method", want "method"`},
		{name: "method casing beside method", in: `{"jsonrpc":"2.0","id":7,"method":"m","METHOD":"x"}`, code: CodeInvalidRequest, id: Int64ID(7)},
		{name: "id casing", in: `{"jsonrpc":"2.0","ID":7,"method":"m"}`, code: CodeInvalidRequest, substr: `want "id"`},
		{name: "method number", in: `{"jsonrpc":"2.0","id":1,"method":1}`, code: CodeInvalidRequest, id: Int64ID(1)},
		{name: "method null", in: `{"jsonrpc":"2.0","id":1,"method":null}`, code: CodeInvalidRequest, id: Int64ID(1)},
		{name: "notification bad method", in: `{"jsonrpc":"2.0","method":1}`, code: CodeInvalidRequest},
		{name: "params string", in: `{"jsonrpc":"2.0","id":1,"method":"m","params":"x"}`, code: CodeInvalidRequest, id: Int64ID(1)},
		{name: "params null", in: `{"jsonrpc":"2.0","id":1,"method":"m","params":null}`, code: CodeInvalidRequest, id: Int64ID(1)},
		{name: "duplicate id", in: `{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}`, code: CodeInvalidRequest, is: ErrDuplicateName,
			substr: `duplicate member name "id"`},
		{name: "duplicate method", in: `{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}`, code: CodeInvalidRequest, id: Int64ID(1), is: ErrDuplicateName},
		{name: "duplicate in params", in: `{"jsonrpc":"2.0","id":3,"method":"m","params":{"a":1,"b":{"c":1,"c":2}}}`,
			code: CodeInvalidRequest, id: Int64ID(3), is: ErrDuplicateName, substr: `"/params/b"`},
		{name: "duplicate before id", in: `{"jsonrpc":"2.0","method":"m","params":{"a":1,"a":1},"id":"x"}`,
			code: CodeInvalidRequest, id: StringID("x"), is: ErrDuplicateName},
		{name: "duplicate escaped", in: `{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1,"\u0061":1}}`,
			code: CodeInvalidRequest, id: Int64ID(1), is: ErrDuplicateName},
		{name: "duplicate in batch", in: `[{"a":1,"a":2}]`, code: CodeInvalidRequest, is: ErrDuplicateName},
		{name: "duplicate in response", in: `{"jsonrpc":"2.0","id":4,"result":{"a":1,"a":2}}`,
			code: CodeInvalidRequest, id: Int64ID(4), is: ErrDuplicateName, noReply: true},
		{name: "duplicate in request with result", in: `{"jsonrpc":"2.0","id":4,"method":"m","result":{"a":1,"a":2}}`,
			code: CodeInvalidRequest, id: Int64ID(4), is: ErrDuplicateName},
		{name: "no method result error", in: `{"jsonrpc":"2.0","id":1}`, code: CodeInvalidRequest, id: Int64ID(1)},
		{name: "method and result", in: `{"jsonrpc":"2.0","id":1,"method":"m","result":{}}`, code: CodeInvalidRequest, id: Int64ID(1)},
		{name: "result and error", in: `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}`, code: CodeInvalidRequest, id: Int64ID(1), noReply: true},
		{name: "response without id", in: `{"jsonrpc":"2.0","result":{}}`, code: CodeInvalidRequest, noReply: true},
		{name: "success with null id", in: `{"jsonrpc":"2.0","id":null,"result":{}}`, code: CodeInvalidRequest, noReply: true},
		{name: "error not object", in: `{"jsonrpc":"2.0","id":1,"error":"boom"}`, code: CodeInvalidRequest, id: Int64ID(1), noReply: true},
		{name: "error code float", in: `{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"x"}}`, code: CodeInvalidRequest, id: Int64ID(1), noReply: true},
		{name: "error code string", in: `{"jsonrpc":"2.0","id":1,"error":{"code":"1","message":"x"}}`, code: CodeInvalidRequest, id: Int64ID(1), noReply: true},
		{name: "error message missing", in: `{"jsonrpc":"2.0","id":1,"error":{"code":1}}`, code: CodeInvalidRequest, id: Int64ID(1), noReply: true},
		{name: "error message number", in: `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":2}}`, code: CodeInvalidRequest, id: Int64ID(1), noReply: true},
		{name: "error code casing", in: `{"jsonrpc":"2.0","id":1,"error":{"Code":1,"code":1,"message":"x"}}`, code: CodeInvalidRequest, id: Int64ID(1), noReply: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Decode([]byte(tt.in), tt.lim)
			if err == nil {
				t.Fatalf("Decode succeeded: %#v", m)
			}
			if m != nil {
				t.Errorf("Decode returned a message with an error: %#v", m)
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T %v is not a *DecodeError", err, err)
			}
			if de.Code != tt.code {
				t.Errorf("Code = %d, want %d (%v)", de.Code, tt.code, err)
			}
			if de.ID != tt.id {
				t.Errorf("ID = %v, want %v", de.ID, tt.id)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.is)
			}
			if !strings.Contains(de.Msg, tt.substr) {
				t.Errorf("Msg = %q, want it to contain %q", de.Msg, tt.substr)
			}
			if !errors.Is(err, &Error{Code: tt.code}) {
				t.Errorf("errors.Is(err, &Error{Code: %d}) = false", tt.code)
			}
			if errors.Is(err, ErrDuplicateName) && tt.is != ErrDuplicateName {
				t.Errorf("unexpected duplicate-name error: %v", err)
			}
			resp := de.Response()
			if tt.noReply {
				if resp != nil {
					t.Fatalf("Response() = %+v for an invalid response; want nil", resp)
				}
				return
			}
			if resp == nil || resp.ID != tt.id || resp.Error == nil || resp.Error.Code != tt.code || resp.Error.Message != de.Msg {
				t.Errorf("Response() = %+v", resp)
			}
			if _, err := Encode(resp); err != nil {
				t.Errorf("encoding Response(): %v", err)
			}
		})
	}
}

func TestDecodeValid(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Message
	}{
		{"request", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`,
			&Request{ID: Int64ID(1), Method: "tools/call", Params: jsontext.Value(`{"name":"x"}`)}},
		{"string id", `{"jsonrpc":"2.0","id":"abc","method":"ping"}`, &Request{ID: StringID("abc"), Method: "ping"}},
		{"empty string id", `{"jsonrpc":"2.0","id":"","method":"ping"}`, &Request{ID: StringID(""), Method: "ping"}},
		{"negative id", `{"jsonrpc":"2.0","id":-9223372036854775808,"method":"ping"}`, &Request{ID: Int64ID(-1 << 63), Method: "ping"}},
		{"max id", `{"jsonrpc":"2.0","id":9223372036854775807,"method":"ping"}`, &Request{ID: Int64ID(1<<63 - 1), Method: "ping"}},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, &Request{Method: "notifications/initialized"}},
		{"array params", `{"params":[1,2],"method":"m","jsonrpc":"2.0"}`, &Request{Method: "m", Params: jsontext.Value(`[1,2]`)}},
		{"whitespace", " \r\n{ \"jsonrpc\" : \"2.0\" , \"id\" : 2 , \"method\" : \"m\" , \"params\" : { \"a\" : 1 } }\n\t ",
			&Request{ID: Int64ID(2), Method: "m", Params: jsontext.Value(`{ "a" : 1 }`)}},
		{"escaped names and values", `{"json\u0072pc":"2\u002e0","\u0069d":"\u00e9","meth\u006fd":"a\/b"}`, &Request{ID: StringID("é"), Method: "a/b"}},
		{"unknown members ignored", `{"jsonrpc":"2.0","id":1,"method":"m","extra":{"x":[1,{"y":2}]},"_meta":null}`, &Request{ID: Int64ID(1), Method: "m"}},
		{"result", `{"jsonrpc":"2.0","id":1,"result":{"ok":true}}`, &Response{ID: Int64ID(1), Result: jsontext.Value(`{"ok":true}`)}},
		{"null result", `{"jsonrpc":"2.0","id":1,"result":null}`, &Response{ID: Int64ID(1), Result: jsontext.Value(`null`)}},
		{"error", `{"jsonrpc":"2.0","id":"q","error":{"code":-32601,"message":"no such method","data":{"m":"x"},"extra":1}}`,
			&Response{ID: StringID("q"), Error: &Error{Code: CodeMethodNotFound, Message: "no such method", Data: jsontext.Value(`{"m":"x"}`)}}},
		{"error null id", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}`,
			&Response{Error: &Error{Code: CodeParseError, Message: "bad"}}},
		{"depth at limit", deep(DefaultMaxDepth), nil},
		{"brackets in strings", `{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"[[[{{{\"\\","t":"\\\"]]"}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Decode([]byte(tt.in), Limits{})
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if tt.want != nil && !equalMessage(m, tt.want) {
				t.Errorf("Decode = %s, want %s", show(m), show(tt.want))
			}
			roundTrip(t, m)
		})
	}
}

func TestDecodeLimitsDisabled(t *testing.T) {
	in := deep(300)
	if _, err := Decode([]byte(in), Limits{}); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("default limits: err = %v, want ErrTooDeep", err)
	}
	if _, err := Decode([]byte(in), Limits{MaxDepth: -1, MaxMessageBytes: -1}); err != nil {
		t.Fatalf("disabled limits: %v", err)
	}
	big := []byte(`{"jsonrpc":"2.0","method":"m","params":["` + strings.Repeat("x", DefaultMaxMessageBytes) + `"]}`)
	if _, err := Decode(big, Limits{}); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("default size limit: err = %v", err)
	}
	if _, err := Decode(big, Limits{MaxMessageBytes: -1}); err != nil {
		t.Fatalf("disabled size limit: %v", err)
	}
	exact := []byte(`{"jsonrpc":"2.0","method":"m"}`)
	if _, err := Decode(exact, Limits{MaxMessageBytes: len(exact)}); err != nil {
		t.Fatalf("message exactly at the limit: %v", err)
	}
}

func TestDecodeDoesNotAliasBeyondValue(t *testing.T) {
	data := []byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}`)
	m, err := Decode(data, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	p := m.(*Request).Params
	_ = append(p, '!') // must not overwrite data after the params value
	if string(data) != `{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}` {
		t.Fatalf("append to Params modified the input: %s", data)
	}
}

func TestEncode(t *testing.T) {
	tests := []struct {
		name string
		m    Message
		want string
	}{
		{"request", &Request{ID: Int64ID(1), Method: "tools/call", Params: jsontext.Value(`{"a":1}`)},
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"a":1}}`},
		{"notification", &Request{Method: "notifications/progress"}, `{"jsonrpc":"2.0","method":"notifications/progress"}`},
		{"string id escaped", &Request{ID: StringID("a\"b\n"), Method: "m<>"}, `{"jsonrpc":"2.0","id":"a\"b\n","method":"m<>"}`},
		{"empty params omitted", &Request{ID: Int64ID(1), Method: "m", Params: jsontext.Value{}}, `{"jsonrpc":"2.0","id":1,"method":"m"}`},
		{"result", &Response{ID: StringID("x"), Result: jsontext.Value(`[1,2]`)}, `{"jsonrpc":"2.0","id":"x","result":[1,2]}`},
		{"nil result", &Response{ID: Int64ID(5)}, `{"jsonrpc":"2.0","id":5,"result":{}}`},
		{"error", &Response{ID: Int64ID(5), Error: &Error{Code: -32601, Message: "nope", Data: jsontext.Value(`"d"`)}},
			`{"jsonrpc":"2.0","id":5,"error":{"code":-32601,"message":"nope","data":"d"}}`},
		{"error null id", &Response{Error: NewError(CodeParseError, "bad")}, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}`},
		{"pretty params compacted", &Request{ID: Int64ID(1), Method: "m", Params: jsontext.Value("{\n  \"a\": [\r\n 1,\n 2\n ]\n}")},
			`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[1,2]}}`},
		{"pretty result compacted", &Response{ID: Int64ID(1), Result: jsontext.Value("{\n\"s\": \"x y\"\n}")}, `{"jsonrpc":"2.0","id":1,"result":{"s":"x y"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Encode(tt.m)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Encode =\n%s\nwant\n%s", got, tt.want)
			}
			if bytes.ContainsAny(got, "\r\n") {
				t.Errorf("encoding contains a line break: %q", got)
			}
			pre := []byte("prefix")
			got2, err := AppendMessage(pre, tt.m)
			if err != nil || string(got2) != "prefix"+tt.want {
				t.Errorf("AppendMessage = %q, %v", got2, err)
			}
			roundTrip(t, tt.m)
		})
	}
}

func TestEncodeErrors(t *testing.T) {
	tests := []struct {
		name string
		m    Message
	}{
		{"nil", nil},
		{"nil request", (*Request)(nil)},
		{"nil response", (*Response)(nil)},
		{"scalar params", &Request{Method: "m", Params: jsontext.Value(`1`)}},
		{"both result and error", &Response{ID: Int64ID(1), Result: jsontext.Value(`{}`), Error: NewError(1, "x")}},
		{"success without id", &Response{Result: jsontext.Value(`{}`)}},
		{"invalid utf8 method", &Request{Method: "\xff"}},
		{"invalid utf8 id", &Request{ID: StringID("\xff"), Method: "m"}},
		{"invalid utf8 error message", &Response{ID: Int64ID(1), Error: NewError(1, "\xff")}},
		{"broken pretty params", &Request{Method: "m", Params: jsontext.Value("{\n")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []byte("keep")
			got, err := AppendMessage(dst, tt.m)
			if err == nil {
				t.Fatalf("AppendMessage succeeded: %s", got)
			}
			if string(got) != "keep" {
				t.Errorf("dst not restored on error: %q", got)
			}
		})
	}
}

func TestDecodeErrorNeverWrapsEOF(t *testing.T) {
	for _, in := range []string{"", " ", "{", `{"a":`, `[`, `"x`} {
		_, err := Decode([]byte(in), Limits{})
		if err == nil || errors.Is(err, io.EOF) {
			t.Errorf("Decode(%q) = %v; must fail without matching io.EOF", in, err)
		}
	}
}

// roundTrip checks that m encodes, decodes to an equal message, and that
// re-encoding gives identical bytes.
func roundTrip(t testing.TB, m Message) {
	t.Helper()
	b1, err := Encode(m)
	if err != nil {
		t.Fatalf("Encode(%s): %v", show(m), err)
	}
	m2, err := Decode(b1, Limits{MaxDepth: -1, MaxMessageBytes: -1})
	if err != nil {
		t.Fatalf("Decode(Encode(m)) = %v\nencoded: %s", err, b1)
	}
	b2, err := Encode(m2)
	if err != nil {
		t.Fatalf("Encode(Decode(Encode(m))): %v", err)
	}
	if !bytes.Equal(b1, b2) {
		t.Fatalf("re-encoding differs:\n%s\n%s", b1, b2)
	}
	if !sameEnvelope(m, m2) {
		t.Fatalf("round trip changed the message: %s -> %s", show(m), show(m2))
	}
}

// sameEnvelope compares everything but the formatting of raw values.
func sameEnvelope(a, b Message) bool {
	switch a := a.(type) {
	case *Request:
		b, ok := b.(*Request)
		return ok && a.ID == b.ID && a.Method == b.Method && (len(a.Params) == 0) == (len(b.Params) == 0)
	case *Response:
		b, ok := b.(*Response)
		if !ok || a.ID != b.ID || (a.Error == nil) != (b.Error == nil) {
			return false
		}
		if a.Error != nil {
			return a.Error.Code == b.Error.Code && a.Error.Message == b.Error.Message &&
				(len(a.Error.Data) == 0) == (len(b.Error.Data) == 0)
		}
		return true
	}
	return false
}

func equalMessage(a, b Message) bool {
	if !sameEnvelope(a, b) {
		return false
	}
	switch a := a.(type) {
	case *Request:
		return bytes.Equal(a.Params, b.(*Request).Params)
	case *Response:
		b := b.(*Response)
		if a.Error != nil {
			return bytes.Equal(a.Error.Data, b.Error.Data)
		}
		return bytes.Equal(a.Result, b.Result)
	}
	return false
}

func show(m Message) string {
	b, err := Encode(m)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// depthRef is the obvious byte-by-byte depth scan that depthWithin must
// agree with on any input, valid JSON or not.
func depthRef(data []byte, max int) bool {
	depth, inStr := 0, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case inStr && c == '\\':
			i++
		case inStr && c == '"':
			inStr = false
		case inStr:
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			depth++
			if depth > max {
				return false
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return true
}

func TestDepthScanMatchesReference(t *testing.T) {
	const alphabet = `"\[]{}a`
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 0, 80)
	for range 200000 {
		buf = buf[:0]
		for range rng.IntN(80) {
			buf = append(buf, alphabet[rng.IntN(len(alphabet))])
		}
		max := rng.IntN(4)
		if got, want := depthWithin(buf, max), depthRef(buf, max); got != want {
			t.Fatalf("depthWithin(%q, %d) = %v, reference says %v", buf, max, got, want)
		}
	}
}

func TestDepthIgnoresBracketsInStrings(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"` + strings.Repeat(`[{\"\\`, 500) + `"}}`
	if _, err := Decode([]byte(in), Limits{MaxDepth: 2}); err != nil {
		t.Fatalf("brackets inside a string counted as nesting: %v", err)
	}
}

// TestDepthBoundByBracketCount: at and just over the limit, by the
// bracket count that lets depthExceeded skip its scan, and with more
// brackets than the limit inside strings (the scan then runs).
func TestDepthBoundByBracketCount(t *testing.T) {
	for _, max := range []int{0, 1, 2, 7, DefaultMaxDepth} {
		at := strings.Repeat("[", max) + strings.Repeat("]", max)
		if got := depthExceeded([]byte(at), max); got != -1 {
			t.Errorf("depth %d, max %d: exceeded at %d", max, max, got)
		}
		over := strings.Repeat("[", max+1) + strings.Repeat("]", max+1)
		if got := depthExceeded([]byte(over), max); got != max {
			t.Errorf("depth %d, max %d: exceeded at %d, want %d", max+1, max, got, max)
		}
		inStr := `["` + strings.Repeat("[{", max+1) + `"]`
		if got := depthExceeded([]byte(inStr), max); (got == -1) != (max >= 1) {
			t.Errorf("%d brackets in a string, max %d: exceeded at %d", 2*max+2, max, got)
		}
	}
}
