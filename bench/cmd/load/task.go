package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// The task row of the feature-cost leg (-tool task): one operation is one
// completed task round on the server's echo_task tool,
//
//	2025-11-25: tools/call with params.task -> tasks/get until completed -> tasks/result
//	2026-07-28: tools/call (tasks extension) -> tasks/get until completed (carries the result)
//
// so a round is three HTTP requests in the legacy era and two in the
// modern one when the first tasks/get already sees the task completed
// (the normal case: the tool returns at once). Every response is decoded
// and checked: the task id, the status, and the echoed text in the result.
const (
	taskTool = "echo_task"
	// taskTTLms is the lifetime the legacy generator asks for (the bench
	// server caps every task at this, see servers/pmcp/features.go).
	taskTTLms = 2000
	// maxTaskGets bounds the tasks/get polls of one round: a task still
	// not completed after that many counts as an error.
	maxTaskGets = 1000
	taskText    = "hello"
	// modernTaskMeta is the per-request _meta of a 2026-07-28 client with
	// the tasks extension.
	modernTaskMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/clientInfo":{"name":"bench-load","version":"1.0.0"}}`
)

// taskRounder runs task rounds on one connection.
type taskRounder struct {
	hc         *httpConn
	host, path string
	modern     bool
	// hdr holds the headers every request carries (session and version
	// in the legacy era, authorization).
	hdr [][2]string
	// create is the prebuilt creating tools/call.
	create []byte
}

func newTaskRounder(hc *httpConn, host, path string, modern bool, hdr [][2]string) *taskRounder {
	t := &taskRounder{hc: hc, host: host, path: path, modern: modern, hdr: hdr}
	args := `"name":"` + taskTool + `","arguments":{"text":"` + taskText + `"}`
	if modern {
		h := append([][2]string{{"Mcp-Protocol-Version", "2026-07-28"}, {"Mcp-Method", "tools/call"}, {"Mcp-Name", taskTool}}, hdr...)
		t.create = buildRequest(host, path, h, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{`+args+`,`+modernTaskMeta+`}}`)
	} else {
		t.create = buildRequest(host, path, hdr, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{%s,"task":{"ttl":%d}}}`, args, taskTTLms))
	}
	return t
}

// taskMessage is the part of a response the rounds check.
type taskMessage struct {
	Result *struct {
		ResultType string `json:"resultType"`
		// The task (2025-11-25 tasks/get, 2026-07-28 create and get).
		TaskID string `json:"taskId"`
		Status string `json:"status"`
		// 2025-11-25 CreateTaskResult.
		Task *struct {
			TaskID string `json:"taskId"`
			Status string `json:"status"`
		} `json:"task"`
		// 2026-07-28 tasks/get of a completed task.
		Result *toolResult `json:"result"`
		// 2025-11-25 tasks/result: the tool result itself.
		toolResult
		Meta map[string]json.RawMessage `json:"_meta"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

// echoed reports whether r is the echo of taskText.
func (r *toolResult) echoed() error {
	if r == nil {
		return errors.New("no tool result")
	}
	if r.IsError || len(r.Content) != 1 || r.Content[0].Type != "text" || r.Content[0].Text != taskText {
		return fmt.Errorf("tool result is not the echo of %q", taskText)
	}
	return nil
}

// send posts req and decodes the JSON-RPC response (a JSON body, or the
// last message of an SSE body) into m.
func (t *taskRounder) send(req []byte, m *taskMessage) error {
	status, err := t.hc.do(req)
	if err != nil {
		return err
	}
	if status != 200 {
		return fmt.Errorf("HTTP %d: %.200s", status, t.hc.body)
	}
	body := t.hc.body
	if strings.HasPrefix(t.hc.ct, "text/event-stream") {
		i := bytes.LastIndex(body, []byte("data: {"))
		if i < 0 {
			return fmt.Errorf("SSE body without a message: %.200s", body)
		}
		body = body[i+6:]
	}
	*m = taskMessage{}
	if err := json.Unmarshal(body, m); err != nil {
		return fmt.Errorf("decode %.200s: %v", body, err)
	}
	if m.Error != nil {
		return fmt.Errorf("JSON-RPC error %d: %s", m.Error.Code, m.Error.Message)
	}
	if m.Result == nil {
		return fmt.Errorf("response without a result: %.200s", body)
	}
	return nil
}

// byID builds a tasks/* request for the task id.
func (t *taskRounder) byID(method, id string) []byte {
	if t.modern {
		h := append([][2]string{{"Mcp-Protocol-Version", "2026-07-28"}, {"Mcp-Method", method}, {"Mcp-Name", id}}, t.hdr...)
		return buildRequest(t.host, t.path, h, `{"jsonrpc":"2.0","id":2,"method":"`+method+`","params":{"taskId":"`+id+`",`+modernTaskMeta+`}}`)
	}
	return buildRequest(t.host, t.path, t.hdr, `{"jsonrpc":"2.0","id":2,"method":"`+method+`","params":{"taskId":"`+id+`"}}`)
}

// round runs one round and returns the number of tasks/get it took; any
// deviation (no task, a status other than working or completed, a result
// that is not the echo) is an error.
func (t *taskRounder) round() (gets int, err error) {
	var m taskMessage
	if err := t.send(t.create, &m); err != nil {
		return 0, fmt.Errorf("create: %w", err)
	}
	id, status := m.Result.TaskID, m.Result.Status
	if t.modern {
		if m.Result.ResultType != "task" {
			return 0, fmt.Errorf("create: resultType %q, want task", m.Result.ResultType)
		}
	} else {
		if m.Result.Task == nil {
			return 0, errors.New("create: no task in the result")
		}
		id, status = m.Result.Task.TaskID, m.Result.Task.Status
	}
	if id == "" || !validTaskID(id) {
		return 0, fmt.Errorf("create: bad task id %q", id)
	}
	if status != "working" && status != "completed" {
		return 0, fmt.Errorf("create: task status %q", status)
	}
	get := t.byID("tasks/get", id)
	for {
		if gets == maxTaskGets {
			return gets, fmt.Errorf("task %s not completed after %d tasks/get (status %q)", id, gets, status)
		}
		gets++
		if err := t.send(get, &m); err != nil {
			return gets, fmt.Errorf("tasks/get: %w", err)
		}
		if m.Result.TaskID != id {
			return gets, fmt.Errorf("tasks/get: task id %q, want %q", m.Result.TaskID, id)
		}
		status = m.Result.Status
		if status == "completed" {
			break
		}
		if status != "working" {
			return gets, fmt.Errorf("tasks/get: task status %q", status)
		}
	}
	if t.modern {
		// The completed task carries the tool result.
		if err := m.Result.Result.echoed(); err != nil {
			return gets, fmt.Errorf("tasks/get: %w", err)
		}
		return gets, nil
	}
	if err := t.send(t.byID("tasks/result", id), &m); err != nil {
		return gets, fmt.Errorf("tasks/result: %w", err)
	}
	if err := m.Result.toolResult.echoed(); err != nil {
		return gets, fmt.Errorf("tasks/result: %w", err)
	}
	var rel struct {
		TaskID string `json:"taskId"`
	}
	if err := json.Unmarshal(m.Result.Meta["io.modelcontextprotocol/related-task"], &rel); err != nil || rel.TaskID != id {
		return gets, fmt.Errorf("tasks/result: related task %q, want %q", rel.TaskID, id)
	}
	return gets, nil
}

// validTaskID accepts what may go into a JSON string and a header
// unescaped: the SDK's ids are base64url with an optional prefix.
func validTaskID(id string) bool {
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return len(id) <= 256
}
