package pmcp

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// mirroredHeaders reads the params with the server's one scan
// (reqParams.scan). mirroredByDecode is how it read them before, with
// json.Unmarshal of the members it needs: the oracle the scan-based
// headers must equal for every input (FuzzParamsScan and
// TestParamsScanSeeds run it).
func mirroredByDecode(method string, params jsontext.Value) (h http.Header, version string, ok bool) {
	if params.Kind() != '{' {
		return nil, "", false
	}
	var p struct {
		Meta struct {
			ProtocolVersion jsontext.Value `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
		Name   jsontext.Value `json:"name"`
		URI    jsontext.Value `json:"uri"`
		TaskID jsontext.Value `json:"taskId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return nil, "", false
	}
	v := p.Meta.ProtocolVersion
	if v.Kind() != '"' {
		return nil, "", false
	}
	version = knownVersion(v)
	if version == "" && (json.Unmarshal(v, &version) != nil || version == "") {
		return nil, "", false
	}
	h = http.Header{headerProtocolVersion: {version}, headerMethod: {method}}
	row := methodOf(method)
	if row == nil || row.flags&mirrorName == 0 {
		return h, version, true
	}
	var raw jsontext.Value
	switch row.target {
	case paramName:
		raw = p.Name
	case paramURI:
		raw = p.URI
	case paramTaskID:
		raw = p.TaskID
	}
	var name string
	if raw.Kind() == '"' && json.Unmarshal(raw, &name) == nil {
		h[headerName] = []string{encodeHeaderText(name)}
	}
	return h, version, true
}

var mirrorMethods = []string{MethodToolsCall, MethodResourcesRead, MethodPromptsGet, MethodTasksGet, MethodToolsList, MethodDiscover}

func checkMirrored(t *testing.T, params jsontext.Value) {
	t.Helper()
	for _, m := range mirrorMethods {
		h, v, ok := mirroredHeaders(m, params, nil)
		wh, wv, wok := mirroredByDecode(m, params)
		if ok != wok || v != wv || !reflect.DeepEqual(h, wh) {
			t.Errorf("%s %q: mirroredHeaders = %v %q %v, the decode's = %v %q %v", m, params, h, v, ok, wh, wv, wok)
		}
	}
}

var mirrorSeeds = []string{
	`{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`,
	`{"name":"","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`,
	`{"name":"caf\u00e9 \"x\"","_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01"}}`,
	`{"uri":"file:///a b","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":1}}}`,
	`{"taskId":"t\u00e91","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`,
	`{"taskId":5,"name":7,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`,
	`{"_meta":{"io.modelcontextprotocol/protocolVersion":""}}`,
	`{"_meta":{"io.modelcontextprotocol/protocolVersion":"\u0032026-07-28"}}`,
	`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":"x"}}`,
	`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"_meta":{}}`,
}

func TestMirroredHeadersScanSeeds(t *testing.T) {
	for _, s := range append(append([]string{}, scanSeeds...), mirrorSeeds...) {
		checkMirrored(t, jsontext.Value(s))
	}
}
