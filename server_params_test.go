package pmcp

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// The one-pass scan of server_params.go must agree with the decodes it
// replaces whenever it claims a result; when it does not, the dispatcher
// runs those decodes itself.

var scanSeeds = []string{
	``,
	`{}`,
	`{"name":"echo","arguments":{"text":"hello"}}`,
	`{"name":"echo","arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}}`,
	`{"name":"e\u0063ho","arguments":null,"task":{"ttl":1},"inputResponses":{"a":{"action":"accept"}},"requestState":"abc"}`,
	`{"name":null,"requestState":null,"_meta":null}`,
	`{"name":1}`,
	`{"requestState":5}`,
	`{"_meta":[]}`,
	`{"_meta":{"io.modelcontextprotocol/protocolVersion":7}}`,
	`{"_meta":{"io.modelcontextprotocol/protocolVersion":null,"io.modelcontextprotocol/clientCapabilities":null}}`,
	`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true},"elicitation":{}}}}`,
	`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":1}}}`,
	`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{ }}}`,
	`{"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"x","version":"1","title":null,"icons":[{"src":"a"}]}}}`,
	`{"_meta":{"io.modelcontextprotocol/clientInfo":{"name":1}}}`,
	`{"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"a\"b","websiteUrl":"u","description":"d","extra":[1,{"a":2}]}}}`,
	`{"_meta":{"io.modelcontextprotocol/clientInfo":"x"}}`,
	`{"_meta":{"io.modelcontextprotocol/logLevel":"debug","progressToken":"t"}}`,
	`{"_meta":{"io.modelcontextprotocol/logLevel":3,"progressToken":null}}`,
	`{"_meta":{"progressToken":12, "other":{"x":[1,2]}}}`,
	`{"Name":"echo","NAME":"x","_META":{}}`,
	`{"name":"a","name":"b"}`,
	`{"_meta":{"a":1,"a":2}}`,
	`{"name":"\ud800"}`,
	`{"uri":"file:///x","name":"n"}`,
	`{"uri":7}`,
	`{"name":"x"} trailing`,
	`{"name":`,
	`[1,2]`,
	`"str"`,
	"{\"name\":\"\xff\"}",
	`{"arguments": [1, 2 ] , "name" : "spaced"}`,
	// For the validated scan (jsonskip): strings with escaped quotes and
	// brackets, long strings, numbers and literals before separators,
	// nested values, whitespace everywhere, escaped names.
	" {\t\"name\" :\n\"echo\" ,\r\"arguments\":{ \"a\" : [ {\"b\":\"]}\\\"[{\"} , -1.5e+3 ,true,false , null ] } } ",
	`{"\u005fmeta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"n\u0061me":"x\\"}`,
	`{"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"a long name with \"quotes\" and \\ backslashes \\","version":"1","icons":[]},"progressToken":-0}}`,
	`{"name":"echo","arguments":{"n":0,"m":[[],{},[[{}]]],"s":"}}}]]]"},"task":{},"inputResponses":[],"requestState":"\u00e9t\u00e9"}`,
	`{"_meta":{"io.modelcontextprotocol/logLevel":"warning","io.modelcontextprotocol/clientCapabilities":{"a":{"b":[1,{"c":"\\"}]}}},"uri":"x:\/\/y"}`,
	`{"taskId":"t-1","_meta":{}}`,
	`{"name":"\\\\\\\"x\\\\\\\""}`,
}

func FuzzParamsScan(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add(s)
	}
	for _, s := range mirrorSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, params string) {
		for _, m := range []string{MethodToolsCall, MethodResourcesRead, MethodDiscover, MethodPromptsGet} {
			checkScan(t, m, jsontext.Value(params))
		}
		checkMirrored(t, jsontext.Value(params)) // the client's headers read the same scan
		checkValidatedScan(t, params)
	})
}

// checkValidatedScan: for the params of any message jsonrpc.Decode
// accepts, scanValidated finds exactly what scan finds.
func checkValidatedScan(t *testing.T, params string) {
	t.Helper()
	msg := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params + `}`
	m, err := jsonrpc.Decode([]byte(msg), jsonrpc.Limits{})
	if err != nil {
		return // scanValidated is only ever given what Decode accepted
	}
	req := m.(*jsonrpc.Request)
	var want, got reqParams
	want.scan(req.Params)
	got.scanValidated(req.Params)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%q: scanValidated\n got %+v\nwant %+v", req.Params, got, want)
	}
}

