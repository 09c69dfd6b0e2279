package redis

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestGoRedisLoggerWritesSlogRecords: a go-redis line becomes one warn
// record with the "redis: " prefix dropped and component=go-redis; a nil
// logger discards.
func TestGoRedisLoggerWritesSlogRecords(t *testing.T) {
	var buf bytes.Buffer
	l := NewGoRedisLogger(slog.New(slog.NewJSONHandler(&buf, nil)))
	l.Printf(context.Background(), "redis: connection pool: failed to dial after %d attempts: %v", 5, io.EOF)
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("not one JSON record: %q", buf.String())
	}
	if rec["level"] != "WARN" || rec["msg"] != "connection pool: failed to dial after 5 attempts: EOF" || rec["component"] != "go-redis" {
		t.Fatalf("record %v", rec)
	}
	NewGoRedisLogger(nil).Printf(context.Background(), "redis: %s", "dropped")
}

// TestServeRedisDownLogsOnlyRecords runs `pmcp serve --redis` with JSON
// logs, stops its Redis and waits for go-redis to report the failed
// dials: every line on stderr and stdout must be a JSON record, none of
// go-redis's own unformatted lines.
func TestServeRedisDownLogsOnlyRecords(t *testing.T) {
	if redisAddr == "" {
		t.Skip("no redis-server: " + noRedisWhy)
	}
	bin := buildPmcp(t)
	srv, err := startRedis(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.stop() })
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--http", "127.0.0.1:"+strconv.Itoa(port), "--redis", "redis://"+srv.addr,
		"--state-key", testStateKey, "--log-format", "json")
	cmd.Env = append(os.Environ(), "OTEL_SDK_DISABLED=true")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = cmd.Wait()
		close(lines)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	var seen []string
	check := func(line string) {
		seen = append(seen, line)
		if !strings.HasPrefix(line, "{") || !json.Valid([]byte(line)) {
			t.Fatalf("unformatted line on stderr: %q\nso far:\n%s", line, strings.Join(seen, "\n"))
		}
	}
	timeout := time.After(30 * time.Second)
	stopped := false
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("pmcp serve exited:\n%s", strings.Join(seen, "\n"))
			}
			check(line)
			if !stopped && strings.Contains(line, "serving MCP over Streamable HTTP") {
				stopped = true
				srv.stop()
			}
			if stopped && strings.Contains(line, "go-redis") && strings.Contains(line, "dial") {
				_ = cmd.Process.Kill()
				<-done
				for line := range lines {
					check(line)
				}
				if stdout.Len() > 0 {
					t.Fatalf("stdout: %q", stdout.String())
				}
				return
			}
		case <-timeout:
			t.Fatalf("no go-redis record within 30s:\n%s", strings.Join(seen, "\n"))
		}
	}
}
