package proxy

import (
	"reflect"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
)

// TestDecodeFeatureParamsIsUnmarshal: the proxy's one-pass read of a
// request's params gives what pmcp.Unmarshal gives (the same values, the
// same error), for the params clients send and for every malformed or
// unusual shape: where the pass is not sure, Unmarshal decides.
func TestDecodeFeatureParamsIsUnmarshal(t *testing.T) {
	seeds := []string{
		``,
		`{}`,
		` { } `,
		`null`,
		`[]`,
		`"x"`,
		`{"name":"echo","arguments":{"text":"hello"}}`,
		`{"name":"up_echo","arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}}`,
		`{ "name" : "a" , "arguments" : { "x" : [ 1 , 2 ] } , "extra": 5 }`,
		`{"name":null,"uri":null,"cursor":null,"arguments":null,"task":null,"requestState":null,"inputResponses":null}`,
		`{"name":"caf\u00e9 \"q\" \\ \n","uri":"file:///a%20b"}`,
		`{"uri":"ui://x/y","_meta":{"k":1}}`,
		`{"cursor":"abc"}`,
		`{"cursor":5}`,
		`{"name":5}`,
		`{"name":true}`,
		`{"name":{}}`,
		`{"uri":[]}`,
		`{"requestState":"s"}`,
		`{"requestState":"s\u0041"}`,
		`{"requestState":1}`,
		`{"inputResponses":{"a":{"x":1}},"requestState":"s"}`,
		`{"inputResponses":[]}`,
		`{"inputResponses":"x"}`,
		`{"task":{"ttl":1000}}`,
		`{"task":{}}`,
		`{"task":5}`,
		`{"Name":"case","NAME":"x"}`,
		`{"na\u006de":"escaped name"}`,
		`{"name":"a","name":"b"}`,
		`{"_meta":{"a":1,"a":2}}`,
		`{"name":"a"} x`,
		`{"name":"a"`,
		`{"name":"a",}`,
		"{\"name\":\"\xff\"}",
		`{"arguments":"not an object"}`,
		`{"arguments":[1,2]}`,
	}
	for _, raw := range seeds {
		var want, got featureParams
		werr := pmcp.Unmarshal([]byte(raw), &want)
		gerr := decodeFeatureParams(jsontext.Value(raw), "echo", &got)
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Errorf("%s: error %v, Unmarshal's %v", raw, gerr, werr)
			continue
		}
		if werr == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got  %+v\n want %+v", raw, got, want)
		}
		if strings.Contains(raw, `"hello"`) && !scanFeatureParams(jsontext.Value(raw), "", &featureParams{}) {
			t.Errorf("%s: the params clients send took the slow path", raw)
		}
	}
}
