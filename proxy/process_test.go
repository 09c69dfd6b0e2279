package proxy

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// syncBuffer is a log sink shared by the proxy's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// childProxy bridges to this test binary run as a child upstream server.
func childProxy(t *testing.T, maxRestarts int, logs *syncBuffer) *Proxy {
	log := slog.New(slog.NewTextHandler(logs, nil))
	dial, err := Command(os.Args[0], nil, CommandOptions{Env: []string{childEnv + "=1", noRaceExitSleep}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	return newProxy(t, Options{Upstreams: []Upstream{{Name: "child", Dial: dial}}, MaxRestarts: maxRestarts, Logger: log}, nil)
}

func childPID(t *testing.T, ctx context.Context, cs *pmcp.ClientSession) int {
	t.Helper()
	res, err := cs.CallTool(ctx, "pid", nil)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(resultText(t, res))
	if err != nil || pid == os.Getpid() {
		t.Fatalf("pid %q, %v", resultText(t, res), err)
	}
	return pid
}

// TestBridgeChildKilled: killing the child while a call is in flight
// gives the downstream a -32603 error naming the upstream and the signal;
// another downstream session gets a fresh child, and the same session a
// restarted one, within MaxRestarts, after which its requests fail
// without a new child. The child's stderr reaches the log.
func TestBridgeChildKilled(t *testing.T) {
	for _, down := range []string{"stream", "http"} {
		t.Run(down, func(t *testing.T) {
			logs := &syncBuffer{}
			p := childProxy(t, 1, logs)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			a := downstream(t, p, down, pmcp.ClientOptions{Era: pmcp.EraLegacy})
			pid1 := childPID(t, ctx, a)

			started := make(chan struct{}, 1)
			errc := make(chan error, 1)
			go func() {
				_, err := a.CallTool(ctx, "block", nil, pmcp.WithProgress(func(context.Context, *pmcp.ProgressParams) {
					started <- struct{}{}
				}))
				errc <- err
			}()
			select {
			case <-started:
			case <-ctx.Done():
				t.Fatal("block never started")
			}
			if err := syscall.Kill(pid1, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			err := <-errc
			var je *jsonrpc.Error
			if !asRPC(err, &je) || je.Code != jsonrpc.CodeInternalError || !strings.Contains(je.Message, `upstream "child" ended`) || !strings.Contains(je.Message, "killed") {
				t.Fatalf("error %v, want -32603 naming the upstream and the signal", err)
			}

			b := downstream(t, p, down, pmcp.ClientOptions{Era: pmcp.EraLegacy})
			if pid2 := childPID(t, ctx, b); pid2 == pid1 {
				t.Fatalf("second session got the dead child %d", pid2)
			}
			pid3 := childPID(t, ctx, a) // restart 1 of 1
			if pid3 == pid1 {
				t.Fatal("the session kept its dead child")
			}
			if err := syscall.Kill(pid3, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			waitGone(t, ctx, p, pid3)
			_, err = a.CallTool(ctx, "pid", nil)
			if !asRPC(err, &je) || !strings.Contains(je.Message, "giving up") {
				t.Fatalf("error %v after the restarts ran out, want giving up", err)
			}
			// The slot stays down: no new child for the next request.
			if _, err = a.CallTool(ctx, "pid", nil); !asRPC(err, &je) || !strings.Contains(je.Message, "giving up") {
				t.Fatalf("second request after the restarts ran out: %v, want giving up", err)
			}
			if !strings.Contains(logs.String(), "child started") {
				t.Fatalf("child stderr not in the log:\n%s", logs.String())
			}
		})
	}
}

// waitGone waits until the proxy's session with the child pid ended.
func waitGone(t *testing.T, ctx context.Context, p *Proxy, pid int) {
	t.Helper()
	for {
		if syscall.Kill(pid, 0) != nil {
			p.mu.Lock()
			var dead bool
			for _, sl := range p.slots {
				sl.mu.Lock()
				if sl.live != nil && sl.live.done() {
					dead = true
				}
				sl.mu.Unlock()
			}
			p.mu.Unlock()
			if dead {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatal("the child never went away")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func asRPC(err error, je **jsonrpc.Error) bool {
	if err == nil {
		return false
	}
	return errorsAs(err, je)
}

func newTextLogger(w *syncBuffer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// TestBridgeChildHugeLine: a child's answer longer than the stdio line cap
// fails its call at once with an error that says so (not after the call
// timeout), and the child stays usable; both upstream eras, both
// downstream eras and transports.
func TestBridgeChildHugeLine(t *testing.T) {
	for _, upEra := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
		for _, tc := range []struct {
			down string
			era  pmcp.Era
		}{{"stream", pmcp.EraModern}, {"http", pmcp.EraModern}, {"stream", pmcp.EraLegacy}, {"http", pmcp.EraLegacy}} {
			t.Run(upEra.String()+"-upstream/"+tc.era.String()+"-client/down-"+tc.down, func(t *testing.T) {
				dial, err := Command(os.Args[0], nil, CommandOptions{Env: []string{childEnv + "=1", noRaceExitSleep}})
				if err != nil {
					t.Fatal(err)
				}
				p := newProxy(t, Options{Upstreams: []Upstream{{Name: "child", Dial: dial}}, Client: pmcp.ClientOptions{Era: upEra}}, nil)
				cs := downstream(t, p, tc.down, pmcp.ClientOptions{Era: tc.era})
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				_, err = cs.CallTool(ctx, "huge", nil)
				var je *jsonrpc.Error
				if !asRPC(err, &je) || je.Code != jsonrpc.CodeInternalError || !strings.Contains(je.Message, `upstream "child"`) || !strings.Contains(je.Message, "exceeds the limit") {
					t.Fatalf("huge answer: %v, want -32603 naming the upstream and saying the line exceeds the limit", err)
				}
				if got := callText(t, ctx, cs, "echo"); got != "child: echo" {
					t.Fatalf("echo after: %q", got)
				}
			})
		}
	}
}
