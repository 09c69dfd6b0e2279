package pmcp

import (
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// TestScanResultTypeIsTheProbe: where scanResultType claims an answer it
// is the probe decode's, for results as servers send them and for every
// odd shape; the results servers send take the scan.
func TestScanResultTypeIsTheProbe(t *testing.T) {
	for _, raw := range []string{
		`{}`,
		`{"content":[{"type":"text","text":"hello"}]}`,
		`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"0.0.0"}},"resultType":"complete","content":[{"type":"text","text":"hello"}]}`,
		`{"resultType":"input_required","inputRequests":{"a":{"method":"roots/list"}},"requestState":"s"}`,
		`{"resultType":"task","task":{"taskId":"t"}}`,
		`{ "resultType" : "complete" }`,
		`{"resultType":null}`,
		`{"resultType":"compl\u0065te"}`,
		`{"result\u0054ype":"complete"}`,
		`{"resulttype":"complete","ResultType":"task"}`,
		`{"resultType":5}`,
		`{"resultType":{}}`,
		`{"resultType":"complete","resultType":"complete"}`,
		`{"content":{"resultType":"task"}}`,
		`{"resultType":"complete"} x`,
		`{"resultType":"complete"`,
		`{"resultType":"complete",}`,
		"{\"resultType\":\"\xff\"}",
		`[]`,
		`"resultType"`,
	} {
		var probe struct {
			ResultType *string `json:"resultType"`
		}
		perr := Unmarshal([]byte(raw), &probe)
		rt, present, ok := scanResultType(jsontext.Value(raw))
		if !ok {
			continue
		}
		if perr != nil {
			t.Errorf("%s: the scan answered, the probe failed: %v", raw, perr)
			continue
		}
		if present != (probe.ResultType != nil) || present && rt != *probe.ResultType {
			t.Errorf("%s: scan %q (present %v), probe %v", raw, rt, present, deref(probe.ResultType))
		}
	}
	for _, raw := range []string{
		`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"0.0.0"}},"resultType":"complete","content":[{"type":"text","text":"hello"}]}`,
		`{"resultType":"input_required","inputRequests":{},"requestState":"s"}`,
	} {
		if _, _, ok := scanResultType(jsontext.Value(raw)); !ok {
			t.Errorf("%s: took the probe", raw)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
