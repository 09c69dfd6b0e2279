package pmcp

import (
	"context"
	"maps"
	"testing"
)

// TestAppToolAsTask: an app tool with task support runs as a task in both
// eras; its listing keeps both _meta.ui and execution, and the task's
// result keeps the text content for the model and the structuredContent
// for the view, as the handler (which sees the host's Apps support from
// the request that created the task) returned them.
func TestAppToolAsTask(t *testing.T) {
	srv, err := NewServer(ServerOptions{Name: "apps", Version: "1", Tasks: &TaskOptions{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	if err := srv.AddAppResource(&Resource{URI: "ui://apps/view", Name: "view"}, nil, []byte(appHTML)); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	tool := &Tool{Name: "chart", InputSchema: []byte(`{"type":"object"}`),
		Execution: &ToolExecution{TaskSupport: TaskSupportOptional},
		Meta:      Meta{"ui": &AppUI{ResourceURI: "ui://apps/view"}}}
	if err := srv.AddRawTool(tool, func(ctx context.Context, extra *RequestHandlerExtra, _ *CallToolParams) (*CallToolResult, error) {
		if extra.TaskID() == "" {
			return &CallToolResult{Content: []Content{Text("not a task")}}, nil
		}
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		text := "42 points, text only"
		if AppsSupported(extra.ClientCapabilities()) {
			text = "42 points, drawn in the view"
		}
		return &CallToolResult{Content: []Content{Text(text)}, StructuredContent: map[string]any{"points": 42}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	caps := maps.Clone(appClientCaps["extensions"].(map[string]any))
	caps[ExtensionTasks] = map[string]any{}
	bothCaps := map[string]any{"extensions": caps}

	for _, era := range []string{"legacy", "modern"} {
		t.Run(era, func(t *testing.T) {
			c := startServer(t, srv, nil)
			var id string
			if era == "legacy" {
				c.initialize(bothCaps)
				list := c.mustCall(MethodToolsList, map[string]any{})
				if got := getPath(list, "tools", 0, "execution", "taskSupport"); got != TaskSupportOptional {
					t.Errorf("listed execution %v", got)
				}
				if got := getPath(list, "tools", 0, "_meta", "ui", "resourceUri"); got != "ui://apps/view" {
					t.Errorf("listed _meta.ui.resourceUri %v", got)
				}
				res := c.mustCall(MethodToolsCall, map[string]any{"name": "chart", "arguments": map[string]any{}, "task": map[string]any{}})
				id, _ = getPath(res, "task", "taskId").(string)
			} else {
				res := c.mustCall(MethodToolsCall, modern(map[string]any{"name": "chart", "arguments": map[string]any{}}, bothCaps, nil))
				if res["resultType"] != "task" {
					t.Fatalf("want a task, got %v", res)
				}
				id, _ = res["taskId"].(string)
			}
			if id == "" {
				t.Fatal("no task id")
			}
			release <- struct{}{}
			st := waitStatus(t, c, id, "completed", era == "modern")
			var res map[string]any
			if era == "legacy" {
				res = c.mustCall(MethodTasksResult, map[string]any{"taskId": id})
			} else {
				res, _ = st["result"].(map[string]any)
			}
			if got := getPath(res, "content", 0, "text"); got != "42 points, drawn in the view" {
				t.Errorf("task result text %v (%v)", got, res)
			}
			if got := getPath(res, "structuredContent", "points"); got != float64(42) {
				t.Errorf("task result structuredContent %v", res["structuredContent"])
			}
		})
	}
}
