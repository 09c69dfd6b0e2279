package pmcp

import (
	"net/http"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// tableProbeMethods are every method of the table and names it does not
// have: the agreement tests run over all of them.
func tableProbeMethods() []string {
	ms := []string{"", "nope", "notifications/initialized", "tools/List", "tasks/"}
	for i := range methodRows {
		ms = append(ms, methodRows[i].method)
	}
	return ms
}

// TestMethodTableDeclares: Server.declares(row.capability) is the old
// methodDeclared, for servers with registries (empty, full, tasks on) and
// with explicit capabilities.
func TestMethodTableDeclares(t *testing.T) {
	full := factsServer(t, newFactLog())
	empty, err := NewServer(ServerOptions{Name: "e", Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	tasksOnly, err := NewServer(ServerOptions{Name: "t", Version: "1", Tasks: &TaskOptions{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tasksOnly.Close() })
	servers := map[string]*Server{"full": full, "empty": empty, "tasks": tasksOnly}
	for name, c := range map[string]*ServerCapabilities{
		"none":          {},
		"tools":         {Tools: &ListChangedCapability{}},
		"prompts":       {Prompts: &ListChangedCapability{}},
		"resources":     {Resources: &ResourcesCapability{}},
		"subscribe":     {Resources: &ResourcesCapability{Subscribe: true}},
		"completions":   {Completions: Object{}},
		"tasks-legacy":  {Tasks: legacyTasksCapability},
		"tasks-modern":  {Extensions: map[string]Object{ExtensionTasks: {}}},
		"other-ext":     {Extensions: map[string]Object{"x/y": {}}},
		"logging-only":  {Logging: Object{}},
		"tools+prompts": {Tools: &ListChangedCapability{}, Prompts: &ListChangedCapability{}},
	} {
		s, err := NewServer(ServerOptions{Name: "x", Version: "1", Capabilities: c})
		if err != nil {
			t.Fatal(err)
		}
		servers["explicit-"+name] = s
	}
	for name, s := range servers {
		for _, m := range tableProbeMethods() {
			row := methodOf(m)
			if row == nil || row.eras == 0 {
				continue // the dispatcher answers -32601 before asking
			}
			if got, want := s.declares(row.capability), s.methodDeclared(m); got != want {
				t.Errorf("%s: %q declared %v, methodDeclared says %v", name, m, got, want)
			}
			if got, want := row.capability == capTasks, isTaskMethod(m); got != want {
				t.Errorf("%q: capTasks %v, isTaskMethod says %v", m, got, want)
			}
		}
	}
}

// TestMethodTableTargets: the target column is the old target switches:
// reqParams.target (Request.Name, peek, the scope check), the HTTP
// Mcp-Name check, the client's mirrored headers, requiredScopes and
// NameRegistered.
func TestMethodTableTargets(t *testing.T) {
	s := factsServer(t, newFactLog())
	for _, m := range tableProbeMethods() {
		row := methodOf(m)
		var target targetParam
		var flags methodFlags
		var reg registryKind
		if row != nil {
			target, flags, reg = row.target, row.flags, row.registry
		}
		for _, v := range []struct {
			member, value string
			kind          targetParam
		}{{"name", "admin", paramName}, {"uri", "test://secret", paramURI}, {"taskId", "t1", paramTaskID}} {
			if v.kind == paramName && reg == regPrompts {
				v.value = "secret" // the scoped prompt
			}
			params := jsontext.Value(`{"` + v.member + `":"` + v.value + `","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`)
			var rp reqParams
			rp.scan(params)
			raw, name := rp.target(m)
			if got, want := target == v.kind, raw != nil; got != want {
				t.Errorf("%q: target %v reads %s %v, reqParams.target says %v", m, target, v.member, got, want)
			}
			if got, want := target == v.kind && target.inName(), name != ""; got != want {
				t.Errorf("%q: %s in Request.Name %v, reqParams.target says %v", m, v.member, got, want)
			}

			// The server's Mcp-Name check: a body target without the header
			// is refused exactly for the mirrored rows.
			pk := rp.peek(m)
			h := http.Header{}
			h.Set(headerProtocolVersion, "2026-07-28")
			h.Set(headerMethod, m)
			err := checkStandardHeaders(h, m, &pk)
			if got, want := flags&mirrorName != 0 && target == v.kind, err != nil; got != want {
				t.Errorf("%q: %s mirrored %v, checkStandardHeaders refuses without Mcp-Name: %v", m, v.member, got, err)
			}

			// The client's mirrored headers.
			ch, _, ok := mirroredHeaders(m, params, nil)
			if !ok {
				t.Fatalf("%q: mirroredHeaders refused %s", params, m)
			}
			if got, want := flags&mirrorName != 0 && target == v.kind, ch.Get(headerName) != ""; got != want {
				t.Errorf("%q: %s mirrored %v, the client sends Mcp-Name: %v", m, v.member, got, want)
			}

			// Scopes and NameRegistered read the registry.
			if v.kind == paramTaskID {
				continue
			}
			if got, want := flags&scoped != 0 && target == v.kind, len(s.requiredScopes(m, v.value)) > 0; got != want {
				t.Errorf("%q: %s scoped %v, requiredScopes says %v", m, v.value, got, want)
			}
			r := Request{Method: m, Name: v.value, srv: s}
			if got, want := reg != regNone && target == v.kind, r.NameRegistered(); got != want {
				t.Errorf("%q: %s registered %v, NameRegistered says %v", m, v.value, got, want)
			}
		}
	}
}
