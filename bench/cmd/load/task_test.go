package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fakeTaskServer answers the task round's methods with the replies the
// test gives (JSON result objects, or a whole response when it starts with
// {"jsonrpc").
type fakeTaskServer struct {
	create, result string
	// gets are the tasks/get results in order; the last one repeats.
	gets []string
	n    int
}

func (f *fakeTaskServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var req struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(b, &req)
	var out string
	switch req.Method {
	case "tools/call":
		out = f.create
	case "tasks/get":
		out = f.gets[min(f.n, len(f.gets)-1)]
		f.n++
	case "tasks/result":
		out = f.result
	default:
		http.Error(w, "unexpected "+req.Method, 400)
		return
	}
	if !strings.HasPrefix(out, `{"jsonrpc"`) {
		out = `{"jsonrpc":"2.0","id":1,"result":` + out + `}`
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, out)
}

func roundOn(t *testing.T, f *fakeTaskServer, modern bool) (int, error) {
	t.Helper()
	srv := httptest.NewServer(f)
	defer srv.Close()
	host, path := hostOf(srv.URL + "/mcp")
	hc, err := dial(host)
	if err != nil {
		t.Fatal(err)
	}
	defer hc.c.Close()
	return newTaskRounder(hc, host, path, modern, nil).round()
}

const (
	legacyCreated   = `{"task":{"taskId":"t1","status":"working","createdAt":"x","lastUpdatedAt":"x"}}`
	legacyWorking   = `{"taskId":"t1","status":"working"}`
	legacyCompleted = `{"taskId":"t1","status":"completed"}`
	legacyResult    = `{"content":[{"type":"text","text":"hello"}],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t1"}}}`
	modernCreated   = `{"resultType":"task","taskId":"t1","status":"completed"}`
	modernCompleted = `{"resultType":"complete","taskId":"t1","status":"completed","result":{"content":[{"type":"text","text":"hello"}],"resultType":"complete"}}`
)

// TestTaskRoundAcceptsAGoodServer: the rounds pass against the shapes the
// SDK answers with, polling tasks/get until the task is completed.
func TestTaskRoundAcceptsAGoodServer(t *testing.T) {
	gets, err := roundOn(t, &fakeTaskServer{create: legacyCreated, gets: []string{legacyWorking, legacyCompleted}, result: legacyResult}, false)
	if err != nil || gets != 2 {
		t.Fatalf("legacy: gets %d, err %v; want 2 and no error", gets, err)
	}
	gets, err = roundOn(t, &fakeTaskServer{create: modernCreated, gets: []string{modernCompleted}}, true)
	if err != nil || gets != 1 {
		t.Fatalf("modern: gets %d, err %v; want 1 and no error", gets, err)
	}
}

// TestTaskRoundRejectsABrokenServer: every way a server can skip work is
// an error of the round, so it is counted and not timed as an operation.
func TestTaskRoundRejectsABrokenServer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		f      fakeTaskServer
		modern bool
		want   string
	}{
		{"legacy no task", fakeTaskServer{create: `{"content":[{"type":"text","text":"hello"}]}`}, false, "no task"},
		{"legacy rpc error", fakeTaskServer{create: `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"nope"}}`}, false, "JSON-RPC error -32601"},
		{"legacy never completes", fakeTaskServer{create: legacyCreated, gets: []string{legacyWorking}}, false, "not completed after 1000"},
		{"legacy failed", fakeTaskServer{create: legacyCreated, gets: []string{`{"taskId":"t1","status":"failed"}`}}, false, `status "failed"`},
		{"legacy other task", fakeTaskServer{create: legacyCreated, gets: []string{`{"taskId":"t2","status":"completed"}`}}, false, "task id"},
		{"legacy wrong echo", fakeTaskServer{create: legacyCreated, gets: []string{legacyCompleted},
			result: `{"content":[{"type":"text","text":"nope"}],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t1"}}}`}, false, "not the echo"},
		{"legacy tool error", fakeTaskServer{create: legacyCreated, gets: []string{legacyCompleted},
			result: `{"content":[{"type":"text","text":"hello"}],"isError":true,"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t1"}}}`}, false, "not the echo"},
		{"legacy no related task", fakeTaskServer{create: legacyCreated, gets: []string{legacyCompleted},
			result: `{"content":[{"type":"text","text":"hello"}]}`}, false, "related task"},
		{"modern synchronous result", fakeTaskServer{create: `{"resultType":"complete","content":[{"type":"text","text":"hello"}]}`}, true, "resultType"},
		{"modern no result", fakeTaskServer{create: modernCreated, gets: []string{`{"taskId":"t1","status":"completed"}`}}, true, "no tool result"},
		{"modern bad id", fakeTaskServer{create: `{"resultType":"task","taskId":"a\"b","status":"working"}`}, true, "bad task id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := roundOn(t, &tc.f, tc.modern)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
}
