// Command tasksdemo shows a tool that runs as a task in both protocol eras: the
// server decides per registration (TaskSupport), the client asks with
// CallToolTask and waits with one API. The handler is an ordinary tool
// handler; inside the task its Elicit reaches the client's handler through
// tasks/update (2026-07-28) or the blocking tasks/result (2025-11-25).
// Server and client run in this process, connected by an in-memory pipe,
// once per era.
package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/transport/memory"
)

// example:server begin
func newServer() (*pmcp.Server, error) {
	// Tasks on, with the default in-memory store; Close stops the runners.
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "reports", Version: "1.0.0", Tasks: &pmcp.TaskOptions{}})
	if err != nil {
		return nil, err
	}
	tool := &pmcp.Tool{Name: "report", Description: "Builds a report after a confirmation.",
		Execution: &pmcp.ToolExecution{TaskSupport: pmcp.TaskSupportOptional}}
	err = pmcp.AddTool(srv, tool, func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ struct{}) (string, error) {
		res, err := extra.Peer.Elicit(ctx, &pmcp.ElicitParams{Message: "Build the report?"})
		if err != nil {
			return "", err
		}
		if res.Action != "accept" {
			return "report skipped", nil
		}
		_ = extra.SetTaskStatusMessage("building")
		select {
		case <-ctx.Done(): // tasks/cancel
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		return "report ready", nil
	})
	return srv, err
}

// example:server end

// example:client begin
func report(ctx context.Context, s *pmcp.ClientSession) error {
	task, err := s.CallToolTask(ctx, "report", nil, time.Minute)
	if err != nil {
		return err
	}
	res, err := task.Wait(ctx, func(st *pmcp.DetailedTask) {
		fmt.Printf("%s task: %s\n", s.Era(), st.Status)
	})
	if err != nil {
		return err
	}
	fmt.Printf("%s result: %s\n", s.Era(), res.Content[0].(*pmcp.TextContent).Text)
	return nil
}

// example:client end

func main() {
	srv, err := newServer()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	opts := pmcp.ClientOptions{
		Name: "tasks-example", Version: "1.0.0",
		Elicitation: func(ctx context.Context, p *pmcp.ElicitParams) (*pmcp.ElicitResult, error) {
			return &pmcp.ElicitResult{Action: "accept"}, nil
		},
	}
	for _, era := range []pmcp.Era{pmcp.EraLegacy, pmcp.EraModern} {
		opts.Era = era
		if err := runOnce(srv, opts); err != nil {
			log.Fatal(err)
		}
	}
}

// runOnce serves srv on one end of an in-memory pipe and runs report from
// a client on the other end.
func runOnce(srv *pmcp.Server, opts pmcp.ClientOptions) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	serverEnd, clientEnd := memory.NewPipe()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, serverEnd) }()
	s, err := pmcp.NewClient(opts).Connect(ctx, clientEnd)
	if err != nil {
		return err
	}
	err = report(ctx, s)
	_ = s.Close()
	if serr := <-served; err == nil {
		err = serr
	}
	return err
}
