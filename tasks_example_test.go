package pmcp_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/transport/memory"
)

// taskServer has one tool that may run as a task and asks the client a
// question before it finishes.
func taskServer() *pmcp.Server {
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "reports", Version: "1.0.0", Tasks: &pmcp.TaskOptions{}})
	if err != nil {
		log.Fatal(err)
	}
	tool := &pmcp.Tool{Name: "report", Description: "Builds a report after a confirmation.",
		Execution: &pmcp.ToolExecution{TaskSupport: pmcp.TaskSupportOptional}}
	err = pmcp.AddTool(srv, tool, func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ struct{}) (string, error) {
		res, err := extra.Peer.Elicit(ctx, &pmcp.ElicitParams{Message: "Build the report?"})
		if err != nil {
			return "", err
		}
		return "report " + res.Action + "ed", nil
	})
	if err != nil {
		log.Fatal(err)
	}
	return srv
}

// runTask calls report as a task from a client of the given era and prints
// the result. The client's elicitation handler answers the question the
// task asks, whichever way the era carries it.
func runTask(era pmcp.Era) {
	srv := taskServer()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	serverEnd, clientEnd := memory.NewPipe()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, serverEnd) }()
	c := pmcp.NewClient(pmcp.ClientOptions{Name: "example", Version: "1.0.0", Era: era,
		Elicitation: func(ctx context.Context, p *pmcp.ElicitParams) (*pmcp.ElicitResult, error) {
			return &pmcp.ElicitResult{Action: "accept"}, nil
		}})
	s, err := c.Connect(ctx, clientEnd)
	if err != nil {
		log.Fatal(err)
	}
	task, err := s.CallToolTask(ctx, "report", nil, time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	res, err := task.Wait(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.ProtocolVersion(), task.ID() != "", res.Content[0].(*pmcp.TextContent).Text)
	_ = s.Close()
	<-served
}

// A 2025-11-25 client asks for the task (params.task); the question reaches
// it through the blocking tasks/result, tagged with the task's id.
func ExampleClientSession_CallToolTask_legacy() {
	runTask(pmcp.EraLegacy)
	// Output: 2025-11-25 true report accepted
}

// A 2026-07-28 client uses the io.modelcontextprotocol/tasks extension; the
// question shows up as inputRequests on tasks/get and is answered with
// tasks/update.
func ExampleClientSession_CallToolTask_modern() {
	runTask(pmcp.EraModern)
	// Output: 2026-07-28 true report accepted
}
