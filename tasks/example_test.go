package tasks_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/tasks"
)

// A task asks its client for input, receives a partial answer, resumes and
// completes; another principal cannot see it.
func Example() {
	ctx := context.Background()
	store, err := tasks.NewMemoryStore(tasks.Options{})
	if err != nil {
		panic(err)
	}
	defer store.Close()

	const owner, runner = "sub:alice", "replica-1"
	task, _ := store.Create(ctx, owner, tasks.Spec{Holder: runner})
	fmt.Println("created:", task.Status)

	task, _ = store.Update(ctx, owner, task.ID, tasks.Change{
		Holder: runner,
		To:     tasks.StatusInputRequired,
		InputRequests: map[string]jsontext.Value{
			"name":    jsontext.Value(`{"method":"elicitation/create","params":{"message":"Name?"}}`),
			"confirm": jsontext.Value(`{"method":"elicitation/create","params":{"message":"Sure?"}}`),
		},
	})
	fmt.Println("asked:", task.Status, len(task.InputRequests), "requests")

	// tasks/update with one of the two answers and an unknown key.
	d, _ := store.DeliverInputs(ctx, owner, task.ID, map[string]jsontext.Value{
		"name":  jsontext.Value(`{"action":"accept","content":{"name":"Alice"}}`),
		"bogus": jsontext.Value(`{}`),
	})
	fmt.Println("accepted:", d.Accepted, "still pending:", len(d.Task.InputRequests), d.Task.Status)

	d, _ = store.DeliverInputs(ctx, owner, task.ID, map[string]jsontext.Value{
		"confirm": jsontext.Value(`{"action":"accept","content":{"confirm":true}}`),
	})
	fmt.Println("all answered:", d.Task.Status)

	task, _ = store.Update(ctx, owner, task.ID, tasks.Change{
		Holder:        runner,
		ConsumeInputs: []string{"name", "confirm"},
		To:            tasks.StatusCompleted,
		Result:        jsontext.Value(`{"content":[{"type":"text","text":"Hello, Alice"}]}`),
	})
	fmt.Println("done:", task.Status, string(task.Result))

	_, err = store.Get(ctx, "sub:mallory", task.ID)
	fmt.Println("other owner:", errors.Is(err, tasks.ErrNotFound))

	_, err = store.Update(ctx, owner, task.ID, tasks.Change{To: tasks.StatusCancelled})
	fmt.Println("cancel after completion:", errors.Is(err, tasks.ErrTerminal))
	// Output:
	// created: working
	// asked: input_required 2 requests
	// accepted: [name] still pending: 1 input_required
	// all answered: working
	// done: completed {"content":[{"type":"text","text":"Hello, Alice"}]}
	// other owner: true
	// cancel after completion: true
}
