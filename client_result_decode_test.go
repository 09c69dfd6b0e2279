package pmcp

import (
	"reflect"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// resultDecodeSeeds are tools/call results, the shapes decodeTextToolResult
// takes and many it must leave to Unmarshal.
var resultDecodeSeeds = []string{
	`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"0.0.0"}},"resultType":"complete","content":[{"type":"text","text":"hello"}]}`,
	`{"content":[{"type":"text","text":"a"},{"text":"b","type":"text"}],"isError":true}`,
	`{"content":[],"isError":false}`,
	`{}`,
	`{"content":[{"type":"text","text":"\u00e9\n\"q\""}],"resultType":"input_required"}`,
	`{ "content" : [ { "type" : "text" , "text" : "spaced" } ] }`,
	`{"content":[{"type":"text"}]}`,
	`{"content":[{"text":"no type"}]}`,
	`{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}`,
	`{"content":[{"type":"text","text":"x","_meta":{"k":1}}]}`,
	`{"content":[{"type":"text","text":"x","annotations":{"priority":0.5}}]}`,
	`{"content":[{"type":"text","text":"x","type":"text"}]}`,
	`{"content":[{"type":"text","text":1}]}`,
	`{"content":null}`,
	`{"content":{}}`,
	`{"content":[null]}`,
	`{"content":[{"type":"text","text":"x"}],"content":[]}`,
	`{"content":[{"type":"text","text":"x"}],"structuredContent":{"a":1}}`,
	`{"content":[{"type":"text","text":"x"}],"isError":null}`,
	`{"content":[{"type":"text","text":"x"}],"isError":"yes"}`,
	`{"content":[{"type":"text","text":"x"}],"resultType":null}`,
	`{"content":[{"type":"text","text":"x"}],"_meta":null}`,
	`{"content":[{"type":"text","text":"x"}],"_meta":{"a":[1,2.5,"s",null,true,{"b":{}}]}}`,
	`{"content":[{"type":"text","text":"x"}],"_meta":{"a":1,"a":2}}`,
	`{"Content":[{"type":"text","text":"x"}]}`,
	`{"\u0063ontent":[{"typ\u0065":"text","text":"esc"}]}`,
	`{"content":[{"type":"text","text":"x"}],"extra":1}`,
	`{"content":[{"type":"text","text":"x"}]} `,
	`{"content":[{"type":"text","text":"x"}]}{}`,
	`{"content":[{"type":"text","text":"\xff"}]}`,
	`{"content":[],"resultType":"comp\u006cete"}`,
	`{"content":[],"resultType":"other"}`,
	`{"content":[],"resultType":"task"}`,
	`{"content":[],"resultType":""}`,
	`{"content":[],"_meta":{}}`,
	`{"content":[],"_meta":{"a":"s","b":true,"c":false,"d":null,"e":{"f":{},"g":"\u00e9"}}}`,
	`{"content":[],"_meta":{"a":{"b":1}}}`,
	`{"content":[],"_meta":{"a":["x"]}}`,
	`{"content":[],"_meta":{"a":"x","a":"y"}}`,
	`{"content":[],"_meta":{"a":{"b":"x","b":"y"}}}`,
	`{"content":[],"_meta":[]}`,
	`[]`,
	`null`,
	`{"content":[{"type":"text","text":"x"},]}`,
}

// TestDecodeTextToolResultAsUnmarshal: what decodeTextToolResult decodes
// is exactly what Unmarshal decodes, and it takes the common shapes.
func TestDecodeTextToolResultAsUnmarshal(t *testing.T) {
	taken := 0
	for _, s := range resultDecodeSeeds {
		if checkResultDecode(t, s) {
			taken++
		}
	}
	var r CallToolResult
	if decodeTextToolResult(jsontext.Value(`{"content":[],"resultType":""}`), &r) {
		t.Error(`an empty resultType was taken: res.ResultType "" must mean none`)
	}
	if taken < 6 {
		t.Errorf("the direct decoder took %d of the seeds, want the 6 common shapes at least", taken)
	}
}

func FuzzDecodeTextToolResult(f *testing.F) {
	for _, s := range resultDecodeSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkResultDecode(t, s) })
}

// checkResultDecode compares the two decodings of s and reports whether
// the direct decoder took it.
func checkResultDecode(t *testing.T, s string) bool {
	t.Helper()
	var fast CallToolResult
	ok := decodeTextToolResult(jsontext.Value(s), &fast)
	if !ok {
		if !reflect.DeepEqual(fast, CallToolResult{}) {
			t.Errorf("%s: declined, but left a result: %#v", s, fast)
		}
		return false
	}
	var slow CallToolResult
	if err := Unmarshal([]byte(s), &slow); err != nil {
		t.Errorf("%s: decoded directly, Unmarshal fails: %v", s, err)
		return true
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Errorf("%s:\ndirect    %#v\nUnmarshal %#v", s, fast, slow)
	}
	return true
}
