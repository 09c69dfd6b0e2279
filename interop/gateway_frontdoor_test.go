package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// gatewayAudience is the front door's canonical URI in the gateway tests:
// what tokens are minted for (not the loopback address it listens on).
const gatewayAudience = "https://gateway.example/mcp"

// TestGatewayFrontDoorZitadel is issue 22's acceptance of the front door
// with a real authorization server: `pmcp gateway --auth-issuer` trusts a
// zitadel/oidc provider (client credentials, JWT access tokens with
// "scope"), serves the go-sdk peer as the `url` upstream "gs", and its
// policies and rate limits match the tokens' claims and scopes. alice
// (scope mcp:tools) may call gs_add, limited to two calls; bob (scope
// admin) may call everything but gs_region. In both eras: each lists only
// his tools, a hidden tool answers exactly as an unknown one, alice's third
// call is refused with -32029 and data.retryAfterMs (modern plain JSON:
// 429 with Retry-After), and the audit file has a line per call with the
// token's subject and client id, the decision and the error code, and no
// token.
func TestGatewayFrontDoorZitadel(t *testing.T) {
	bin := pmcpBinary(t)
	up := goSDKStatefulHTTP(t)
	issuer, tokenURL := startCCProvider(t,
		&ccClient{id: "alice", secret: "alice-secret", audience: gatewayAudience, scopes: []string{"mcp:tools"}},
		&ccClient{id: "bob", secret: "bob-secret", audience: gatewayAudience, scopes: []string{"mcp:tools", "admin"}},
	)
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	config := writeJSONFile(t, "gateway.json", map[string]any{
		"mcpServers": map[string]any{"gs": map[string]any{"url": up}},
		"policies": []any{
			map[string]any{"match": map[string]any{"claims": map[string]any{"sub": "alice"}}, "allowTools": []string{"gs_add"}},
			map[string]any{"match": map[string]any{"scopes": []string{"admin"}}, "allowTools": []string{"*"}, "denyTools": []string{"gs_region"}, "allowPrompts": []string{"*"}},
		},
		"rateLimits": []any{
			map[string]any{"match": map[string]any{"claims": map[string]any{"sub": "alice"}}, "tools": []string{"gs_add"}, "perSecond": 0.001, "burst": 2},
		},
		"audit": map[string]any{"file": auditPath},
	})
	u, logs, stop, err := startHTTPStoppable(t, bin, "gateway", "--listen", "127.0.0.1:0", "--config", config,
		"--auth-issuer", issuer, "--auth-audience", gatewayAudience)
	if err != nil {
		t.Fatal(err)
	}
	alice := ccToken(t, tokenURL, "alice", "mcp:tools")
	bob := ccToken(t, tokenURL, "bob", "mcp:tools admin")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	connect := func(t *testing.T, era pmcp.Era, tok string) *pmcp.ClientSession {
		t.Helper()
		s, err := pmcp.NewClient(pmcp.ClientOptions{Name: "gateway-front-door", Era: era}).ConnectHTTP(ctx, u, pmcp.HTTPClientOptions{
			Header: http.Header{"Authorization": {"Bearer " + tok}}, NoStandaloneStream: true,
		})
		if err != nil {
			t.Fatalf("%v: %v%s", era, err, logs)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	add := map[string]any{"a": 2, "b": 40}

	// Without a token: 401 (the front door), whatever the era.
	if _, err := pmcp.NewClient(pmcp.ClientOptions{Name: "anonymous"}).ConnectHTTP(ctx, u, pmcp.HTTPClientOptions{NoStandaloneStream: true}); err == nil {
		t.Fatal("connected without a token")
	}

	for i, era := range []pmcp.Era{pmcp.EraLegacy, pmcp.EraModern} {
		t.Run(fmt.Sprint(era), func(t *testing.T) {
			a, b := connect(t, era, alice), connect(t, era, bob)
			if got := listedTools(t, ctx, a); !slices.Equal(got, []string{"gs_add"}) {
				t.Errorf("alice lists %v, want [gs_add]", got)
			}
			if got := listedTools(t, ctx, b); !slices.Equal(got, []string{"gs_add", "gs_slow_progress"}) {
				t.Errorf("bob lists %v, want [gs_add gs_slow_progress]", got)
			}
			if p, err := a.ListPrompts(ctx, ""); err != nil || len(p.Prompts) != 0 {
				t.Errorf("alice's prompts: %+v %v", p, err)
			}
			if p, err := b.ListPrompts(ctx, ""); err != nil || len(p.Prompts) != 1 || p.Prompts[0].Name != "gs_greet" {
				t.Errorf("bob's prompts: %+v %v", p, err)
			}
			sameAsUnknown(t, ctx, a, "gs_slow_progress")
			sameAsUnknown(t, ctx, b, "gs_region")

			// bob is not limited; alice has two calls of gs_add in all:
			// one in each era, then refusals.
			for range 3 {
				if res, err := b.CallTool(ctx, "gs_add", add); err != nil || res.Content[0].(*pmcp.TextContent).Text != "42" {
					t.Fatalf("bob's gs_add: %+v %v", res, err)
				}
			}
			if res, err := a.CallTool(ctx, "gs_add", add); err != nil || res.Content[0].(*pmcp.TextContent).Text != "42" {
				t.Fatalf("alice's call %d of gs_add: %+v %v", i+1, res, err)
			}
			if i == 1 {
				_, err := a.CallTool(ctx, "gs_add", add)
				var je *jsonrpc.Error
				var data struct {
					RetryAfterMs int64 `json:"retryAfterMs"`
				}
				if !errors.As(err, &je) || je.Code != jsonrpc.CodeRateLimited || json.Unmarshal(je.Data, &data) != nil || data.RetryAfterMs < 900_000 {
					t.Fatalf("alice's third call: %v, want %d with data.retryAfterMs about 1000 s", err, jsonrpc.CodeRateLimited)
				}
			}
		})
	}
	// Modern, raw as an SDK-less client sends it: 429 and Retry-After.
	rawRateLimited(t, ctx, u, alice)

	stop() // the audit log is flushed and closed
	lines := readAudit(t, auditPath)
	for _, tok := range []string{alice, bob} {
		if sig := tok[strings.LastIndex(tok, ".")+1:]; bytes.Contains(lines.raw, []byte(sig)) || strings.Contains(logs.String(), sig) {
			t.Fatal("a token reached the audit file or the log")
		}
	}
	want := []struct {
		subject, target, decision string
		code                      int
		n                         int // at least
	}{
		{"alice", "gs_add", "allowed", 0, 2},
		{"alice", "gs_add", "rate_limited", jsonrpc.CodeRateLimited, 2},
		{"alice", "gs_slow_progress", "denied", jsonrpc.CodeInvalidParams, 2},
		{"bob", "gs_add", "allowed", 0, 6},
		{"bob", "gs_region", "denied", jsonrpc.CodeInvalidParams, 2},
	}
	for _, w := range want {
		n := 0
		for _, l := range lines.records {
			if l.Method == "tools/call" && l.Subject == w.subject && l.Target == w.target && l.Decision == w.decision && l.Code == w.code {
				n++
				if l.ClientID != w.subject {
					t.Errorf("audit line %+v: clientId %q, want the token's client_id %q", l, l.ClientID, w.subject)
				}
				if w.decision == "allowed" && (l.Upstream != "gs" || l.Outcome != "ok") {
					t.Errorf("audit line %+v: want upstream gs, outcome ok", l)
				}
			}
		}
		if n < w.n {
			t.Errorf("audit: %d tools/call lines of %s for %s decided %s (code %d), want at least %d:\n%s", n, w.subject, w.target, w.decision, w.code, w.n, lines.raw)
		}
	}
}

// listedTools is every tool name a session lists.
func listedTools(t *testing.T, ctx context.Context, s *pmcp.ClientSession) []string {
	t.Helper()
	tools, err := s.AllTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	return names
}

// sameAsUnknown checks that calling hidden answers as calling a tool no
// upstream has does, once the names are swapped: code, message and data.
func sameAsUnknown(t *testing.T, ctx context.Context, s *pmcp.ClientSession, hidden string) {
	t.Helper()
	const unknown = "gs_no_such_tool"
	_, herr := s.CallTool(ctx, hidden, map[string]any{})
	_, uerr := s.CallTool(ctx, unknown, map[string]any{})
	var h, u *jsonrpc.Error
	if !errors.As(herr, &h) || !errors.As(uerr, &u) {
		t.Fatalf("hidden %s: %v; unknown: %v", hidden, herr, uerr)
	}
	swap := func(s string) string { return strings.ReplaceAll(s, hidden, unknown) }
	if h.Code != u.Code || swap(h.Message) != u.Message || swap(string(h.Data)) != string(u.Data) {
		t.Errorf("hidden %s answers %d %q %s; unknown %d %q %s", hidden, h.Code, h.Message, h.Data, u.Code, u.Message, u.Data)
	}
}

// rawRateLimited sends a modern tools/call of gs_add as plain JSON with
// tok (whose bucket is spent) and wants 429, Retry-After and the JSON-RPC
// refusal with retryAfterMs.
func rawRateLimited(t *testing.T, ctx context.Context, u, tok string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"gs_add","arguments":{"a":1,"b":2},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "gs_add", "Authorization": "Bearer " + tok} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" ||
		!bytes.Contains(b, []byte(`"code":-32029`)) || !bytes.Contains(b, []byte(`"retryAfterMs":`)) || !bytes.Contains(b, []byte(`"id":7`)) {
		t.Fatalf("raw modern call over the limit: %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
}

// auditLines is an audit file: its bytes and its records.
type auditLines struct {
	raw     []byte
	records []auditLine
}

type auditLine struct {
	Subject  string `json:"subject"`
	ClientID string `json:"clientId"`
	Method   string `json:"method"`
	Target   string `json:"target"`
	Upstream string `json:"upstream"`
	Decision string `json:"decision"`
	Outcome  string `json:"outcome"`
	Code     int    `json:"code"`
}

// readAudit reads the audit file at path; every line must be JSON.
func readAudit(t *testing.T, path string) auditLines {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := auditLines{raw: raw}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		var l auditLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		out.records = append(out.records, l)
	}
	return out
}