func TestParamsScanValidated(t *testing.T) {
	var n int
	for _, s := range append(append([]string{}, scanSeeds...), mirrorSeeds...) {
		checkValidatedScan(t, s)
		if jsontext.Value(s).IsValid() && len(s) > 0 && s[0] == '{' {
			n++
		}
	}
	if n < 30 {
		t.Fatalf("only %d seeds are valid objects", n)
	}
}

func TestParamsScanSeeds(t *testing.T) {
	for _, s := range scanSeeds {
		for _, m := range []string{MethodToolsCall, MethodResourcesRead, MethodDiscover} {
			checkScan(t, m, jsontext.Value(s))
		}
	}
	// The common requests must take the fast path.
	for _, s := range scanSeeds[:4] {
		var rp reqParams
		rp.scan(jsontext.Value(s))
		var m requestMeta
		if !rp.ok || !rp.callOK || !rp.decodeMeta(&m, nil) {
			t.Errorf("%s: not scanned (ok %v, callOK %v)", s, rp.ok, rp.callOK)
		}
	}
}

func checkScan(t *testing.T, method string, params jsontext.Value) {
	t.Helper()
	var rp reqParams
	rp.scan(params)
	checkPeek(t, &rp, method, params)
	if !rp.ok {
		var envl paramsEnvelope
		if len(params) == 0 || json.Unmarshal(params, &envl) == nil && params.Kind() == '{' {
			t.Errorf("%q: scan failed where the envelope decodes", params)
		}
		return
	}
	if len(params) > 0 && params.Kind() != '{' {
		t.Fatalf("%q: scan accepted a non-object", params)
	}

	// The dispatcher's envelope and _meta.
	var envl paramsEnvelope
	var wantMeta requestMeta
	metaOK := true
	if len(params) > 0 {
		if err := json.Unmarshal(params, &envl); err != nil {
			t.Fatalf("%q: scanned, but the envelope does not decode: %v", params, err)
		}
	}
	if len(envl.Meta) > 0 {
		metaOK = envl.Meta.Kind() == '{' && Unmarshal(envl.Meta, &wantMeta) == nil
	}
	if !bytes.Equal(rp.call.Meta, envl.Meta) || (rp.call.Meta == nil) != (envl.Meta == nil) {
		t.Errorf("%q: raw _meta %q, want %q", params, rp.call.Meta, envl.Meta)
	}
	var gotMeta requestMeta
	if rp.decodeMeta(&gotMeta, nil) {
		if !metaOK {
			t.Errorf("%q: _meta decoded where Unmarshal fails", params)
		} else if !reflect.DeepEqual(normMeta(gotMeta), normMeta(wantMeta)) {
			t.Errorf("%q: _meta\n got %+v\nwant %+v", params, normMeta(gotMeta), normMeta(wantMeta))
		}
	}

	// tools/call params.
	if rp.callOK {
		p, err := decodeParams[CallToolParams](params)
		if err != nil {
			t.Errorf("%q: call params built where decodeParams fails: %v", params, err)
		} else if !reflect.DeepEqual(normCall(rp.call), normCall(*p)) {
			t.Errorf("%q: call params\n got %+v\nwant %+v", params, normCall(rp.call), normCall(*p))
		}
	}
}

type metaView struct {
	PV, Level     *string
	Caps          *ClientCapabilities
	Info          *Implementation
	Progress      string
	ProgressIsNil bool
}

func normMeta(m requestMeta) metaView {
	return metaView{PV: m.ProtocolVersion, Level: m.LogLevel, Caps: m.ClientCapabilities, Info: m.ClientInfo,
		Progress: string(m.ProgressToken), ProgressIsNil: m.ProgressToken == nil}
}

type callView struct {
	Name, Args, Task, Responses, Meta  string
	NilArgs, NilTask, NilResp, NilMeta bool
	State                              *string
}

func normCall(p CallToolParams) callView {
	return callView{Name: p.Name, Args: string(p.Arguments), Task: string(p.Task), Responses: string(p.InputResponses),
		Meta: string(p.Meta), NilArgs: p.Arguments == nil, NilTask: p.Task == nil, NilResp: p.InputResponses == nil,
		NilMeta: p.Meta == nil, State: p.RequestState}
}

