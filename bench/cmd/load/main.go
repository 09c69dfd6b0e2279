// Command load is the closed-loop load generator of the bench. It talks to
// loopback addresses only, runs for a fixed, bounded time and prints one
// JSON result line per run on stdout.
//
//	load http     -url http://127.0.0.1:PORT/mcp -mode legacy|modern -pid PID ...
//	load stdio    [flags] -- server-command args...
//	load sessions -url http://127.0.0.1:PORT/mcp -n 10000 -pid PID ...
//	load fanout   -url http://127.0.0.1:PORT/mcp -mode modern|legacy -n 10000 -pid PID
//
// http: -c clients, each on its own keep-alive connection, send tools/call
// back to back. In legacy mode each client first initializes its own
// session (initialize, notifications/initialized) and sends its session id
// with every call; in modern mode every call carries the 2026-07-28 _meta
// and the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers.
//
// stdio: the generator starts the server command, initializes, and keeps
// -c requests in flight over its stdin and stdout.
//
// sessions: opens -n legacy sessions (initialize and
// notifications/initialized, never deleted) and reports the growth of the
// server's live heap (/debug/heap, after GC) and RSS per session.
//
// Server CPU comes from /proc/PID/stat (utime+stime) sampled at the start
// and end of the measurement window, which follows a warm-up; peak RSS is
// VmHWM from /proc/PID/status.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Result is one run's line of output.
type Result struct {
	Target string `json:"target"`
	Row    string `json:"row"`
	Round  int    `json:"round"`
	Conc   int    `json:"conc,omitempty"`

	Requests   int64   `json:"requests,omitempty"`
	Errors     int64   `json:"errors"`
	Seconds    float64 `json:"seconds,omitempty"`
	RPS        float64 `json:"rps,omitempty"`
	P50us      float64 `json:"p50us,omitempty"`
	P99us      float64 `json:"p99us,omitempty"`
	CPUusReq   float64 `json:"cpuUsPerReq,omitempty"`
	PeakRSSKiB int64   `json:"peakRssKiB"`
	// The gateway leg: CPU per call of the proxy in front of the server
	// (-proxy-pid); CPUusReq stays the server's.
	ProxyCPUusReq float64 `json:"proxyCpuUsPerReq,omitempty"`

	// The streaming leg: progress notifications received in the window,
	// per second, and the server's CPU per notification.
	Notifications int64   `json:"notifications,omitempty"`
	NotesPerSec   float64 `json:"notesPerSec,omitempty"`
	CPUusNote     float64 `json:"cpuUsPerNote,omitempty"`

	// The fan-out leg: streams notified, and the slowest one (µs);
	// Sessions is the number of streams, the per-session figures are per
	// stream.
	Notified int64   `json:"notified,omitempty"`
	MaxUs    float64 `json:"maxUs,omitempty"`

	Sessions          int     `json:"sessions,omitempty"`
	HeapKiBPerSession float64 `json:"heapKiBPerSession,omitempty"`
	RSSKiBPerSession  float64 `json:"rssKiBPerSession,omitempty"`

	// The task row (-tool task): Requests counts completed task rounds;
	// GetsPerOp is the mean number of tasks/get per round (1 when the
	// first poll already sees the task completed) and HTTPPerOp the HTTP
	// requests per round.
	GetsPerOp float64 `json:"getsPerOp,omitempty"`
	HTTPPerOp float64 `json:"httpPerOp,omitempty"`

	FirstError string `json:"firstError,omitempty"`
}

const (
	initBody     = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench-load","version":"1.0.0"}}}`
	initNoteBody = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	modernMeta   = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench-load","version":"1.0.0"}}`
	// streamNotes is the number of progress notifications of the stream
	// tool (harness.StreamNotes).
	streamNotes = 16
)

var progressMethod = []byte(`"notifications/progress"`)

