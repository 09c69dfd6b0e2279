package pmcp

import (
	"github.com/go-json-experiment/json/jsontext"
)

// Task methods and notifications. tasks/result and tasks/list exist in the
// 2025-11-25 era only, tasks/update and notifications/tasks in the
// 2026-07-28 tasks extension only.
const (
	MethodTasksGet    = "tasks/get"
	MethodTasksResult = "tasks/result"
	MethodTasksList   = "tasks/list"
	MethodTasksCancel = "tasks/cancel"
	MethodTasksUpdate = "tasks/update"

	NotificationTasksStatus = "notifications/tasks/status"
	NotificationTasks       = "notifications/tasks"

	// ExtensionTasks is the 2026-07-28 tasks extension identifier, declared
	// under capabilities.extensions by both sides.
	ExtensionTasks = "io.modelcontextprotocol/tasks"
)

// Task support of a tool (Tool.Execution.TaskSupport).
const (
	// TaskSupportForbidden (or empty): the tool always runs synchronously.
	TaskSupportForbidden = "forbidden"
	// TaskSupportOptional: the tool runs as a task when the client can
	// take one (2026-07-28: the request declares the tasks extension;
	// 2025-11-25: the client asks with params.task), else synchronously.
	TaskSupportOptional = "optional"
	// TaskSupportRequired: the tool only runs as a task. A 2026-07-28
	// client without the extension gets -32021; a 2025-11-25 call without
	// params.task gets -32601.
	TaskSupportRequired = "required"
)

// Task is a task as the 2025-11-25 era shows it (tasks/get, tasks/cancel,
// tasks/list, notifications/tasks/status, and inside CreateTaskResult).
// TTL and PollInterval are milliseconds; a nil TTL means unlimited.
type Task struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           *int64 `json:"ttl"`
	PollInterval  *int64 `json:"pollInterval,omitempty"`
}

// TaskResult is a Task as a result (tasks/get and tasks/cancel, 2025-11-25).
type TaskResult struct {
	ResultFields
	Task
}

// CreateTaskResult answers a task-augmented tools/call in the 2025-11-25 era.
type CreateTaskResult struct {
	ResultFields
	Task Task `json:"task"`
}

// ListTasksResult answers tasks/list (2025-11-25).
type ListTasksResult struct {
	ResultFields
	Tasks      []Task `json:"tasks"`
	NextCursor string `json:"nextCursor,omitempty"`
}

// TaskError is the error a failed task ended with.
type TaskError struct {
	Code    int64          `json:"code"`
	Message string         `json:"message"`
	Data    jsontext.Value `json:"data,omitempty"`
}

// DetailedTask is a task as the 2026-07-28 tasks extension shows it: flat
// in the CreateTaskResult of tools/call (resultType "task"), in the
// tasks/get result (resultType "complete") and in notifications/tasks.
// TTLMs nil means unlimited (null on the wire). InputRequests is set while
// the task is input_required, Result once completed, Error once failed.
//
// It is also the client's snapshot of a task in both eras (ClientTask.Get,
// ClientTask.Wait, ClientNotificationHandlers.TaskStatus): a 2025-11-25
// task's ttl and pollInterval land in TTLMs and PollIntervalMs (nil when
// absent or not positive), its other members in the fields of the same
// name; ResultFields stay empty there.
type DetailedTask struct {
	ResultFields
	TaskID         string                    `json:"taskId"`
	Status         string                    `json:"status"`
	StatusMessage  string                    `json:"statusMessage,omitempty"`
	CreatedAt      string                    `json:"createdAt"`
	LastUpdatedAt  string                    `json:"lastUpdatedAt"`
	TTLMs          *int64                    `json:"ttlMs"`
	PollIntervalMs *int64                    `json:"pollIntervalMs,omitempty"`
	InputRequests  map[string]jsontext.Value `json:"inputRequests,omitempty"`
	Result         jsontext.Value            `json:"result,omitempty"`
	Error          *TaskError                `json:"error,omitempty"`
}

// Terminal reports whether the status is completed, failed or cancelled.
func (t *DetailedTask) Terminal() bool {
	return t.Status == "completed" || t.Status == "failed" || t.Status == "cancelled"
}

// taskIDParams are the params of tasks/get, tasks/result and tasks/cancel.
type taskIDParams struct {
	TaskID string         `json:"taskId"`
	Meta   jsontext.Value `json:"_meta,omitempty"`
}

// updateTaskParams are the params of tasks/update (2026-07-28): answers to
// some or all of the task's inputRequests, keyed as the server keyed them.
type updateTaskParams struct {
	TaskID         string                    `json:"taskId"`
	InputResponses map[string]jsontext.Value `json:"inputResponses"`
	Meta           jsontext.Value            `json:"_meta,omitempty"`
}

// TaskMetadata is the params.task member of a 2025-11-25 task-augmented
// request: the requested TTL in milliseconds.
type TaskMetadata struct {
	TTL *int64 `json:"ttl,omitempty"`
}

// RelatedTask is the value of the io.modelcontextprotocol/related-task _meta
// key (2025-11-25).
type RelatedTask struct {
	TaskID string `json:"taskId"`
}
