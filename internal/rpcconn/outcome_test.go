package rpcconn

import (
	stdjson "encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/jsonrpc"
)

type errPanics struct{}

func (errPanics) Error() string { panic("Error boom") }

// TestResolve pins the one mapping of handler outcomes to response members
// that the stream engine and the HTTP transport share.
func TestResolve(t *testing.T) {
	own := &jsonrpc.Error{Code: -32050, Message: "mine", Data: jsontext.Value(`[1]`)}
	calls := 0
	marshal := func(v any) (jsontext.Value, error) {
		calls++
		switch v.(type) {
		case marshalFail:
			return nil, errors.New("cannot")
		case marshalPanic:
			panic("boom")
		}
		return jsontext.Value(`{"ok":true}`), nil
	}
	var nilErr *jsonrpc.Error
	for _, tc := range []struct {
		name      string
		res       any
		err       error
		want      string // result, or "error <code> <message>"
		marshaled bool
		cause     bool // MarshalErr or Panic set
	}{
		{name: "value", res: struct{}{}, want: `{"ok":true}`, marshaled: true},
		{name: "nil", want: `null`},
		{name: "raw", res: jsontext.Value(` [1] `), want: ` [1] `},
		{name: "std raw", res: stdjson.RawMessage(`{}`), want: `{}`},
		{name: "empty raw", res: jsontext.Value(nil), want: `null`},
		{name: "invalid raw", res: jsontext.Value(`{`), want: "error -32603 internal error: cannot marshal result", cause: true},
		{name: "marshal error", res: marshalFail{}, want: "error -32603 internal error: cannot marshal result", marshaled: true, cause: true},
		{name: "marshal panic", res: marshalPanic{}, want: "error -32603 internal error: cannot marshal result", marshaled: true, cause: true},
		{name: "rpc error", res: "ignored", err: fmt.Errorf("wrapped: %w", own), want: "error -32050 mine"},
		{name: "typed nil rpc error", err: fmt.Errorf("x: %w", nilErr), want: "error -32603 x: <nil>"},
		{name: "plain error", err: errors.New("plain"), want: "error -32603 plain"},
		{name: "Error panics", err: errPanics{}, want: "error -32603 internal error: cannot marshal result", cause: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls = 0
			out := Resolve(tc.res, tc.err, marshal)
			got := string(out.Result)
			if out.Error != nil {
				if out.Result != nil {
					t.Fatalf("both result %s and error %v", out.Result, out.Error)
				}
				got = fmt.Sprintf("error %d %s", out.Error.Code, out.Error.Message)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if (calls == 1) != tc.marshaled || calls > 1 {
				t.Errorf("marshal called %d times", calls)
			}
			if cause := out.MarshalErr != nil || out.Panic != nil; cause != tc.cause {
				t.Errorf("cause reported = %v, want %v", cause, tc.cause)
			}
			if out.Panic != nil && len(out.Stack) == 0 {
				t.Error("panic without stack")
			}
		})
	}
}
