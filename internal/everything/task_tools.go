package everything

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
)

type greetArgs struct {
	Name string `json:"name" jsonschema:"who to greet"`
}

type slowArgs struct {
	Seconds float64 `json:"seconds,omitempty" jsonschema:"how long to work, in seconds (at most 600)"`
	Label   string  `json:"label,omitempty" jsonschema:"a label echoed in the result"`
}

type confirmArgs struct {
	Filename string `json:"filename" jsonschema:"the file to delete"`
}

func taskTool(support string) *pmcp.ToolExecution {
	return &pmcp.ToolExecution{TaskSupport: support}
}

const confirmSchema = `{"type":"object","properties":{"confirm":{"type":"boolean"}},"required":["confirm"]}`

// taskTools are the fixtures of the tasks scenarios. The handlers are
// ordinary tool handlers: the server runs them as tasks as their
// registration allows and the client asks.
func (b *builder) taskTools() {
	b.check(pmcp.AddTool(b.s, &pmcp.Tool{Name: "greet", Description: "Greets someone, synchronously (never a task)."},
		func(ctx context.Context, _ *pmcp.RequestHandlerExtra, in greetArgs) (string, error) {
			return "Hello, " + in.Name + "!", nil
		}))
	b.check(pmcp.AddTool(b.s, &pmcp.Tool{Name: "slow_compute", Description: "Works for the given number of seconds; runs as a task when the client can take one.", Execution: taskTool(pmcp.TaskSupportOptional)},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, in slowArgs) (string, error) {
			d := time.Duration(min(max(in.Seconds, 0), 600) * float64(time.Second))
			if d > 0 {
				_ = extra.SetTaskStatusMessage(fmt.Sprintf("computing %q", in.Label))
				t := time.NewTimer(d)
				defer t.Stop()
				select {
				case <-ctx.Done():
					return "", ctx.Err()
				case <-t.C:
				}
			}
			return fmt.Sprintf("computed %q after %g seconds", in.Label, in.Seconds), nil
		}))
	b.check(pmcp.AddTool(b.s, &pmcp.Tool{Name: "failing_job", Description: "Runs only as a task and ends with a tool error (isError).", Execution: taskTool(pmcp.TaskSupportRequired)},
		func(ctx context.Context, _ *pmcp.RequestHandlerExtra, _ noArgs) (string, error) {
			return "", errors.New("the job failed on purpose")
		}))
	b.check(pmcp.AddTool(b.s, &pmcp.Tool{Name: "protocol_error_job", Description: "Runs as a task and ends with a protocol error (the task fails).", Execution: taskTool(pmcp.TaskSupportOptional)},
		func(ctx context.Context, _ *pmcp.RequestHandlerExtra, _ noArgs) (string, error) {
			return "", &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the job hit a protocol-level error on purpose"}
		}))
	b.check(pmcp.AddTool(b.s, &pmcp.Tool{Name: "confirm_delete", Description: "Asks the user to confirm a deletion, then reports the answer.", Execution: taskTool(pmcp.TaskSupportOptional)},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, in confirmArgs) (string, error) {
			res, err := extra.Peer.Elicit(ctx, &pmcp.ElicitParams{Message: fmt.Sprintf("Delete %s?", in.Filename), RequestedSchema: jsontext.Value(confirmSchema)})
			if err != nil {
				return "", err
			}
			if res.Action == "accept" {
				if ok, _ := res.Content["confirm"].(bool); ok {
					return "deleted " + in.Filename, nil
				}
			}
			return "kept " + in.Filename, nil
		}))
	b.check(pmcp.AddTool(b.s, &pmcp.Tool{Name: "multi_input", Description: "Asks two questions at once and reports both answers.", Execution: taskTool(pmcp.TaskSupportOptional)},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ noArgs) (string, error) {
			var wg sync.WaitGroup
			answers := make([]string, 2)
			errs := make([]error, 2)
			for i, q := range []string{"What is your name?", "Do you confirm?"} {
				wg.Go(func() {
					res, err := extra.Peer.Elicit(ctx, &pmcp.ElicitParams{Message: q, RequestedSchema: jsontext.Value(`{"type":"object","properties":{"name":{"type":"string"},"confirm":{"type":"boolean"}}}`)})
					if err != nil {
						errs[i] = err
						return
					}
					answers[i] = fmt.Sprintf("%s %v", res.Action, res.Content)
				})
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				return "", err
			}
			return "answers: " + strings.Join(answers, "; "), nil
		}))
	b.check(pmcp.AddTool(b.s, &pmcp.Tool{Name: "test_tool_with_task", Description: "Asks for a name (multi-round-trip, before any task), then continues as a task.", Execution: taskTool(pmcp.TaskSupportRequired)},
		func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ noArgs) (string, error) {
			name, ok := acceptedString(extra.InputResponses(), "user_name", "name")
			if !ok {
				if extra.Era() != pmcp.EraModern {
					res, err := extra.Peer.Elicit(ctx, &pmcp.ElicitParams{Message: "What is your name?", RequestedSchema: jsontext.Value(nameSchema)})
					if err != nil {
						return "", err
					}
					name, _ = res.Content["name"].(string)
				} else {
					return "", extra.RequireInput(map[string]*pmcp.InputRequest{"user_name": elicitReq("What is your name?", nameSchema)}, nil)
				}
			}
			return "Hello, " + name + "! (from a task)", nil
		}))
}

// skills serves one Agent Skill (SEP-2640 skills extension).
func (b *builder) skills() {
	b.check(b.s.AddSkill(&pmcp.Skill{
		Path:        "pdf-processing",
		Description: "Extract text from PDF files, fill in PDF forms and merge documents.",
		Body:        "# PDF processing\n\nRead references/FORMS.md before filling in a form.\n",
		Files: map[string]string{
			"references/FORMS.md": "# Filling in forms\n\nList the fields first, then fill them in one by one.\n",
		},
	}))
}
