package command

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/transport/stdio"
)

// readyLine is written to stdout by helpers that must finish their setup
// before the test acts (a valid JSON-RPC notification, so the stream can
// read it).
const readyLine = `{"jsonrpc":"2.0","method":"test/ready"}`

// helperCmd returns a command that re-executes the test binary as the
// helper of the given mode.
func helperCmd(mode string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	// A race-enabled child otherwise sleeps a second before exiting.
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, "GORACE=atexit_sleep_ms=0")
	return cmd
}

// runHelper is the child side: it runs one behaviour and returns the exit
// code.
func runHelper(mode string) int {
	switch mode {
	case "server", "stderr-flood":
		if mode == "stderr-flood" {
			chunk := strings.Repeat("x", 64<<10)
			for range 32 { // 2 MiB: far more than a pipe buffer
				fmt.Fprint(os.Stderr, chunk)
			}
		}
		fmt.Fprintln(os.Stderr, "helper: ready")
		return serveHelper()
	case "exit-early":
		fmt.Fprintln(os.Stderr, "helper: giving up")
		return 3
	case "ignore-stdin":
		fmt.Println(readyLine)
		time.Sleep(time.Minute) // stdin EOF is ignored; SIGTERM ends it
		return 0
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println(readyLine)
		time.Sleep(time.Minute) // only SIGKILL ends it
		return 0
	case "grandchild":
		// Leave a process behind that holds our stdout and stderr open.
		gc := helperCmd("sleep")
		gc.Stdout, gc.Stderr = os.Stdout, os.Stderr
		if err := gc.Start(); err != nil {
			return 1
		}
		return 0
	case "sleep":
		time.Sleep(time.Second)
		return 0
	case "group":
		// Leave a process behind, in our process group, that holds fd 3
		// (the test's pipe) until it dies; then ignore stdin's EOF.
		gc := helperCmd("hold")
		gc.ExtraFiles = []*os.File{os.NewFile(3, "hold")}
		if err := gc.Start(); err != nil {
			return 1
		}
		fmt.Println(readyLine)
		time.Sleep(time.Minute)
		return 0
	case "hold":
		time.Sleep(time.Minute)
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
	return 2
}

type addIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

type addOut struct {
	Sum int `json:"sum"`
}

// serveHelper serves a small pmcp server on stdio until stdin closes.
func serveHelper() int {
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "command-helper", Version: "1.0.0"})
	if err != nil {
		return 1
	}
	_ = pmcp.AddTool(srv, &pmcp.Tool{Name: "add"}, func(ctx context.Context, _ *pmcp.RequestHandlerExtra, in addIn) (addOut, error) {
		return addOut{Sum: in.A + in.B}, nil
	})
	_ = pmcp.AddTool(srv, &pmcp.Tool{Name: "crash"}, func(ctx context.Context, _ *pmcp.RequestHandlerExtra, _ struct{}) (string, error) {
		os.Exit(7)
		return "", nil
	})
	if err := srv.Serve(context.Background(), stdio.Stdio(stdio.Options{})); err != nil {
		fmt.Fprintln(os.Stderr, "helper: serve:", err)
		return 1
	}
	return 0
}
