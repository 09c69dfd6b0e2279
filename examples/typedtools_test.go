package examples_test

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// The typed-tools example (shown in the README's "Typed tools") lists the
// keywords of its struct tags in inputSchema, refuses arguments that break
// them with a tool error, and answers with a map as structuredContent
// under an object outputSchema, in both eras.
func TestTypedTools(t *testing.T) {
	cmd, in, out, stderr := start(t, build(t, "typedtools"))
	send(t, in, out, 1, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`)
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	line, err := out.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Result struct {
			Tools []struct {
				InputSchema  map[string]any `json:"inputSchema"`
				OutputSchema map[string]any `json:"outputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(line), &list); err != nil || len(list.Result.Tools) != 1 {
		t.Fatalf("tools/list: %s (%v)", line, err)
	}
	in0, _ := json.Marshal(list.Result.Tools[0].InputSchema["properties"])
	for _, want := range []string{`"minLength":2`, `"minimum":1`, `"maximum":16`, `"default":3`, `"enum":["metric","imperial"]`, `"description":"City, country"`} {
		if !strings.Contains(string(in0), want) {
			t.Errorf("inputSchema properties %s lack %s", in0, want)
		}
	}
	if list.Result.Tools[0].OutputSchema["type"] != "object" {
		t.Errorf("outputSchema %v, want an object schema", list.Result.Tools[0].OutputSchema)
	}
	for i, meta := range []string{"", "," + modernMeta} {
		id := 3 + 2*i
		r := send(t, in, out, id, `{"jsonrpc":"2.0","id":`+itoa(id)+`,"method":"tools/call","params":{"name":"forecast","arguments":{"city":"Oslo, Norway","days":2}`+meta+`}}`)
		if r.Result.IsError || r.Result.StructuredContent["city"] != "Oslo, Norway" || r.Result.StructuredContent["days"] != 2.0 {
			t.Fatalf("forecast: %+v", r.Result)
		}
		r = send(t, in, out, id+1, `{"jsonrpc":"2.0","id":`+itoa(id+1)+`,"method":"tools/call","params":{"name":"forecast","arguments":{"city":"Oslo","days":30}`+meta+`}}`)
		if !r.Result.IsError || len(r.Result.Content) == 0 || !strings.Contains(r.Result.Content[0].Text, `property "days"`) {
			t.Fatalf("forecast for 30 days: want a tool error about days, got %+v", r.Result)
		}
	}
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("typedtools at the end of stdin: %v (stderr %q)", err, stderr)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