// call returns the params of a tools/call of tool and the bytes every
// successful response contains.
func call(tool string, modern bool) (params string, want []byte) {
	var p string
	switch tool {
	case "echo":
		p, want = `"name":"echo","arguments":{"text":"hello"}`, []byte(`"text":"hello"`)
	case "add":
		p, want = `"name":"add","arguments":{"a":1.5,"b":2}`, []byte(`"text":"3.5"`)
	case "task":
		return "", nil // task.go builds the requests of a round
	case "stream":
		// With a progress token: streamNotes notifications, then "done".
		p, want = `"name":"stream","arguments":{}`, []byte(`"text":"done"`)
		meta := `"_meta":{"progressToken":1}`
		if modern {
			meta = strings.Replace(modernMeta, `"_meta":{`, `"_meta":{"progressToken":1,`, 1)
		}
		return "{" + p + "," + meta + "}", want
	default:
		fatalf("unknown tool %q", tool)
	}
	if modern {
		p += "," + modernMeta
	}
	return "{" + p + "}", want
}

func main() {
	if len(os.Args) < 2 {
		fatalf("usage: load http|stdio|sessions [flags]")
	}
	var r Result
	switch os.Args[1] {
	case "http":
		r = runHTTP(os.Args[2:])
	case "stdio":
		r = runStdio(os.Args[2:])
	case "sessions":
		r = runSessions(os.Args[2:])
	case "fanout":
		r = runFanout(os.Args[2:])
	default:
		fatalf("unknown mode %q", os.Args[1])
	}
	b, _ := json.Marshal(r)
	fmt.Println(string(b))
	if r.Errors > 0 {
		fmt.Fprintf(os.Stderr, "load: %s %s: %d errors, first: %s\n", r.Target, r.Row, r.Errors, r.FirstError)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "load: "+format+"\n", args...)
	os.Exit(1)
}

type common struct {
	target   string
	round    int
	conc     int
	duration time.Duration
	warmup   time.Duration
	tool     string
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.target, "target", "", "name of the server, for the result line")
	fs.IntVar(&c.round, "round", 0, "round number, for the result line")
	fs.IntVar(&c.conc, "c", 16, "concurrent clients (requests in flight)")
	fs.DurationVar(&c.duration, "d", 5*time.Second, "measurement window")
	fs.DurationVar(&c.warmup, "warmup", time.Second, "warm-up before the window")
	fs.StringVar(&c.tool, "tool", "echo", "tool to call: echo, add, stream, or task (HTTP only: one operation is a task round, see task.go)")
}

func (c *common) check() {
	if c.conc < 1 || c.conc > 1024 {
		fatalf("-c must be 1..1024")
	}
	if c.duration <= 0 || c.duration > 5*time.Minute || c.warmup < 0 || c.warmup > time.Minute {
		fatalf("-d must be in (0, 5m] and -warmup in [0, 1m]")
	}
}

// ---- measurement ---------------------------------------------------------

// window is the measurement window shared by the clients.
type window struct {
	start, end time.Time
}

// recorder collects the latencies of requests completed in the window.
type recorder struct {
	lat []int64 // nanoseconds
	n   int64
	// gets and http count the tasks/get and HTTP requests of the task
	// rounds recorded (the task row).
	gets, http int64
}

type errState struct {
	mu    sync.Mutex
	first string
	n     atomic.Int64
}

func (e *errState) add(err error) {
	if e.n.Add(1) == 1 {
		e.mu.Lock()
		e.first = err.Error()
		e.mu.Unlock()
	}
}

// record counts an operation that completed in the window and reports
// whether it did.
func (r *recorder) record(w *window, start, done time.Time) bool {
	if done.Before(w.start) || done.After(w.end) {
		return false
	}
	r.n++
	if len(r.lat) < cap(r.lat) {
		r.lat = append(r.lat, int64(done.Sub(start)))
	}
	return true
}

func percentiles(recs []*recorder) (n int64, p50, p99 float64) {
	var all []int64
	for _, r := range recs {
		n += r.n
		all = append(all, r.lat...)
	}
	if len(all) == 0 {
		return n, 0, 0
	}
	slices.Sort(all)
	at := func(q float64) float64 {
		i := int(q * float64(len(all)-1))
		return float64(all[i]) / 1e3
	}
	return n, at(0.50), at(0.99)
}

// cpuTicks returns utime+stime of pid in clock ticks.
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		fatalf("read stat of %d: %v", pid, err)
	}
	// Fields after the command name, which is in parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+2:])
	// f[0] is field 3 (state); utime is field 14, stime field 15.
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return ut + st
}

