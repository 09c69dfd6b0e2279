package pmcp

import (
	"context"
	"sync/atomic"
	"testing"
)

// A server may raise or lift the progress rate limit: with ProgressBurst
// 16 a tool's 16 back-to-back updates all arrive (the default burst of 10
// drops 5 of them), and a negative ProgressRate and ProgressBurst lift the
// limit entirely.
func TestProgressLimitOptions(t *testing.T) {
	for _, tc := range []struct {
		name        string
		rate, burst int
		send, want  int64
	}{
		{"default", 0, 0, 16, defaultProgressBurst + 1}, // the burst, then the final update
		{"burst16", 0, 16, 16, 16},
		{"unlimited", -1, -1, 200, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewServer(ServerOptions{ProgressRate: tc.rate, ProgressBurst: tc.burst})
			if err != nil {
				t.Fatal(err)
			}
			if err := AddTool(s, &Tool{Name: "p"}, func(ctx context.Context, e *RequestHandlerExtra, _ struct{}) (string, error) {
				for i := int64(1); i <= tc.send; i++ {
					if err := e.ProgressReporter.ReportProgress(ctx, Progress{Progress: float64(i), Total: float64(tc.send)}); err != nil {
						return "", err
					}
				}
				return "ok", nil
			}); err != nil {
				t.Fatal(err)
			}
			cs := connectOver(t, TransportMemory, s, NewClient(ClientOptions{}))
			var got atomic.Int64
			final := make(chan struct{})
			onProgress := func(_ context.Context, p *ProgressParams) {
				got.Add(1)
				if p.Progress == float64(tc.send) {
					close(final) // always sent, and the last one
				}
			}
			if _, err := cs.CallTool(context.Background(), "p", nil, WithProgress(onProgress)); err != nil {
				t.Fatal(err)
			}
			// The handlers run in order: once the final update was seen,
			// every earlier one that was sent was too.
			<-final
			if got.Load() != tc.want {
				t.Fatalf("received %d progress notifications, want %d", got.Load(), tc.want)
			}
		})
	}
}
