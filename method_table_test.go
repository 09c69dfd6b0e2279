package pmcp

import (
	"net/http"
	"slices"
	"strings"
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

// TestMethodTableDeclares pins which methods Server.declares gates, for
// servers with registries (empty, full, tasks on) and with explicit
// capabilities: the methods the dispatcher answers -32601 for, as the
// switches methodDeclared and declaredBy answered before the table.
// Kept quirks: explicit capabilities gate completion and not skills,
// registries gate skills and not completion.
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
		"completions":   {Completions: map[string]any{}},
		"tasks-legacy":  {Tasks: legacyTasksCapability},
		"tasks-modern":  {Extensions: map[string]map[string]any{ExtensionTasks: {}}},
		"other-ext":     {Extensions: map[string]map[string]any{"x/y": {}}},
		"logging-only":  {Logging: map[string]any{}},
		"tools+prompts": {Tools: &ListChangedCapability{}, Prompts: &ListChangedCapability{}},
	} {
		s, err := NewServer(ServerOptions{Name: "x", Version: "1", Capabilities: c})
		if err != nil {
			t.Fatal(err)
		}
		servers["explicit-"+name] = s
	}
	const (
		tools     = "tools/list tools/call "
		resources = "resources/list resources/templates/list resources/read "
		subscribe = "resources/subscribe resources/unsubscribe "
		prompts   = "prompts/list prompts/get "
		complete  = "completion/complete "
		tasks     = "tasks/get tasks/result tasks/list tasks/cancel tasks/update "
		skills    = "skills/list skills/get "
	)
	undeclared := map[string]string{
		"full":                   "",
		"empty":                  tools + resources + subscribe + prompts + tasks + skills,
		"tasks":                  tools + resources + subscribe + prompts + skills,
		"explicit-none":          tools + resources + subscribe + prompts + complete + tasks,
		"explicit-tools":         resources + subscribe + prompts + complete + tasks,
		"explicit-prompts":       tools + resources + subscribe + complete + tasks,
		"explicit-resources":     tools + subscribe + prompts + complete + tasks,
		"explicit-subscribe":     tools + prompts + complete + tasks,
		"explicit-completions":   tools + resources + subscribe + prompts + tasks,
		"explicit-tasks-legacy":  tools + resources + subscribe + prompts + complete,
		"explicit-tasks-modern":  tools + resources + subscribe + prompts + complete,
		"explicit-other-ext":     tools + resources + subscribe + prompts + complete + tasks,
		"explicit-logging-only":  tools + resources + subscribe + prompts + complete + tasks,
		"explicit-tools+prompts": resources + subscribe + complete + tasks,
	}
	for name, s := range servers {
		var got []string
		for _, m := range tableProbeMethods() {
			if row := methodOf(m); row != nil && row.eras != 0 && !s.declares(row.capability) {
				got = append(got, m)
			}
		}
		if want := strings.Fields(undeclared[name]); !slices.Equal(got, want) {
			t.Errorf("%s: undeclared\n got %q\nwant %q", name, got, want)
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
		var reg TargetKind
		if row != nil {
			target, flags, reg = row.target, row.flags, row.registry
		}
		for _, v := range []struct {
			member, value string
			kind          targetParam
		}{{"name", "admin", paramName}, {"uri", "test://secret", paramURI}, {"taskId", "t1", paramTaskID}} {
			if v.kind == paramName && reg == TargetPrompt {
				v.value = "secret" // the scoped prompt
			}
			params := jsontext.Value(`{"` + v.member + `":"` + v.value + `","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`)
			var rp reqParams
			rp.scan(params)
			raw, name := rp.target(row)
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
			if got, want := flags&scoped != 0 && target == v.kind, len(s.requiredScopes(row, v.value)) > 0; got != want {
				t.Errorf("%q: %s scoped %v, requiredScopes says %v", m, v.value, got, want)
			}
			r := Request{Method: m, Name: v.value, srv: s}
			if got, want := reg != TargetNone && target == v.kind, r.NameRegistered(); got != want {
				t.Errorf("%q: %s registered %v, NameRegistered says %v", m, v.value, got, want)
			}
		}
	}
}

// TestMethodTableServe: the server serves exactly the methods it has in
// some era (the dispatcher calls row.serve without checking it).
func TestMethodTableServe(t *testing.T) {
	for i := range methodRows {
		row := &methodRows[i]
		if got, want := row.serve != nil, row.eras != 0; got != want {
			t.Errorf("%s: has serve %v, has an era %v", row.method, got, want)
		}
	}
}

// TestTargetOf: the kinds package otel labels targets with (it switched
// on these methods before the table).
func TestTargetOf(t *testing.T) {
	want := map[string]TargetKind{
		MethodToolsCall: TargetTool, MethodPromptsGet: TargetPrompt, MethodResourcesRead: TargetResource,
		MethodResourcesSubscribe: TargetResource, MethodResourcesUnsubscribe: TargetResource,
	}
	for _, m := range tableProbeMethods() {
		if got := TargetOf(m); got != want[m] {
			t.Errorf("TargetOf(%q) = %d, want %d", m, got, want[m])
		}
	}
}
