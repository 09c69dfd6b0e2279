package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The line format is pinned byte for byte: operators parse these files.
func TestAuditLineFormat(t *testing.T) {
	at := time.Date(2026, 12, 2, 3, 4, 5, 123456789, time.FixedZone("CET", 3600))
	for _, tc := range []struct {
		name string
		rec  AuditRecord
		want string
	}{
		{"minimal", AuditRecord{Time: at, Method: "tools/list", Decision: DecisionAllowed, Outcome: "ok"},
			`{"time":"2026-12-02T02:04:05.123456789Z","method":"tools/list","decision":"allowed","outcome":"ok","durationMs":0}`},
		{"full", AuditRecord{
			Time: at, Subject: "alice", ClientID: "cli-1", Method: "tools/call", Target: "ts_add", Upstream: "ts",
			Decision: DecisionRateLimited, Outcome: "error", Code: -32029, Duration: 12345678 * time.Nanosecond,
			Arguments: map[string]any{"b": 2, "a": map[string]any{"z": true, "y": nil}, "token": "[REDACTED]"},
		}, `{"time":"2026-12-02T02:04:05.123456789Z","subject":"alice","clientId":"cli-1","method":"tools/call","target":"ts_add","upstream":"ts","decision":"rate_limited","outcome":"error","code":-32029,"durationMs":12.345,"arguments":{"a":{"y":null,"z":true},"b":2,"token":"[REDACTED]"}}`},
		{"durations", AuditRecord{Time: at.Truncate(time.Second), Method: "m", Decision: "denied", Outcome: "error", Duration: 2*time.Millisecond + 50*time.Microsecond},
			`{"time":"2026-12-02T02:04:05Z","method":"m","decision":"denied","outcome":"error","durationMs":2.05}`},
		{"escaping", AuditRecord{Time: at, Subject: "a\"b\\c\n\x00<&>\u2028", Method: "x\xffy", Decision: "allowed", Outcome: "ok", Duration: -time.Second},
			`{"time":"2026-12-02T02:04:05.123456789Z","subject":"a\"b\\c\n\u0000<&>` + "\u2028" + `","method":"x` + "\ufffd" + `y","decision":"allowed","outcome":"ok","durationMs":0}`},
		{"unencodable arguments", AuditRecord{Time: at, Method: "m", Decision: "allowed", Outcome: "ok", Duration: 7 * time.Millisecond, Arguments: map[string]any{"x": math.NaN()}},
			`{"time":"2026-12-02T02:04:05.123456789Z","method":"m","decision":"allowed","outcome":"ok","durationMs":7,"argumentsError":`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(appendAuditLine(nil, &tc.rec))
			if !strings.HasSuffix(got, "}\n") || strings.Count(got, "\n") != 1 {
				t.Fatalf("not one line: %q", got)
			}
			if !json.Valid([]byte(got)) {
				t.Fatalf("not strict JSON: %s", got)
			}
			if !strings.HasPrefix(got, tc.want) || (!strings.HasSuffix(tc.want, ":") && got != tc.want+"\n") {
				t.Fatalf("line\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// The encoder writes AuditRecord's fields under their json names, in the
// struct's order: a field added to the contract without the encoder
// learning it fails here.
func TestAuditLineKeysFollowRecord(t *testing.T) {
	var want []string
	rt := reflect.TypeFor[AuditRecord]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name == "-" {
			name = "durationMs"
		}
		want = append(want, name)
	}
	rec := AuditRecord{Time: time.Unix(1, 0), Subject: "s", ClientID: "c", Method: "m", Target: "t", Upstream: "u",
		Decision: "allowed", Outcome: "ok", Code: 1, Duration: time.Millisecond, Arguments: map[string]any{"k": "v"}}
	dec := json.NewDecoder(bytes.NewReader(appendAuditLine(nil, &rec)))
	var got []string
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("keys %v, want %v", got, want)
	}
}

// logSink collects the log lines an AuditLog reports.
type logSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *logSink) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Split(strings.TrimSpace(s.buf.String()), "\n")
}

func (s *logSink) logger() *slog.Logger { return slog.New(slog.NewTextHandler(s, nil)) }

func testRecord(i int) AuditRecord {
	return AuditRecord{Time: time.Now(), Subject: fmt.Sprint("user-", i), Method: "tools/call", Target: "ts_add",
		Decision: DecisionAllowed, Outcome: "ok", Duration: time.Duration(i) * time.Microsecond}
}

// stuckWriter is a writer nobody drains (a pipe whose reader went to
// lunch, a hung network file system): each Write says it began, then waits
// for release and fails.
type stuckWriter struct {
	entered chan struct{}
	release chan struct{}
}

func (w *stuckWriter) Write([]byte) (int, error) {
	select {
	case w.entered <- struct{}{}:
	default:
	}
	<-w.release
	return 0, io.ErrClosedPipe
}

// A stuck writer never blocks Record; the drops are counted and reported
// a bounded number of times; Close returns within its bound.
func TestAuditStuckWriter(t *testing.T) {
	pw := &stuckWriter{entered: make(chan struct{}, 1), release: make(chan struct{})}
	defer func() {
		select {
		case <-pw.release:
		default:
			close(pw.release)
		}
	}()
	var logs logSink
	l := NewAuditLog(pw, AuditLogOptions{QueueSize: 16, Logger: logs.logger(), ReportInterval: time.Hour, CloseTimeout: 100 * time.Millisecond})

	// The writer takes the first record and sticks in its Write.
	l.Record(testRecord(0))
	<-pw.entered
	const n = 20000 // far more than the queue holds
	start := time.Now()
	for i := range n {
		l.Record(testRecord(i))
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("%d Records took %v: Record blocks on the writer", n, d)
	}
	st := l.Stats()
	if st.Dropped == 0 || st.Dropped+st.Written+uint64(st.Queued) > n+1 {
		t.Errorf("stats %+v after %d records to a stuck writer", st, n)
	}

	start = time.Now()
	err := l.Close()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %v, bound 100ms", d)
	}
	if !errors.Is(err, ErrAuditCloseTimeout) {
		t.Errorf("Close = %v, want ErrAuditCloseTimeout", err)
	}
	if err2 := l.Close(); err2 != err {
		t.Errorf("second Close = %v, want the first's %v", err2, err)
	}
	l.Record(testRecord(0)) // after Close: dropped, no panic
	// The writer comes unstuck with an error: the goroutine exits.
	close(pw.release)
	<-l.done

	lines := logs.lines()
	if len(lines) < 1 || len(lines) > 3 {
		t.Errorf("%d report lines for %d drops, want 1..3 (rate-limited):\n%s", len(lines), l.Stats().Dropped, strings.Join(lines, "\n"))
	}
	if !strings.Contains(lines[0], "audit log: records lost") || !strings.Contains(lines[0], "dropped=") {
		t.Errorf("report line %q", lines[0])
	}
}

