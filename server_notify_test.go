package pmcp

import (
	"testing"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// TestDeclaredCapabilitiesGateTaskMethods: a server whose capabilities
// are set by hand (ServerOptions.Capabilities, as the bridge's are) and
// that declares no tasks answers the tasks/* methods with -32601, in both
// eras, with or without params, as a server that registered nothing does;
// it used to run them against its missing task runner and panic (-32603).
func TestDeclaredCapabilitiesGateTaskMethods(t *testing.T) {
	srv, err := NewServer(ServerOptions{Name: "declared", Version: "1",
		Capabilities: &ServerCapabilities{Tools: &ListChangedCapability{}}})
	if err != nil {
		t.Fatal(err)
	}
	c := startServer(t, srv, nil)
	c.initialize(nil)
	calls := []struct {
		method string
		params map[string]any
	}{
		{MethodTasksList, nil},
		{MethodTasksList, map[string]any{}},
		{MethodTasksGet, map[string]any{"taskId": "t1"}},
		{MethodTasksResult, map[string]any{"taskId": "t1"}},
		{MethodTasksCancel, map[string]any{"taskId": "t1"}},
	}
	tasksExt := map[string]any{"extensions": map[string]any{ExtensionTasks: map[string]any{}}}
	for _, call := range calls {
		var params any
		if call.params != nil {
			params = call.params
		}
		if e := c.callErr(call.method, params); e.Code != jsonrpc.CodeMethodNotFound {
			t.Errorf("legacy %s %v: %d %s, want %d", call.method, call.params, e.Code, e.Message, jsonrpc.CodeMethodNotFound)
		}
		p := map[string]any{}
		for k, v := range call.params {
			p[k] = v
		}
		if e := c.callErr(call.method, modern(p, tasksExt, nil)); e.Code != jsonrpc.CodeMethodNotFound {
			t.Errorf("modern %s %v: %d %s, want %d", call.method, call.params, e.Code, e.Message, jsonrpc.CodeMethodNotFound)
		}
	}
}
