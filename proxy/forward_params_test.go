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
		`{"name":"a","_meta" : {"progressToken":1,"io.modelcontextprotocol/logLevel":"info"}}`,
		`{"name":"a","_meta":{"progressToken":1,"x.y/z":{"a":[1]}}}`,
		`{"name":"a","_meta":{"io.modelcontextprotocol\/x":1}}`,
		`{"name":"a","_meta":{}}`,
		`{"name":"a","_meta":null}`,
		`{"name":"a","_meta":[1]}`,
		`{"_meta":{"a":1},"name":"a","_meta":{"b":2}}`,
	}
	for _, raw := range seeds {
		var want, got featureParams
		werr := pmcp.Unmarshal([]byte(raw), &want)
		gerr := decodeFeatureParams(jsontext.Value(raw), "echo", &got)
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Errorf("%s: error %v, Unmarshal's %v", raw, gerr, werr)
			continue
		}
		meta, managed := got.meta, got.metaManaged
		got.meta, got.metaManaged = nil, false
		if werr == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got  %+v\n want %+v", raw, got, want)
		}
		if len(meta) > 0 {
			// The _meta the scan found is where the server's one lies.
			var env struct {
				Meta jsontext.Value `json:"_meta"`
			}
			if err := pmcp.Unmarshal([]byte(raw), &env); err != nil || string(env.Meta) != string(meta) {
				t.Errorf("%s: the scan's _meta %s, the decode's %s", raw, meta, env.Meta)
			}
			if managed != onlyManaged(meta) {
				t.Errorf("%s: the scan says managed-only %v, onlyManaged %v", raw, managed, !managed)
			}
		}
		if strings.Contains(raw, `"hello"`) && !scanFeatureParams(jsontext.Value(raw), "", &featureParams{}) {
			t.Errorf("%s: the params clients send took the slow path", raw)
		}
	}
}

// TestForwardMetaFromScan: forwardMeta answers the same whether or not
// the params scan saw _meta, and trusts the scan only for the very bytes
// the server handed on as RequestMeta.
func TestForwardMetaFromScan(t *testing.T) {
	for _, raw := range []string{
		`{"name":"a","_meta":{"progressToken":1,"io.modelcontextprotocol/logLevel":"info"}}`,
		`{"name":"a","_meta":{"progressToken":1,"x.y/z":{"a":[1]}}}`,
		`{"name":"a","_meta":{"io.modelcontextprotocol\\/x":1,"k":"v"}}`,
		`{"name":"a","_meta":{}}`,
	} {
		var fp featureParams
		if err := decodeFeatureParams(jsontext.Value(raw), "", &fp); err != nil || len(fp.meta) == 0 {
			t.Fatalf("%s: %v, _meta %s", raw, err, fp.meta)
		}
		same := &pmcp.Request{Params: jsontext.Value(raw), Extra: &pmcp.RequestHandlerExtra{RequestMeta: fp.meta}}
		want := forwardMeta(same, nil)
		if got := forwardMeta(same, &fp); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v with the scan, %v without", raw, got, want)
		}
		// Other bytes than the scan's (a middleware replaced the params):
		// the scan's answer is not taken.
		other := &pmcp.Request{Params: jsontext.Value(raw), Extra: &pmcp.RequestHandlerExtra{RequestMeta: jsontext.Value(`{"k":"v"}`)}}
		if got := forwardMeta(other, &fp); !reflect.DeepEqual(got, pmcp.Meta{"k": jsontext.Value(`"v"`)}) {
			t.Errorf("%s: with another RequestMeta %v", raw, got)
		}
	}
}