// clockTick is USER_HZ, 100 on Linux.
const clockTick = 100

// statusKiB reads a "Vm..." field of /proc/PID/status in KiB.
func statusKiB(pid int, field string) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, field+":") {
			f := strings.Fields(line[len(field)+1:])
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}

// measure runs the window: it waits for the warm-up, samples the server's
// CPU, waits for the window to end and samples again.
func measure(pid int, w *window) (cpuSeconds float64) {
	return measureAll(w, pid)[0]
}

// measureAll is measure for several processes (the gateway leg: the
// upstream server and the proxy in front of it), sampled together.
func measureAll(w *window, pids ...int) (cpuSeconds []float64) {
	time.Sleep(time.Until(w.start))
	t0 := make([]int64, len(pids))
	for i, pid := range pids {
		t0[i] = cpuTicks(pid)
	}
	time.Sleep(time.Until(w.end))
	cpuSeconds = make([]float64, len(pids))
	for i, pid := range pids {
		cpuSeconds[i] = float64(cpuTicks(pid)-t0[i]) / clockTick
	}
	return cpuSeconds
}

func finish(r *Result, c *common, recs []*recorder, cpu float64, pid int, es *errState) {
	n, p50, p99 := percentiles(recs)
	r.Target, r.Round, r.Conc = c.target, c.round, c.conc
	r.Requests, r.Seconds = n, c.duration.Seconds()
	r.RPS = float64(n) / c.duration.Seconds()
	r.P50us, r.P99us = p50, p99
	if n > 0 {
		r.CPUusReq = cpu * 1e6 / float64(n)
	}
	if c.tool == "stream" {
		if r.Notifications == 0 { // HTTP: checked to be streamNotes per call
			r.Notifications = n * streamNotes
		}
		r.NotesPerSec = float64(r.Notifications) / c.duration.Seconds()
		if r.Notifications > 0 {
			r.CPUusNote = cpu * 1e6 / float64(r.Notifications)
		}
	}
	if c.tool == "task" && n > 0 {
		var gets, reqs int64
		for _, rec := range recs {
			gets += rec.gets
			reqs += rec.http
		}
		r.GetsPerOp = float64(gets) / float64(n)
		r.HTTPPerOp = float64(reqs) / float64(n)
	}
	r.PeakRSSKiB = statusKiB(pid, "VmHWM")
	r.Errors = es.n.Load()
	r.FirstError = es.first
}

// ---- HTTP ------------------------------------------------------------------

// httpConn is a minimal HTTP/1.1 client on one keep-alive connection: it
// writes prebuilt requests and reads responses with Content-Length or
// chunked bodies. It is much cheaper than net/http's client, so the
// generator's own core is less of a bound.
type httpConn struct {
	addr string
	c    net.Conn
	br   *bufio.Reader
	body []byte
	sid  string
	ct   string
}

func dial(addr string) (*httpConn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &httpConn{addr: addr, c: c, br: bufio.NewReaderSize(c, 32<<10)}, nil
}

// buildRequest renders a POST to path with the given headers and body.
func buildRequest(host, path string, hdr [][2]string, body string) []byte {
	var b bytes.Buffer
	b.WriteString("POST " + path + " HTTP/1.1\r\nHost: " + host + "\r\n")
	b.WriteString("Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n")
	for _, h := range hdr {
		b.WriteString(h[0] + ": " + h[1] + "\r\n")
	}
	b.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n")
	b.WriteString(body)
	return b.Bytes()
}

