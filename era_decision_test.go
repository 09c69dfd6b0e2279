package pmcp

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
)

// eraMethods are the methods whose era decision differs: initialize
// (the HTTP header rule skips it), server/discover (modern by name),
// legacy-only and modern-only methods, methods of both eras with and
// without a target, and an unknown one.
var eraMethods = []string{
	MethodInitialize, MethodPing, MethodDiscover, MethodToolsList, MethodToolsCall,
	MethodResourcesSubscribe, MethodTasksList, MethodSubscriptionsListen, MethodTasksUpdate,
	"no/such-method",
}

// eraMetas are the shapes of params._meta.
var eraMetas = []struct {
	label string
	meta  any // nil: no _meta member
}{
	{"none", nil},
	{"version", map[string]any{MetaProtocolVersion: Version20260728}},
	{"caps", map[string]any{MetaClientCapabilities: map[string]any{}}},
	{"both", map[string]any{MetaProtocolVersion: Version20260728, MetaClientCapabilities: map[string]any{}}},
	{"null", "null"},
}

// eraHeaders are the MCP-Protocol-Version header lines.
var eraHeaders = []struct {
	label  string
	values []string
}{
	{"none", nil},
	{"legacy", []string{Version20251125}},
	{"modern", []string{Version20260728}},
	{"repeated", []string{Version20260728, Version20260728}},
	{"unknown", []string{"1999-01-01"}},
}

// eraBody is the request of a case: the method's usual params (a valid
// initialize, the target of a targeted method) with the _meta shape.
func eraBody(id int, method string, meta any) string {
	p := map[string]any{}
	switch method {
	case MethodInitialize:
		p = map[string]any{"protocolVersion": Version20251125, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}}
	case MethodToolsCall:
		p["name"] = "open"
	case MethodResourcesSubscribe:
		p["uri"] = "test://open"
	case MethodTasksUpdate:
		p["taskId"] = "no-such-task"
	}
	if meta != nil {
		if s, ok := meta.(string); ok && s == "null" {
			p["_meta"] = nil
		} else {
			p["_meta"] = meta
		}
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": p}, json.Deterministic(true))
	return string(b)
}

// logEra is the era and protocol version an access record prints, "-"
// without a record.
func logEra(r map[string]string) string {
	if r == nil {
		return "-"
	}
	era, v := r["era"], r["protocol_version"]
	if era == "" {
		era = "none"
	}
	if v == "" {
		return era
	}
	return era + "/" + v
}

// TestEraDecision records, for method × _meta shape × MCP-Protocol-Version
// header × HTTP method (and over stdio, on a fresh and on an initialized
// connection), the status or JSON-RPC code and the era the access log
// prints: the inputs of issue 19's one era decision (step E1/E2). POSTs
// carry the Mcp-Method and Mcp-Name headers a modern client sends and,
// except initialize, the id of an open legacy session; GET and DELETE go
// with and without a session.
func TestEraDecision(t *testing.T) {
	log, srv, g, sid := newFactsEnv(t)
	id := 5000
	var lines []string
	for _, method := range eraMethods {
		for _, m := range eraMetas {
			for _, hv := range eraHeaders {
				id++
				h := hdr("Accept", acceptBoth, "Mcp-Method", method)
				switch method {
				case MethodToolsCall:
					h.Set("Mcp-Name", "open")
				case MethodTasksUpdate:
					h.Set("Mcp-Name", "no-such-task")
				}
				if method != MethodInitialize {
					h.Set("Mcp-Session-Id", sid)
				}
				for _, v := range hv.values {
					h.Add("MCP-Protocol-Version", v)
				}
				o := httpFact(t, g, log, id, method, eraBody(id, method, m.meta), h)
				lines = append(lines, fmt.Sprintf("%-16s %-20s meta=%-7s header=%-8s %s log=%s", "POST", method, m.label, hv.label, o.long(), logEra(log.record(strconv.Itoa(id)))))
			}
			for _, init := range []bool{false, true} {
				id++
				tr := "stdio"
				if init {
					tr = "stdio+initialize"
				}
				era := "modern" // stdioFact initializes a legacy connection first
				if init {
					era = "legacy"
				}
				o, _ := stdioFact(t, srv, log, id, method, era, eraBody(id, method, m.meta), false)
				lines = append(lines, fmt.Sprintf("%-16s %-20s meta=%-7s %s log=%s", tr, method, m.label, o.long(), logEra(log.record(strconv.Itoa(id)))))
			}
		}
	}
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		for _, withSession := range []bool{false, true} {
			for _, hv := range eraHeaders {
				id++
				h := hdr("Accept", "text/event-stream")
				session := "no-session"
				if withSession {
					session = "session"
					h.Set("Mcp-Session-Id", g.initSession(nil))
				}
				for _, v := range hv.values {
					h.Add("MCP-Protocol-Version", v)
				}
				lines = append(lines, fmt.Sprintf("%-16s %-20s header=%-8s %s", method, session, hv.label, bodylessFact(t, g, id, method, h)))
			}
		}
	}
	checkGolden(t, "era_decision.golden", lines)
}

// bodylessFact sends a GET or DELETE and records its status, the
// JSON-RPC code of an error body, and whether a stream opened (it is
// closed at once).
func bodylessFact(t *testing.T, g *goldenHTTPEnv, id int, method string, h http.Header) string {
	t.Helper()
	key := strconv.Itoa(id)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := g.send(ctx, key, method, nil, h)
	out := "status=" + strconv.Itoa(resp.StatusCode)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		out += " stream"
		cancel()
	} else if resp.Header.Get("Content-Type") == "application/json" {
		code, _ := rpcOutcome(readJSON(t, resp))
		out += " code=" + code
	}
	resp.Body.Close()
	g.served(t, key)
	return out
}
