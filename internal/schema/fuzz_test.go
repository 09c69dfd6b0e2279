package schema

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// FuzzValidate validates arbitrary bytes against a fixed schema that uses
// most keywords, $defs, $ref, recursion and patterns. Validation must never
// panic, must finish quickly, must return nil or a *ValidationError with a
// short one-line message, and must agree with validating the decoded value.
// Seeds are in testdata/fuzz/FuzzValidate.
func FuzzValidate(f *testing.F) {
	schema := strings.Replace(keywordSchema, `"never": false`, `"never": false,
    "tree": {"$ref": "#/$defs/node"},
    "home": {"$ref": "#/$defs/address"}`, 1)
	schema = strings.Replace(schema, `"additionalProperties": false
}`, `"additionalProperties": false,
  "$defs": {
    "node": {"type": "object", "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["v"]},
    "address": {"type": "object", "properties": {"zip": {"type": "string", "pattern": "^[0-9]{5}$"}}, "required": ["zip"], "additionalProperties": false}
  }
}`, 1)
	c, err := Compile([]byte(schema), CompileOptions{Label: "arguments", Limits: Limits{MaxValidationCost: 100_000, MaxInstanceBytes: 1 << 20}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(`{"i":3}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		start := time.Now()
		err := c.ValidateJSON(data)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("ValidateJSON took %v", d)
		}
		var v any
		decodeErr := json.Unmarshal(data, &v, jsontext.AllowDuplicateNames(false))
		if err == nil {
			if decodeErr != nil {
				t.Fatalf("accepted invalid JSON %q: %v", data, decodeErr)
			}
			if err := c.Validate(v); err != nil {
				t.Fatalf("ValidateJSON accepted %q, Validate rejects it: %v", data, err)
			}
			return
		}
		var ve *ValidationError
		if !errors.As(err, &ve) {
			t.Fatalf("error %v is a %T", err, err)
		}
		msg := err.Error()
		if len(msg) > 2000 || strings.ContainsAny(msg, "\n\r") {
			t.Fatalf("bad message (%d bytes): %q", len(msg), msg)
		}
		if decodeErr == nil && !errors.Is(err, ErrLimitExceeded) && !strings.HasPrefix(msg, "arguments: invalid JSON") {
			if err2 := c.Validate(v); err2 == nil {
				t.Fatalf("ValidateJSON rejects %q (%v), Validate accepts it", data, err)
			}
		}
	})
}
