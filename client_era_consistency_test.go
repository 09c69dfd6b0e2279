package pmcp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
	"github.com/gopmcp/pmcp/transport/stdio"
)

// TestClientCallErrorReadsTheSameInEveryEra checks one wrapping rule for a
// failed call: the same server answer reads the same whatever era and
// transport carried it, the *jsonrpc.Error stays reachable, and over
// modern HTTP the status stays inspectable as *HTTPStatusError.
func TestClientCallErrorReadsTheSameInEveryEra(t *testing.T) {
	var want string
	for _, tc := range transportCases {
		if tc.name == "memory" {
			continue
		}
		for _, era := range []pmcp.Era{pmcp.EraLegacy, pmcp.EraModern} {
			t.Run(tc.name+"/"+era.String(), func(t *testing.T) {
				s := tc.connect(t, pmcp.NewClient(pmcp.ClientOptions{Era: era}))
				_, err := s.CallTool(context.Background(), "no_such_tool", nil)
				if err == nil {
					t.Fatal("no error")
				}
				var re *jsonrpc.Error
				if !errors.As(err, &re) || re.Code != jsonrpc.CodeInvalidParams {
					t.Fatalf("errors.As *jsonrpc.Error: %v (%#v)", err, re)
				}
				var se *pmcp.HTTPStatusError
				if tc.name == "http" && era == pmcp.EraModern {
					if !errors.As(err, &se) || se.StatusCode != http.StatusBadRequest {
						t.Fatalf("errors.As *HTTPStatusError: %v", err)
					}
				}
				if want == "" {
					want = err.Error()
				} else if err.Error() != want {
					t.Fatalf("error text\n got %q\nwant %q", err.Error(), want)
				}
			})
		}
	}
}

// serveOn serves srv over stdio pipes or Streamable HTTP and connects c.
func serveOn(t *testing.T, transport string, srv *pmcp.Server, c *pmcp.Client) *pmcp.ClientSession {
	t.Helper()
	if transport == "http" {
		return connectHTTP(t, c, serveHTTPWith(t, srv))
	}
	toSrvR, toSrvW := io.Pipe()
	toCliR, toCliW := io.Pipe()
	return serveStreamPairWith(t, srv, c, stdio.NewStream(toSrvR, toCliW, stdio.Options{}), stdio.NewStream(toCliR, toSrvW, stdio.Options{}))
}

// TestClientLogLevelMeansTheSameInEveryEra checks the documented meaning
// of ClientOptions.LogLevel in both eras and over both transports: unset
// means DefaultLogLevel (info) for a client with a LogMessage handler,
// LevelOff means no records, and a set level is the minimum delivered.
func TestClientLogLevelMeansTheSameInEveryEra(t *testing.T) {
	for _, level := range []pmcp.LoggingLevel{pmcp.LevelUnset, pmcp.LevelOff, pmcp.LevelWarning} {
		want := map[pmcp.LoggingLevel]string{pmcp.LevelUnset: "info,error", pmcp.LevelOff: "", pmcp.LevelWarning: "error"}[level]
		for _, transport := range []string{"stdio", "http"} {
			for _, era := range []pmcp.Era{pmcp.EraLegacy, pmcp.EraModern} {
				t.Run(levelName(level)+"/"+transport+"/"+era.String(), func(t *testing.T) {
					srv, err := pmcp.NewServer(pmcp.ServerOptions{})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = srv.Close() })
					if err := pmcp.AddTool(srv, &pmcp.Tool{Name: "logs"}, func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ struct{}) (string, error) {
						for _, l := range []pmcp.LoggingLevel{pmcp.LevelDebug, pmcp.LevelInfo, pmcp.LevelError} {
							_ = extra.Log(l, l.String())
						}
						return "done", nil
					}); err != nil {
						t.Fatal(err)
					}
					var mu sync.Mutex
					var got []string
					s := serveOn(t, transport, srv, pmcp.NewClient(pmcp.ClientOptions{
						Era: era, LogLevel: level, SyncLogMessages: true,
						Notifications: pmcp.ClientNotificationHandlers{LogMessage: func(ctx context.Context, p *pmcp.LoggingMessageParams) {
							mu.Lock()
							defer mu.Unlock()
							got = append(got, p.Level.String())
						}},
					}))
					if _, err := s.CallTool(context.Background(), "logs", nil); err != nil {
						t.Fatal(err)
					}
					mu.Lock()
					defer mu.Unlock()
					if g := strings.Join(got, ","); g != want {
						t.Fatalf("records %q, want %q", g, want)
					}
				})
			}
		}
	}
}

func levelName(l pmcp.LoggingLevel) string {
	if l == pmcp.LevelUnset {
		return "unset"
	}
	return l.String()
}

// TestClientTaskStatusPushedInEveryEra checks that a client which created
// a task gets its status pushed to Notifications.TaskStatus in both eras
// and over both transports, without calling Listen or Wait.
func TestClientTaskStatusPushedInEveryEra(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		for _, era := range []pmcp.Era{pmcp.EraLegacy, pmcp.EraModern} {
			t.Run(transport+"/"+era.String(), func(t *testing.T) {
				statuses := make(chan *pmcp.DetailedTask, 64)
				s := serveOn(t, transport, newEverything(t), pmcp.NewClient(pmcp.ClientOptions{
					Era: era,
					Notifications: pmcp.ClientNotificationHandlers{TaskStatus: func(ctx context.Context, st *pmcp.DetailedTask) {
						statuses <- st
					}},
				}))
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				task, err := s.CallToolTask(ctx, "slow_compute", map[string]any{"seconds": 0.2, "label": "x"}, 0)
				if err != nil {
					t.Fatal(err)
				}
				if task.ID() == "" {
					t.Fatal("the server answered synchronously")
				}
				for {
					select {
					case st := <-statuses:
						if st.TaskID != task.ID() {
							t.Fatalf("status of task %q, created %q", st.TaskID, task.ID())
						}
						if st.Terminal() {
							if st.Status != "completed" {
								t.Fatalf("status %q", st.Status)
							}
							return
						}
					case <-ctx.Done():
						t.Fatal("no terminal status pushed")
					}
				}
			})
		}
	}
}
