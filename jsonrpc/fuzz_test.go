package jsonrpc

import (
	"errors"
	"io"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// FuzzDecode checks that Decode never panics, reports every failure as a
// well-formed *DecodeError, and that whatever it accepts re-encodes and
// decodes to an equal message. Seeds live in testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"m","data":[1]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		orig := string(data)
		m, err := Decode(data, Limits{MaxMessageBytes: 1 << 16})
		if string(data) != orig {
			t.Fatal("Decode modified its input")
		}
		if err != nil {
			if m != nil {
				t.Fatalf("message and error both returned: %v", err)
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DecodeError: %v", err, err)
			}
			switch de.Code {
			case CodeParseError:
				if de.ID.IsValid() && !errors.Is(err, ErrTooDeep) {
					t.Fatalf("parse error carries id %v", de.ID)
				}
			case CodeInvalidRequest:
				if !jsontext.Value(data).IsValid(jsontext.AllowDuplicateNames(true)) {
					t.Fatalf("invalid JSON reported as invalid request: %v", err)
				}
			default:
				t.Fatalf("unexpected code %d", de.Code)
			}
			if de.Msg == "" {
				t.Fatal("empty error message")
			}
			if errors.Is(err, io.EOF) {
				t.Fatalf("decode error matches io.EOF: %v", err)
			}
			if r := de.Response(); r == nil {
				if de.Code != CodeInvalidRequest && !errors.Is(err, ErrTooDeep) {
					t.Fatalf("no reply for a code %d error", de.Code)
				}
			} else if _, err := Encode(r); err != nil {
				t.Fatalf("cannot encode the error response: %v", err)
			}
			return
		}
		if !jsontext.Value(data).IsValid() {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		roundTrip(t, m)
	})
}
