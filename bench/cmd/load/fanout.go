package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// ---- fan-out ----------------------------------------------------------------

// fanout opens -n listening streams on the server (modern: a
// subscriptions/listen POST per connection, waiting for its
// acknowledgement; legacy: a session and its GET stream), measures the
// server's memory per stream, then POSTs -notify once (the server adds a
// tool) and times how long each stream takes to receive the tools
// list_changed.
func runFanout(args []string) Result {
	fs := flag.NewFlagSet("fanout", flag.ExitOnError)
	var c common
	c.register(fs)
	rawURL := fs.String("url", "", "loopback URL of the MCP endpoint")
	mode := fs.String("mode", "modern", "modern (subscriptions/listen) or legacy (GET stream of a session)")
	pid := fs.Int("pid", 0, "server process id")
	n := fs.Int("n", 10000, "streams to open")
	wait := fs.Duration("wait", 30*time.Second, "how long to wait for every stream to be notified")
	row := fs.String("row", "", "row name in the results (default fanout-MODE)")
	hold := fs.Duration("hold", 0, "keep the streams open this long before the trigger (to take a heap profile of the server)")
	_ = fs.Parse(args)
	if *pid <= 0 || *n <= 0 || *n > 50000 || (*mode != "modern" && *mode != "legacy") {
		fatalf("-pid is required, -n must be 1..50000, -mode modern or legacy")
	}
	host, path := hostOf(*rawURL)
	waitReady(host, 10*time.Second)
	heapURL := "http://" + host + "/debug/heap"
	ctl, err := dial(host)
	if err != nil {
		fatalf("connect: %v", err)
	}
	defer ctl.c.Close()

	es := &errState{}
	heap0 := readHeap(ctl, host, heapURL)
	rss0 := statusKiB(*pid, "VmRSS")
	streams := make([]*listenStream, *n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= *n {
					return
				}
				ls, err := openListen(host, path, *mode == "modern", i)
				if err != nil {
					es.add(err)
					return
				}
				streams[i] = ls
			}
		})
	}
	wg.Wait()
	opened := 0
	for _, ls := range streams {
		if ls != nil {
			opened++
		}
	}
	heap1 := readHeap(ctl, host, heapURL)
	rss1 := statusKiB(*pid, "VmRSS")
	if *hold > 0 {
		time.Sleep(*hold)
	}

	// Every stream waits for the list change; the clock starts just
	// before the trigger is sent.
	lat := make([]int64, 0, opened)
	var mu sync.Mutex
	var t0 atomic.Int64
	deadline := time.Now().Add(*wait)
	var readers sync.WaitGroup
	for _, ls := range streams {
		if ls == nil {
			continue
		}
		readers.Go(func() {
			_ = ls.c.SetReadDeadline(deadline)
			if err := ls.waitFor(listChanged); err != nil {
				es.add(fmt.Errorf("stream %d: %w", ls.i, err))
				return
			}
			d := time.Now().UnixNano() - t0.Load()
			mu.Lock()
			lat = append(lat, d)
			mu.Unlock()
		})
	}
	notify := []byte("POST /debug/notify HTTP/1.1\r\nHost: " + host + "\r\nContent-Length: 0\r\n\r\n")
	cpu0 := cpuTicks(*pid)
	t0.Store(time.Now().UnixNano())
	if status, err := ctl.do(notify); err != nil || status != 200 {
		fatalf("POST /debug/notify: HTTP %d %v", status, err)
	}
	readers.Wait()
	cpu1 := cpuTicks(*pid)
	for _, ls := range streams {
		if ls != nil {
			ls.c.Close()
		}
	}

	r := Result{Target: c.target, Round: c.round, Row: "fanout-" + *mode, Sessions: opened}
	if *row != "" {
		r.Row = *row
	}
	slices.Sort(lat)
	if len(lat) > 0 {
		r.P50us = float64(lat[len(lat)/2]) / 1e3
		r.P99us = float64(lat[int(0.99*float64(len(lat)-1))]) / 1e3
		r.MaxUs = float64(lat[len(lat)-1]) / 1e3
	}
	r.Notified = int64(len(lat))
	if r.Notified > 0 {
		// The server's CPU from the trigger until the last stream had it,
		// per stream notified (10 ms ticks: about ±10 ms in all).
		r.CPUusNote = float64(cpu1-cpu0) * 1e6 / clockTick / float64(r.Notified)
	}
	if opened > 0 {
		r.HeapKiBPerSession = float64(int64(heap1)-int64(heap0)) / 1024 / float64(opened)
		r.RSSKiBPerSession = float64(rss1-rss0) / float64(opened)
	}
	r.PeakRSSKiB = statusKiB(*pid, "VmHWM")
	r.Errors = es.n.Load()
	r.FirstError = es.first
	return r
}

var (
	listChanged = []byte(`notifications/tools/list_changed`)
	listenAck   = []byte(`notifications/subscriptions/acknowledged`)
)

// listenStream is one open SSE response read line by line.
type listenStream struct {
	i  int
	c  net.Conn
	br *bufio.Reader
}

// waitFor reads lines until one contains marker.
func (ls *listenStream) waitFor(marker []byte) error {
	for {
		line, err := ls.br.ReadSlice('\n')
		if err != nil && err != bufio.ErrBufferFull {
			return err
		}
		if bytes.Contains(line, marker) {
			return nil
		}
	}
}

// openListen opens stream i on its own connection and returns once the
// server has it registered (modern: acknowledged; legacy: the GET
// answered with an event stream).
func openListen(host, path string, modern bool, i int) (*listenStream, error) {
	hc, err := dial(host)
	if err != nil {
		return nil, err
	}
	var req []byte
	if modern {
		body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(i+1) + `,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + modernMeta + `}}`
		req = buildRequest(host, path, [][2]string{{"Mcp-Protocol-Version", "2026-07-28"}, {"Mcp-Method", "subscriptions/listen"}}, body)
	} else {
		sid, err := openSession(hc, host, path, nil)
		if err != nil {
			hc.c.Close()
			return nil, err
		}
		req = []byte("GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nAccept: text/event-stream\r\nMcp-Session-Id: " + sid + "\r\nMcp-Protocol-Version: 2025-11-25\r\n\r\n")
	}
	if _, err := hc.c.Write(req); err != nil {
		hc.c.Close()
		return nil, err
	}
	_ = hc.c.SetReadDeadline(time.Now().Add(30 * time.Second))
	ls := &listenStream{i: i, c: hc.c, br: hc.br}
	status, err := ls.br.ReadSlice('\n')
	if err != nil || !bytes.HasPrefix(status, []byte("HTTP/1.1 200")) {
		hc.c.Close()
		return nil, fmt.Errorf("stream %d: %q %v", i, status, err)
	}
	ct := false
	for { // headers
		line, err := ls.br.ReadSlice('\n')
		if err != nil {
			hc.c.Close()
			return nil, err
		}
		if bytes.Contains(bytes.ToLower(line), []byte("text/event-stream")) {
			ct = true
		}
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			break
		}
	}
	if !ct {
		hc.c.Close()
		return nil, fmt.Errorf("stream %d: not an event stream", i)
	}
	if modern {
		if err := ls.waitFor(listenAck); err != nil {
			hc.c.Close()
			return nil, err
		}
	}
	_ = hc.c.SetReadDeadline(time.Time{})
	return ls, nil
}