// failingWriter returns ENOSPC, the error of a full disk, for the first
// failures calls (after writing partial bytes of each), then works.
type failingWriter struct {
	mu       sync.Mutex
	failures int
	partial  int
	out      bytes.Buffer
	calls    chan struct{}
}

func (w *failingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer func() {
		w.mu.Unlock()
		if w.calls != nil {
			w.calls <- struct{}{}
		}
	}()
	if w.failures != 0 {
		w.failures--
		n := min(w.partial, len(p))
		w.out.Write(p[:n])
		return n, &os.PathError{Op: "write", Path: "audit.jsonl", Err: syscall.ENOSPC}
	}
	return w.out.Write(p)
}

func TestAuditFullDisk(t *testing.T) {
	w := &failingWriter{failures: -1}
	var logs logSink
	l := NewAuditLog(w, AuditLogOptions{Logger: logs.logger(), ReportInterval: time.Hour})
	const n = 500
	for i := range n {
		l.Record(testRecord(i))
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	st := l.Stats()
	if st.Failed != n || st.Written != 0 || st.Dropped != 0 {
		t.Errorf("stats %+v, want %d failed", st, n)
	}
	lines := logs.lines()
	if len(lines) < 1 || len(lines) > 2 {
		t.Errorf("%d report lines, want 1..2:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "no space left on device") || !strings.Contains(last, fmt.Sprint("failedTotal=", n)) {
		t.Errorf("report %q does not name the error and the total", last)
	}
}

// A write that fails after writing part of a line leaves a torn line; the
// next record starts on a line of its own, so it still parses.
func TestAuditTornLineIsolated(t *testing.T) {
	w := &failingWriter{failures: 1, partial: 10, calls: make(chan struct{}, 4)}
	l := NewAuditLog(w, AuditLogOptions{Logger: slog.New(slog.DiscardHandler)})
	l.Record(testRecord(1))
	<-w.calls // the failed write
	l.Record(testRecord(2))
	<-w.calls
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(w.out.String(), "\n")
	if len(lines) != 3 || lines[2] != "" || len(lines[0]) != 10 {
		t.Fatalf("output %q: want a 10-byte torn line, then one whole line", w.out.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &rec); err != nil || rec["subject"] != "user-2" {
		t.Fatalf("line after the torn one: %q (%v)", lines[1], err)
	}
	if st := l.Stats(); st.Failed != 1 || st.Written != 1 {
		t.Errorf("stats %+v", st)
	}
}

// lockedBuffer is an io.Writer safe for the test to read after Close.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func TestAuditConcurrentRecords(t *testing.T) {
	var out lockedBuffer
	l := NewAuditLog(&out, AuditLogOptions{QueueSize: 64, Logger: slog.New(slog.DiscardHandler)})
	const workers, each = 16, 300
	var wg sync.WaitGroup
	for g := range workers {
		wg.Go(func() {
			for i := range each {
				l.Record(testRecord(g*each + i))
			}
		})
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	st := l.Stats()
	if st.Written+st.Dropped != workers*each || st.Failed != 0 || st.Queued != 0 {
		t.Fatalf("stats %+v, want written+dropped = %d", st, workers*each)
	}
	lines := strings.Split(strings.TrimSuffix(out.buf.String(), "\n"), "\n")
	if uint64(len(lines)) != st.Written {
		t.Fatalf("%d lines, %d written", len(lines), st.Written)
	}
	seen := map[string]bool{}
	for _, line := range lines {
		var rec struct{ Subject string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if seen[rec.Subject] {
			t.Fatalf("record %s written twice", rec.Subject)
		}
		seen[rec.Subject] = true
	}
}

func TestOpenAuditFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(path, []byte("{\"old\":1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := OpenAuditFile(path, AuditLogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l.Record(testRecord(7))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(data)), "\n"); len(lines) != 2 || lines[0] != `{"old":1}` || !strings.Contains(lines[1], `"subject":"user-7"`) {
		t.Fatalf("file after append:\n%s", data)
	}

	fresh := filepath.Join(t.TempDir(), "new.jsonl")
	l, err = OpenAuditFile(fresh, AuditLogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(fresh)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("new audit file mode %v, want 0600", fi.Mode().Perm())
	}
	if _, err := OpenAuditFile(filepath.Join(t.TempDir(), "missing", "a.jsonl"), AuditLogOptions{}); err == nil {
		t.Error("OpenAuditFile in a missing directory succeeded")
	}
}
