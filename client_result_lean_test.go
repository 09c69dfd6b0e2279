package pmcp

import (
	"bytes"
	"context"
	"reflect"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/internal/relay"
)

// leanDecodeSeeds are tools/call results: the shapes decodeLeanToolResult
// takes (as pmcp servers write them) and near misses it must decline.
var leanDecodeSeeds = []string{
	`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"0.0.0"}},"resultType":"complete","content":[{"type":"text","text":"hello"}]}`,
	`{"content":[{"type":"text","text":"hello"}]}`,
	`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","title":"Up \"q\"","version":"1","description":"d","websiteUrl":"https://example.com"}},"resultType":"complete","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"isError":true}`,
	`{"_meta":{"io.modelcontextprotocol/serverInfo":{}},"content":[]}`,
	`{"resultType":"complete","content":[],"isError":false}`,
	`{"content":[{"type":"text","text":"esc \n\t\"\\ \u00e9 \ud83d\ude00 \/ \u2028 <&> \b\f\r"}],"isError":true}`,
	`{"content":[{"type":"text","text":"caf\u00e9 \u001f"}]}`,
	`{"content":[{"type":"text","text":""},{"type":"text","text":"é ☃"}]}`,
	`{"_meta":{"io.modelcontextprotocol/serverInfo":{"a":"1","b":"2","c":"3","d":"4","e":"5","f":"6","g":"7","h":"8","i":"9"}},"content":[]}`,
	`{"_meta":{"io.modelcontextprotocol/serverInfo":{"a":"1","b":"2","c":"3","d":"4","e":"5","f":"6","g":"7","h":"8","a":"9"}},"content":[]}`,
	// Near misses.
	`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"1","name":"up"}},"content":[]}`,
	`{"_meta":{"io.modelcontextprotocol/serverInfo":{"\u006eame":"a","name":"x"}},"content":[]}`,
	`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"` + "\x01" + `"}},"content":[]}`,
	`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"` + "\xe2\x82" + `"}},"content":[]}`,
	`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"1","icons":[{"src":"https://example.com/i.png"}]}},"content":[]}`,
	`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":1}},"content":[]}`,
	`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","name":"twice"}},"content":[]}`,
	`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"` + "\xff" + `"}},"content":[]}`,
	`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"\q"}},"content":[]}`,
	`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"},"k":"v"},"content":[]}`,
	`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"}},"_meta":{},"content":[]}`,
	`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"}}}`,
	`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"},"content":[]}`,
	`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up}},"content":[]}`,
	`{"_meta":{"io.modelcontextprotocol/serverInfo":"up"},"content":[]}`,
	`{"_meta":{"k":"v"},"content":[]}`,
	`{"_meta":{},"content":[]}`,
	`{"resultType":"input_required","content":[]}`,
	`{"resultType":"task","content":[]}`,
	`{"resultType":"complete"}`,
	`{"content":[],"resultType":"complete"}`,
	`{"content":[{"type":"text","text":"x"}],"isError":true,"isError":false}`,
	`{"content":[{"type":"text","text":"x"}],"isError":null}`,
	`{"content":[{"type":"text","text":"x"}],"structuredContent":{"a":1}}`,
	`{"content":[{"type":"text","text":"x"},]}`,
	`{"content":[,{"type":"text","text":"x"}]}`,
	`{"content":[{"type":"text","text":"x"}{"type":"text","text":"y"}]}`,
	`{"content":[{"type":"text","text":"x","type":"text"}]}`,
	`{"content":[{"text":"x","type":"text"}]}`,
	`{"content":[{"type":"text","text":1}]}`,
	`{"content":[{"type":"text","text":"` + "\x01" + `"}]}`,
	`{"content":[{"type":"text","text":"` + "\xff" + `"}]}`,
	`{"content":[{"type":"text","text":"\n` + "\xff" + `"}]}`,
	`{"content":[{"type":"text","text":"\ud800"}]}`,
	`{"content":[{"type":"text","text":"\u12"}]}`,
	`{"content":[{"type":"text","text":"\q"}]}`,
	`{"content":[{"type":"text","text":"x}]}`,
	`{"content":[{"type":"text","text":"x"}]`,
	`{"content":[{"type":"text","text":"x"}]} `,
	`{"content":[{"type":"text","text":"x"}]}}`,
	`{ "content":[]}`,
	`{"content":[ ]}`,
	`{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}`,
	`{"content":[{"type":"resource_link","uri":"ui://a/b","name":"b"}]}`,
	`{"content":[{"type":"resource","resource":{"uri":"ui://a/b","text":"t"}}]}`,
	`{"content":null}`,
	`{"content":[null]}`,
	`{}`,
	`{`,
	``,
}

