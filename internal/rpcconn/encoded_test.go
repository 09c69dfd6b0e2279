package rpcconn

import (
	"errors"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// TestMarshalValueEncoded: Encoded JSON passes as it is (its producer
// vouches for it: not even checked), empty Encoded means null, and the
// same bytes as a jsontext.Value are still checked.
func TestMarshalValueEncoded(t *testing.T) {
	marshal := func(any) (jsontext.Value, error) { return nil, errors.New("not to be called") }
	for _, tc := range []struct {
		in   Encoded
		want string
	}{{Encoded(`{"a":1}`), `{"a":1}`}, {Encoded(`{`), `{`}, {nil, `null`}, {Encoded{}, `null`}} {
		got, err := marshalValue(tc.in, marshal)
		if err != nil || string(got) != tc.want {
			t.Errorf("marshalValue(Encoded(%q)) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	if _, err := marshalValue(jsontext.Value(`{`), marshal); !errors.Is(err, errInvalidRaw) {
		t.Errorf("marshalValue(jsontext.Value(`{`)) = %v, want errInvalidRaw", err)
	}
}