// checkPeek compares the transport's view of a request, derived from the
// scan, with peekReference, an independent decode of the same members.
func checkPeek(t *testing.T, rp *reqParams, method string, params jsontext.Value) {
	t.Helper()
	got := rp.peek(method)
	want, wantModern := peekReference(method, params)
	gotModern := classify(rp.eraInput(method)) == EraModern
	if gotModern != wantModern || got.version != want.version || got.hasVersion != want.hasVersion ||
		got.paramsParse != want.paramsParse || !bytes.Equal(got.name, want.name) || (got.name == nil) != (want.name == nil) {
		t.Errorf("%s %q: peek %+v modern=%v, want %+v modern=%v", method, params, got, gotModern, want, wantModern)
	}
	// The Mcp-Name check reads the decoded name instead of decoding it.
	var body string
	if ok := got.name.Kind() == '"' && json.Unmarshal(got.name, &body) == nil; got.nameIsStr && (!ok || got.nameStr != body) {
		t.Errorf("%s %q: peeked name %q, want %q (decodes: %v)", method, params, got.nameStr, body, ok)
	} else if ok && !got.nameIsStr && got.row != nil && got.row.target != paramTaskID {
		t.Errorf("%s %q: name %q not decoded", method, params, body)
	}
}

// peekReference reads the members the transport needs with json.Unmarshal
// (what the transport did before it reused the dispatcher's scan), and
// whether they make the request modern.
func peekReference(method string, params jsontext.Value) (out peekedRequest, modern bool) {
	modern = method == MethodDiscover
	if len(params) == 0 || params.Kind() != '{' {
		return out, modern
	}
	var p struct {
		Meta jsontext.Value `json:"_meta"`
		Name jsontext.Value `json:"name"`
		URI  jsontext.Value `json:"uri"`
	}
	if json.Unmarshal(params, &p) != nil {
		return out, modern
	}
	out.paramsParse = true
	// Only the methods that name a target have a name (Mcp-Name).
	switch method {
	case MethodResourcesRead, MethodResourcesSubscribe, MethodResourcesUnsubscribe:
		out.name = p.URI
	case MethodToolsCall, MethodPromptsGet:
		out.name = p.Name
	}
	if len(p.Meta) == 0 || p.Meta.Kind() != '{' {
		return out, modern
	}
	var m struct {
		ProtocolVersion    jsontext.Value `json:"io.modelcontextprotocol/protocolVersion"`
		ClientCapabilities jsontext.Value `json:"io.modelcontextprotocol/clientCapabilities"`
	}
	if json.Unmarshal(p.Meta, &m) != nil {
		return out, modern
	}
	if present(m.ProtocolVersion) || present(m.ClientCapabilities) {
		modern = true
	}
	if m.ProtocolVersion.Kind() == '"' {
		if json.Unmarshal(m.ProtocolVersion, &out.version) == nil {
			out.hasVersion = true
		}
	}
	return out, modern
}

// TestDecodeMetaSharesCapabilities: modern requests that carry the same
// clientCapabilities (or clientInfo) bytes share one decoded value; the
// value is what a decode of this request alone gives, whatever came
// before.
func TestDecodeMetaSharesCapabilities(t *testing.T) {
	var kept metaCache
	infos := []string{`{"name":"c","version":"1"}`, `{"name":"caf\u00e9","title":null,"version":"2","websiteUrl":"https://x"}`, `{"name":"c","icons":[]}`, `{"name":5}`}
	n := 0
	withCaps := func(caps string) string {
		n++
		info := infos[n/3%len(infos)]
		return `{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `,"io.modelcontextprotocol/clientInfo":` + info + `}}`
	}
	capsA := `{"elicitation":{"form":{},"url":{}},"roots":{},"sampling":{"tools":{}}}`
	capsB := `{"roots":{"listChanged":true},"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}}`
	var first *ClientCapabilities
	var prevInfo *Implementation
	for i, caps := range []string{capsA, capsA, capsB, capsA, `{"roots":5}`, capsA, `{}`, capsA, capsA, capsB, capsB, capsA, capsA, capsA} {
		params := jsontext.Value(withCaps(caps))
		var alone, shared requestMeta
		var rp1, rp2 reqParams
		rp1.scan(params)
		rp2.scan(params)
		okAlone := rp1.decodeMeta(&alone, nil)
		okShared := rp2.decodeMeta(&shared, &kept)
		if okAlone != okShared {
			t.Fatalf("%d %s: decoded %v alone, %v shared", i, caps, okAlone, okShared)
		}
		if !okAlone {
			continue
		}
		if !reflect.DeepEqual(normMeta(alone), normMeta(shared)) {
			t.Errorf("%d %s:\n shared %+v\n alone  %+v", i, caps, normMeta(shared), normMeta(alone))
		}
		if caps == capsA {
			if i == 1 && shared.ClientCapabilities != first {
				t.Errorf("the same capabilities twice in a row were decoded twice")
			}
			first = shared.ClientCapabilities
		}
		if i == 1 && shared.ClientInfo != prevInfo {
			t.Errorf("the same client info twice in a row was decoded twice")
		}
		prevInfo = shared.ClientInfo
	}
}