// do sends req and reads the response; the body is in hc.body until the
// next call.
func (hc *httpConn) do(req []byte) (status int, err error) {
	if _, err := hc.c.Write(req); err != nil {
		return 0, err
	}
	line, err := hc.br.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, fmt.Errorf("bad status line %q", line)
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, fmt.Errorf("bad status line %q", line)
	}
	length, chunked, closing := -1, false, false
	hc.sid, hc.ct = "", ""
	for {
		line, err := hc.br.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return 0, fmt.Errorf("bad header line %q", line)
		}
		v = bytes.TrimSpace(v)
		switch {
		case asciiEq(k, "content-length"):
			if length, err = strconv.Atoi(string(v)); err != nil {
				return 0, fmt.Errorf("bad content-length %q", v)
			}
		case asciiEq(k, "transfer-encoding"):
			chunked = bytes.EqualFold(v, []byte("chunked"))
		case asciiEq(k, "connection"):
			closing = bytes.EqualFold(v, []byte("close"))
		case asciiEq(k, "mcp-session-id"):
			hc.sid = string(v)
		case asciiEq(k, "content-type"):
			hc.ct = string(v)
		}
	}
	hc.body = hc.body[:0]
	switch {
	case chunked:
		for {
			line, err := hc.br.ReadSlice('\n')
			if err != nil {
				return 0, err
			}
			sz, _, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(";"))
			n, err := strconv.ParseInt(string(sz), 16, 32)
			if err != nil || n < 0 || n > 16<<20 {
				return 0, fmt.Errorf("bad chunk size %q", line)
			}
			if n == 0 {
				// Trailers, then the blank line.
				for {
					line, err := hc.br.ReadSlice('\n')
					if err != nil {
						return 0, err
					}
					if len(bytes.TrimRight(line, "\r\n")) == 0 {
						break
					}
				}
				break
			}
			if hc.body, err = readN(hc.br, hc.body, int(n)); err != nil {
				return 0, err
			}
			if _, err := hc.br.Discard(2); err != nil {
				return 0, err
			}
		}
	case length >= 0:
		if length > 16<<20 {
			return 0, fmt.Errorf("body of %d bytes", length)
		}
		if hc.body, err = readN(hc.br, hc.body, length); err != nil {
			return 0, err
		}
	default:
		if status != 204 && status != 304 && status >= 200 {
			return 0, errors.New("response without length")
		}
	}
	if closing {
		hc.c.Close()
		c, err := net.Dial("tcp", hc.addr)
		if err != nil {
			return 0, err
		}
		hc.c, hc.br = c, bufio.NewReaderSize(c, 32<<10)
	}
	return status, nil
}

func readN(br *bufio.Reader, dst []byte, n int) ([]byte, error) {
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	_, err := io.ReadFull(br, dst[start:])
	return dst, err
}

func asciiEq(b []byte, lower string) bool { return bytes.EqualFold(b, []byte(lower)) }

// okResponse checks a tools/call response: HTTP 200 and a JSON-RPC result
// (a JSON body, or the last data line of an SSE body) containing want.
func (hc *httpConn) okResponse(status int, want []byte) error {
	if status != 200 {
		return fmt.Errorf("HTTP %d: %.200s", status, hc.body)
	}
	body := hc.body
	if strings.HasPrefix(hc.ct, "text/event-stream") {
		i := bytes.LastIndex(body, []byte("data: {"))
		if i < 0 {
			return fmt.Errorf("SSE body without a message: %.200s", body)
		}
		body = body[i+6:]
	}
	if !bytes.Contains(body, []byte(`"result"`)) || !bytes.Contains(body, want) {
		return fmt.Errorf("unexpected response: %.200s", body)
	}
	return nil
}

// hostOf returns host:port and path of a loopback URL.
func hostOf(raw string) (host, path string) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" {
		fatalf("bad -url %q", raw)
	}
	ip := net.ParseIP(u.Hostname())
	if ip == nil || !ip.IsLoopback() {
		fatalf("-url must be a loopback address, not %q", u.Host)
	}
	return u.Host, u.Path
}

