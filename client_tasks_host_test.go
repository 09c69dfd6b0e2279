package pmcp

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// TestClientHostedTasks: a 2025-11-25 server asks the client for an
// elicitation as a task, polls it and fetches the answer; the client
// declared the capability and answers tasks/* about its own tasks.
func TestClientHostedTasks(t *testing.T) {
	f, st := startFake(t, legacyHandler(Version20251125, nil))
	release := make(chan struct{})
	c := NewClient(ClientOptions{Era: EraLegacy, HostTasks: true,
		Elicitation: func(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		}})
	connectClient(t, c, st)
	var ip initializeParams
	if err := Unmarshal(f.requests(MethodInitialize)[0].Params, &ip); err != nil {
		t.Fatal(err)
	}
	var tc map[string]map[string]any
	if err := Unmarshal(ip.Capabilities.Tasks, &tc); err != nil || tc["list"] == nil || tc["cancel"] == nil ||
		tc["requests"]["elicitation"] == nil || tc["requests"]["sampling"] != nil {
		t.Fatalf("declared tasks capability %s (%v)", ip.Capabilities.Tasks, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	call := func(method string, params any) (jsontext.Value, error) { return f.conn.Call(ctx, method, params) }
	raw, err := call(MethodElicitationCreate, map[string]any{"message": "name?", "requestedSchema": map[string]any{"type": "object", "properties": map[string]any{}}, "task": map[string]any{"ttl": 60000}})
	if err != nil {
		t.Fatal(err)
	}
	var created CreateTaskResult
	if err := Unmarshal(raw, &created); err != nil || created.Task.TaskID == "" || created.Task.Status != "working" || created.Task.TTL == nil || *created.Task.TTL != 60000 {
		t.Fatalf("CreateTaskResult %s %v", raw, err)
	}
	id := created.Task.TaskID
	if raw, err = call(MethodTasksGet, map[string]any{"taskId": id}); err != nil {
		t.Fatal(err)
	}
	close(release)
	if raw, err = call(MethodTasksResult, map[string]any{"taskId": id}); err != nil {
		t.Fatal(err)
	}
	var res struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
		Meta    map[string]any `json:"_meta"`
	}
	if err := Unmarshal(raw, &res); err != nil || res.Action != "accept" || res.Content["name"] != "Ada" || res.Meta[MetaRelatedTask] == nil {
		t.Fatalf("tasks/result %s %v", raw, err)
	}
	var re *jsonrpc.Error
	if _, err := call(MethodTasksCancel, map[string]any{"taskId": id}); !errors.As(err, &re) || re.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("cancel of a completed task: %v", err)
	}
	if _, err := call(MethodTasksGet, map[string]any{"taskId": "nope"}); !errors.As(err, &re) || re.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("unknown task: %v", err)
	}
	if raw, err = call(MethodTasksList, map[string]any{}); err != nil || !jsontext.Value(raw).IsValid() {
		t.Fatalf("tasks/list %s %v", raw, err)
	}
}
