package pmcp_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
)

// TestClientCloseDeliversReceivedNotifications: the log records a server
// sends before its response have all been handed to the client's handler
// once Close and Wait return, in both eras, even when the handler is slower
// than the call (the CLI prints a call's log lines, then exits).
func TestClientCloseDeliversReceivedNotifications(t *testing.T) {
	const n = 20
	for _, era := range []pmcp.Era{pmcp.EraLegacy, pmcp.EraModern} {
		t.Run(era.String(), func(t *testing.T) {
			srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "logs", Version: "1"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = srv.Close() })
			if err := pmcp.AddTool(srv, &pmcp.Tool{Name: "chatty"}, func(ctx context.Context, extra *pmcp.RequestHandlerExtra, _ struct{}) (string, error) {
				for i := range n {
					if err := extra.Log(pmcp.LevelInfo, fmt.Sprint("line ", i)); err != nil {
						return "", err
					}
				}
				return "done", nil
			}); err != nil {
				t.Fatal(err)
			}
			st, wait := serveInMemory(srv)
			var got atomic.Int32
			c := pmcp.NewClient(pmcp.ClientOptions{Name: "t", Version: "1", Era: era, LogLevel: pmcp.LevelInfo,
				Notifications: pmcp.ClientNotificationHandlers{
					LogMessage: func(ctx context.Context, p *pmcp.LoggingMessageParams) {
						time.Sleep(2 * time.Millisecond) // a handler slower than the call
						got.Add(1)
					},
				}})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			s, err := c.Connect(ctx, st)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.CallTool(ctx, "chatty", nil); err != nil {
				t.Fatal(err)
			}
			_ = s.Close()
			_ = s.Wait()
			wait()
			if g := got.Load(); g != n {
				t.Fatalf("%d of the %d log records received before the response reached the handler by Close and Wait", g, n)
			}
		})
	}
}