// waitReady polls the server until it accepts connections.
func waitReady(host string, within time.Duration) {
	deadline := time.Now().Add(within)
	for {
		c, err := net.DialTimeout("tcp", host, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			fatalf("server at %s not ready: %v", host, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// openSession initializes a legacy session on hc and returns its id.
func openSession(hc *httpConn, host, path string, extra [][2]string) (string, error) {
	status, err := hc.do(buildRequest(host, path, extra, initBody))
	if err != nil {
		return "", err
	}
	if status != 200 || hc.sid == "" {
		return "", fmt.Errorf("initialize: HTTP %d, session %q: %.200s", status, hc.sid, hc.body)
	}
	sid := hc.sid
	hdr := [][2]string{{"Mcp-Session-Id", sid}, {"Mcp-Protocol-Version", "2025-11-25"}}
	status, err = hc.do(buildRequest(host, path, append(hdr, extra...), initNoteBody))
	if err != nil {
		return "", err
	}
	if status != 202 && status != 200 && status != 204 {
		return "", fmt.Errorf("notifications/initialized: HTTP %d", status)
	}
	return sid, nil
}

func runHTTP(args []string) Result {
	fs := flag.NewFlagSet("http", flag.ExitOnError)
	var c common
	c.register(fs)
	rawURL := fs.String("url", "", "loopback URL of the MCP endpoint")
	mode := fs.String("mode", "legacy", "legacy (stateful 2025-11-25) or modern (stateless 2026-07-28)")
	pid := fs.Int("pid", 0, "server process id")
	toolName := fs.String("tool-name", "", "the tool's name at the URL when it differs from -tool (echo behind an aggregating gateway: bare_echo)")
	proxyPid := fs.Int("proxy-pid", 0, "process id of a proxy between the load and the server (the gateway leg): its CPU per call is reported too")
	row := fs.String("row", "", "row name for the result line (default http-MODE)")
	bearerFile := fs.String("bearer-file", "", "send the token in `file` as Authorization: Bearer")
	_ = fs.Parse(args)
	c.check()
	if *pid <= 0 {
		fatalf("-pid is required")
	}
	host, path := hostOf(*rawURL)
	var authHdr [][2]string
	if *bearerFile != "" {
		// The server writes the token once it is listening.
		waitReady(host, 10*time.Second)
		tok, err := os.ReadFile(*bearerFile)
		if err != nil || len(tok) == 0 {
			fatalf("bearer token: %v", err)
		}
		authHdr = [][2]string{{"Authorization", "Bearer " + strings.TrimSpace(string(tok))}}
	}
	waitReady(host, 10*time.Second)
	modern := *mode == "modern"
	if !modern && *mode != "legacy" {
		fatalf("-mode must be legacy or modern")
	}
	params, want := call(c.tool, modern)
	name := c.tool
	if *toolName != "" && *toolName != c.tool {
		if c.tool == "task" {
			fatalf("-tool-name does not apply to the task tool")
		}
		name = *toolName
		params = strings.Replace(params, `"name":"`+c.tool+`"`, `"name":"`+name+`"`, 1)
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params + `}`

	// Connect and (legacy) initialize every client before the clock starts.
	conns := make([]*httpConn, c.conc)
	reqs := make([][]byte, c.conc)
	taskHdr := make([][][2]string, c.conc) // the task row: session and auth headers
	for i := range conns {
		hc, err := dial(host)
		if err != nil {
			fatalf("connect: %v", err)
		}
		var hdr [][2]string
		if modern {
			hdr = [][2]string{{"Mcp-Protocol-Version", "2026-07-28"}, {"Mcp-Method", "tools/call"}, {"Mcp-Name", name}}
		} else {
			sid, err := openSession(hc, host, path, authHdr)
			if err != nil {
				fatalf("%v", err)
			}
			hdr = [][2]string{{"Mcp-Session-Id", sid}, {"Mcp-Protocol-Version", "2025-11-25"}}
		}
		conns[i], reqs[i] = hc, buildRequest(host, path, append(hdr, authHdr...), body)
		if !modern {
			taskHdr[i] = append(slices.Clip(hdr), authHdr...)
		} else {
			taskHdr[i] = authHdr
		}
	}

	now := time.Now()
	w := &window{start: now.Add(c.warmup), end: now.Add(c.warmup + c.duration)}
	es := &errState{}
	recs := make([]*recorder, c.conc)
	var wg sync.WaitGroup
	for i, hc := range conns {
		rec := &recorder{lat: make([]int64, 0, 1<<20)}
		recs[i] = rec
		req := reqs[i]
		var tr *taskRounder
		if c.tool == "task" {
			tr = newTaskRounder(hc, host, path, modern, taskHdr[i])
		}
		wg.Go(func() {
			_ = hc.c.SetDeadline(w.end.Add(10 * time.Second))
			for {
				start := time.Now()
				if start.After(w.end) {
					return
				}
				var err error
				var gets int
				if tr != nil {
					gets, err = tr.round()
				} else {
					var status int
					status, err = hc.do(req)
					if err == nil {
						err = hc.okResponse(status, want)
					}
				}
				if err == nil && c.tool == "stream" {
					if got := bytes.Count(hc.body, progressMethod); got != streamNotes {
						err = fmt.Errorf("%d progress notifications, want %d: %.200s", got, streamNotes, hc.body)
					}
				}
				if err != nil {
					es.add(err)
					if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
						return
					}
					continue
				}
				if rec.record(w, start, time.Now()) && tr != nil {
					rec.gets += int64(gets)
					rec.http += int64(gets) + 1
					if !modern {
						rec.http++ // tasks/result
					}
				}
			}
		})
	}
	pids := []int{*pid}
	if *proxyPid > 0 {
		pids = append(pids, *proxyPid)
	}
	cpus := measureAll(w, pids...)
	cpu := cpus[0]
	wg.Wait()
	for _, hc := range conns {
		hc.c.Close()
	}
	r := Result{Row: "http-" + *mode}
	if *row != "" {
		r.Row = *row
	}
	finish(&r, &c, recs, cpu, *pid, es)
	if *proxyPid > 0 && r.Requests > 0 {
		r.ProxyCPUusReq = cpus[1] * 1e6 / float64(r.Requests)
	}
	return r
}

// ---- stdio ---------------------------------------------------------------

func runStdio(args []string) Result {
	fs := flag.NewFlagSet("stdio", flag.ExitOnError)
	var c common
	c.register(fs)
	row := fs.String("row", "", "row name for the result line (default stdio)")
	_ = fs.Parse(args)
	c.check()
	if c.tool == "task" {
		fatalf("stdio: -tool task is an HTTP row")
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fatalf("stdio: the server command is missing (after --)")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		fatalf("%v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fatalf("%v", err)
	}
	if err := cmd.Start(); err != nil {
		fatalf("start %v: %v", argv, err)
	}
	pid := cmd.Process.Pid
	killed := false
	stopTimer := time.AfterFunc(c.warmup+c.duration+10*time.Second, func() {
		killed = true
		_ = cmd.Process.Kill()
	})
	defer stopTimer.Stop()

	br := bufio.NewReaderSize(stdout, 256<<10)
	bw := bufio.NewWriterSize(stdin, 64<<10)
	readLine := func() []byte {
		line, err := br.ReadSlice('\n')
		if err != nil {
			fatalf("read from server: %v (killed: %v)", err, killed)
		}
		return line
	}
	bw.WriteString(initBody + "\n")
	bw.Flush()
	if line := readLine(); !bytes.Contains(line, []byte(`"result"`)) {
		fatalf("initialize failed: %s", line)
	}
	bw.WriteString(initNoteBody + "\n")

	params, want := call(c.tool, false)
	prefix := []byte(`{"jsonrpc":"2.0","id":`)
	suffix := []byte(`,"method":"tools/call","params":` + params + "}\n")
	const ring = 4096
	var sent [ring]time.Time
	next := int64(1)
	send := func() {
		sent[next%ring] = time.Now()
		bw.Write(prefix)
		bw.Write(strconv.AppendInt(nil, next, 10))
		bw.Write(suffix)
		next++
	}

	now := time.Now()
	w := &window{start: now.Add(c.warmup), end: now.Add(c.warmup + c.duration)}
	es := &errState{}
	rec := &recorder{lat: make([]int64, 0, 4<<20)}
	for range c.conc {
		send()
	}
	bw.Flush()
	var cpu float64
	cpuDone := make(chan struct{})
	go func() {
		cpu = measure(pid, w)
		close(cpuDone)
	}()
	inflight := c.conc
	var notes int64
	for inflight > 0 {
		line := readLine()
		if bytes.Contains(line, progressMethod) {
			if t := time.Now(); !t.Before(w.start) && !t.After(w.end) {
				notes++
			}
			continue
		}
		done := time.Now()
		id, ok := responseID(line)
		if !ok {
			es.add(fmt.Errorf("response without an integer id: %.200s", line))
			inflight--
			continue
		}
		if !bytes.Contains(line, []byte(`"result"`)) || !bytes.Contains(line, want) {
			es.add(fmt.Errorf("unexpected response: %.200s", line))
		} else {
			rec.record(w, sent[id%ring], done)
		}
		inflight--
		if done.Before(w.end) {
			send()
			inflight++
		}
		if br.Buffered() == 0 {
			bw.Flush()
		}
	}
	bw.Flush()
	<-cpuDone
	r := Result{Row: "stdio", Notifications: notes}
	if *row != "" {
		r.Row = *row
	}
	finish(&r, &c, []*recorder{rec}, cpu, pid, es)
	stdin.Close()
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
	return r
}

// responseID finds the integer id of a response line.
func responseID(line []byte) (int64, bool) {
	i := bytes.Index(line, []byte(`"id":`))
	if i < 0 {
		return 0, false
	}
	j := i + 5
	k := j
	for k < len(line) && line[k] >= '0' && line[k] <= '9' {
		k++
	}
	n, err := strconv.ParseInt(string(line[j:k]), 10, 64)
	return n, err == nil
}

// ---- idle sessions ---------------------------------------------------------

func runSessions(args []string) Result {
	fs := flag.NewFlagSet("sessions", flag.ExitOnError)
	var c common
	c.register(fs)
	rawURL := fs.String("url", "", "loopback URL of the MCP endpoint")
	pid := fs.Int("pid", 0, "server process id")
	n := fs.Int("n", 10000, "sessions to open")
	heapURL := fs.String("heap", "", "URL of the server's /debug/heap (default: derived from -url)")
	_ = fs.Parse(args)
	c.check()
	if *pid <= 0 || *n <= 0 || *n > 100000 {
		fatalf("-pid is required and -n must be 1..100000")
	}
	host, path := hostOf(*rawURL)
	if *heapURL == "" {
		*heapURL = "http://" + host + "/debug/heap"
	}
	waitReady(host, 10*time.Second)
	conns := make([]*httpConn, c.conc)
	for i := range conns {
		hc, err := dial(host)
		if err != nil {
			fatalf("connect: %v", err)
		}
		conns[i] = hc
	}
	es := &errState{}
	open := func(count int) {
		var wg sync.WaitGroup
		var next atomic.Int64
		for _, hc := range conns {
			wg.Go(func() {
				for next.Add(1) <= int64(count) {
					if _, err := openSession(hc, host, path, nil); err != nil {
						es.add(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	// Warm up (connections, code paths, pools) with a few sessions first.
	open(200)
	heap0 := readHeap(conns[0], host, *heapURL)
	rss0 := statusKiB(*pid, "VmRSS")
	open(*n)
	heap1 := readHeap(conns[0], host, *heapURL)
	rss1 := statusKiB(*pid, "VmRSS")
	r := Result{Target: c.target, Round: c.round, Row: "sessions", Sessions: *n}
	r.HeapKiBPerSession = float64(int64(heap1)-int64(heap0)) / 1024 / float64(*n)
	r.RSSKiBPerSession = float64(rss1-rss0) / float64(*n)
	r.PeakRSSKiB = statusKiB(*pid, "VmHWM")
	r.Errors = es.n.Load()
	r.FirstError = es.first
	for _, hc := range conns {
		hc.c.Close()
	}
	return r
}

// readHeap GETs /debug/heap (which collects garbage first) and returns the
// live heap in bytes.
func readHeap(hc *httpConn, host, rawURL string) uint64 {
	u, err := url.Parse(rawURL)
	if err != nil {
		fatalf("bad heap URL: %v", err)
	}
	req := []byte("GET " + u.Path + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n")
	status, err := hc.do(req)
	if err != nil || status != 200 {
		fatalf("GET %s: HTTP %d %v", rawURL, status, err)
	}
	var h struct {
		HeapAlloc uint64 `json:"heapAlloc"`
	}
	if err := json.Unmarshal(hc.body, &h); err != nil {
		fatalf("heap: %v", err)
	}
	return h.HeapAlloc
}