// TestDecodeLeanToolResultAsTyped is the differential test of the lean
// decoding: whatever decodeLeanToolResult takes, with or without leaving
// out the serverInfo, is what the typed decoding (decodeTextToolResult,
// else Unmarshal) gives once the serverInfo is deleted as the proxy
// deletes it, and the results the server sends for both, in both eras,
// are the same bytes.
func TestDecodeLeanToolResultAsTyped(t *testing.T) {
	srv, err := NewServer(ServerOptions{Name: "down", Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	taken := 0
	for _, s := range append(append([]string(nil), leanDecodeSeeds...), resultDecodeSeeds...) {
		for _, drop := range []bool{false, true} {
			if checkLeanDecode(t, srv, s, drop) {
				taken++
			}
		}
	}
	// The first 9 seeds with serverInfo dropped, the 4 without _meta
	// without, and the legacy shapes among resultDecodeSeeds.
	if want := 9 + 4 + 2; taken < want {
		t.Errorf("the lean decoding took %d of the seeds, want %d at least", taken, want)
	}
	// The serverInfo is left out only on the relay's promise.
	var r CallToolResult
	modern := jsontext.Value(leanDecodeSeeds[0])
	if !decodeToolResult(relay.DropsServerInfo(context.Background()), modern, &r) || r.Meta != nil {
		t.Errorf("with the promise: %#v", r)
	}
	if !decodeToolResult(context.Background(), modern, &r) || r.Meta[MetaServerInfo] == nil {
		t.Errorf("without the promise: %#v", r)
	}
}

func FuzzDecodeLeanToolResult(f *testing.F) {
	for _, s := range leanDecodeSeeds {
		f.Add(s)
	}
	srv, err := NewServer(ServerOptions{Name: "down", Version: "1"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkLeanDecode(t, srv, s, true)
		checkLeanDecode(t, srv, s, false)
	})
}

// checkLeanDecode compares the lean and typed decodings of s (see
// TestDecodeLeanToolResultAsTyped) and reports whether the lean one took
// it.
func checkLeanDecode(t *testing.T, srv *Server, s string, drop bool) bool {
	t.Helper()
	var lean CallToolResult
	if !decodeLeanToolResult([]byte(s), &lean, drop) {
		if !reflect.DeepEqual(lean, CallToolResult{}) {
			t.Errorf("%s: declined, but left a result: %#v", s, lean)
		}
		return false
	}
	var typed CallToolResult
	if !decodeTextToolResult(jsontext.Value(s), &typed) {
		if err := Unmarshal([]byte(s), &typed); err != nil {
			t.Errorf("%s (drop %v): decoded lean, the typed decoding fails: %v", s, drop, err)
			return true
		}
	}
	if drop {
		// What the proxy's resultMeta does.
		delete(typed.Meta, MetaServerInfo)
		if len(typed.Meta) == 0 {
			typed.Meta = nil
		}
	}
	if !reflect.DeepEqual(lean, typed) {
		t.Errorf("%s (drop %v):\nlean  %#v\ntyped %#v", s, drop, lean, typed)
		return true
	}
	for _, era := range []Era{EraLegacy, EraModern} {
		a, b := sentResult(t, srv, &lean, era), sentResult(t, srv, &typed, era)
		if !bytes.Equal(a, b) {
			t.Errorf("%s (drop %v, %v): sent\nlean  %s\ntyped %s", s, drop, era, a, b)
		}
	}
	return true
}

// sentResult is the JSON the server sends for the forwarded result res
// (its resultType cleared, as the proxy does) in era.
func sentResult(t *testing.T, srv *Server, res *CallToolResult, era Era) []byte {
	t.Helper()
	in := *res
	in.ResultType = ""
	out, err := srv.finishResult(&in, &requestEnv{}, new(reqState), era)
	if err != nil {
		t.Fatal(err)
	}
	b, err := marshalResult(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
