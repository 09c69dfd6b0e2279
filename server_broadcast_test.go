package pmcp

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/gopmcp/pmcp/jsonrpc"
)

// TestListenerHeapPerIdleListener: an idle listener (one per legacy
// session, stream connection and listen stream) keeps no preallocated
// queue; a fan-out server holds tens of thousands of them.
func TestListenerHeapPerIdleListener(t *testing.T) {
	s, err := NewServer(ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2000
	ls := make([]*listener, 0, n)
	before := liveHeap()
	for range n {
		l := s.newListener(func(event) bool { return true })
		s.listeners.add(l)
		ls = append(ls, l)
	}
	per := heapGrowth(before, liveHeap()) / n
	t.Logf("heap per idle listener: %d bytes", per)
	// The listener, its wake-up channel and its entry in the set.
	if per > 384 {
		t.Fatalf("an idle listener keeps %d bytes of heap, want at most 384", per)
	}
	for _, l := range ls {
		s.listeners.remove(l)
	}
}

// drained collects what a listener has pending.
func drained(l *listener) []event {
	var out []event
	_ = l.drain(func(ev event) error {
		out = append(out, ev)
		return nil
	})
	return out
}

func isReady(l *listener) bool {
	select {
	case <-l.ready:
		return true
	default:
		return false
	}
}

// TestListenerCoalescesListChanges: list changes that arrive before the
// consumer looks are one notification per list, one wake-up in all, and
// a change after a take is a new notification (nothing is lost).
func TestListenerCoalescesListChanges(t *testing.T) {
	s, err := NewServer(ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l := s.newListener(func(event) bool { return true })
	s.listeners.add(l)
	defer s.listeners.remove(l)
	for range 5 {
		s.deliver(event{kind: listTools})
	}
	s.deliver(event{kind: listResources})
	s.deliver(event{kind: listTools})
	if !isReady(l) {
		t.Fatal("no wake-up after events")
	}
	if isReady(l) {
		t.Fatal("more than one wake-up pending")
	}
	got := drained(l)
	if len(got) != 2 || got[0].kind != listTools || got[1].kind != listResources {
		t.Fatalf("pending %+v, want tools then resources, once each", got)
	}
	if got := drained(l); len(got) != 0 {
		t.Fatalf("taken twice: %+v", got)
	}
	s.deliver(event{kind: listTools})
	if !isReady(l) {
		t.Fatal("no wake-up for a change after the take")
	}
	if got := drained(l); len(got) != 1 || got[0].kind != listTools {
		t.Fatalf("pending %+v, want tools", got)
	}
	if d := s.Stats().DroppedNotifications; d != 0 {
		t.Fatalf("coalesced list changes counted as %d drops", d)
	}
}

// TestListenerResourceUpdatesBounded: resource updates queue in order,
// once per URI, at most NotificationQueue of them; the rest are dropped
// and counted, and the queue takes updates again once drained.
func TestListenerResourceUpdatesBounded(t *testing.T) {
	s, err := NewServer(ServerOptions{NotificationQueue: 3})
	if err != nil {
		t.Fatal(err)
	}
	l := s.newListener(func(event) bool { return true })
	s.listeners.add(l)
	defer s.listeners.remove(l)
	for _, u := range []string{"a", "b", "a", "c", "d", "e", "b"} {
		s.NotifyResourceUpdated(u)
	}
	s.notifyListChanged(listPrompts) // never dropped
	got := drained(l)
	want := []event{{kind: listPrompts}, {resourceUpdated, "a"}, {resourceUpdated, "b"}, {resourceUpdated, "c"}}
	if len(got) != len(want) {
		t.Fatalf("pending %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("pending %+v, want %+v", got, want)
		}
	}
	if d := s.Stats().DroppedNotifications; d != 2 {
		t.Fatalf("DroppedNotifications = %d, want 2 (d and e)", d)
	}
	s.NotifyResourceUpdated("d")
	if got := drained(l); len(got) != 1 || got[0].uri != "d" {
		t.Fatalf("after a drain: %+v", got)
	}
}

// TestListenNotificationBytes: the notifications encoded once (per stream
// or for all streams) are byte for byte what encoding each one would give.
func TestListenNotificationBytes(t *testing.T) {
	for _, id := range []jsonrpc.ID{jsonrpc.Int64ID(7), jsonrpc.StringID(`sub "1" <é>`)} {
		want, err := encodeMessage(noID, NotificationToolsListChanged, &struct {
			Meta Meta `json:"_meta"`
		}{Meta{MetaSubscriptionID: id}})
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeMessage(noID, NotificationToolsListChanged, subscriptionParams(id))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("id %s:\n got %s\nwant %s", id, got, want)
		}
	}
	// The shared frame around a stream's params (detached and in-line
	// listen streams) is the frame the general encoder makes.
	for _, id := range []jsonrpc.ID{jsonrpc.Int64ID(7), jsonrpc.StringID(`sub "1" <é>`)} {
		raw := subscriptionParams(id)
		if !oneLineObject(raw) {
			t.Fatalf("id %s: subscriptionParams %s is not a one-line object", id, raw)
		}
		for k := listTools; k < resourceUpdated; k++ {
			want := []byte("event: message\ndata: ")
			want, err := jsonrpc.AppendMessage(want, &jsonrpc.Request{Method: listMethods[k], Params: raw})
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, "\n\n"...)
			if got := appendListFrame([]byte("x"), k, raw); !bytes.Equal(got[1:], want) {
				t.Fatalf("%s, id %s:\n got %q\nwant %q", listMethods[k], id, got[1:], want)
			}
			if got, ok := listKindOf(listMethods[k]); !ok || got != k {
				t.Fatalf("listKindOf(%s) = %d, %v", listMethods[k], got, ok)
			}
		}
	}
	for _, raw := range []string{` {}`, "{\n}", "{\r}", `[]`, ``} {
		if oneLineObject(jsontext.Value(raw)) {
			t.Fatalf("oneLineObject(%q) = true: it must take the general encoder", raw)
		}
	}
	if _, ok := listKindOf(NotificationResourceUpdated); ok {
		t.Fatal("resources/updated is not a list change")
	}
	for k := listTools; k < resourceUpdated; k++ {
		want, err := encodeMessage(noID, listMethods[k], struct{}{})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(legacyListChanged[k], want) {
			t.Fatalf("%s: %s, want %s", listMethods[k], legacyListChanged[k], want)
		}
	}
}

// TestHTTPModernListenKeepAliveAndEnd: a listen stream served in the
// request's goroutine still sends keep-alive comments, and ends (its
// listener removed) when the client closes it.
func TestHTTPModernListenKeepAliveAndEnd(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, &StreamableHTTPOptions{KeepAliveInterval: 5 * time.Millisecond})
	base := srv.listeners.len()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	listen := modernBody(9, MethodSubscriptionsListen, map[string]any{"notifications": map[string]any{"toolsListChanged": true}}, nil)
	resp := e.do(ctx, http.MethodPost, listen, modernHeaders(MethodSubscriptionsListen, ""))
	defer resp.Body.Close()
	wantStatus(t, resp, 200)
	rd := newSSEReader(t, resp.Body)
	if ack, _, ok := rd.nextMessage(); !ok || ack.Method != NotificationSubscriptionsAck {
		t.Fatalf("first frame %+v", ack)
	}
	if ev, ok := rd.next(); !ok || !ev.comment {
		t.Fatalf("want a keep-alive comment, got %+v", ev)
	}
	srv.notifyListChanged(listTools)
	m, _, ok := rd.nextMessage()
	if !ok || m.Method != NotificationToolsListChanged || string(m.Params) != `{"_meta":{"io.modelcontextprotocol/subscriptionId":9}}` {
		t.Fatalf("want the tools list change of subscription 9, got %+v", m)
	}
	cancel()
	deadline := time.Now().Add(10 * time.Second)
	for srv.listeners.len() != base || e.h.Stats().ListenStreams != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after the client left: %d listeners (want %d), %d listen streams", srv.listeners.len(), base, e.h.Stats().ListenStreams)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestHTTPModernListenQuietWait: an in-line listen stream waits on its
// listener alone, so everything else must wake it through that channel:
// keep-alives keep coming (the timer re-arms after each), events between
// them go out, and Shutdown ends the stream while its client is still
// there (Shutdown returns without waiting for its context).
func TestHTTPModernListenQuietWait(t *testing.T) {
	srv, _ := newHTTPTestServer(t)
	e := newHTTPEnv(t, srv, &StreamableHTTPOptions{KeepAliveInterval: 2 * time.Millisecond})
	listen := modernBody(5, MethodSubscriptionsListen, map[string]any{"notifications": map[string]any{"toolsListChanged": true}}, nil)
	resp := e.do(context.Background(), http.MethodPost, listen, modernHeaders(MethodSubscriptionsListen, ""))
	defer resp.Body.Close()
	wantStatus(t, resp, 200)
	rd := newSSEReader(t, resp.Body)
	if ack, _, ok := rd.nextMessage(); !ok || ack.Method != NotificationSubscriptionsAck {
		t.Fatalf("first frame %+v", ack)
	}
	for round := range 3 {
		for i := range 3 {
			if ev, ok := rd.next(); !ok || !ev.comment {
				t.Fatalf("round %d: keep-alive %d: got %+v", round, i, ev)
			}
		}
		srv.notifyListChanged(listTools)
		for {
			ev, ok := rd.next()
			if !ok {
				t.Fatalf("round %d: stream ended before the list change", round)
			}
			if ev.comment {
				continue
			}
			if !strings.Contains(ev.data, NotificationToolsListChanged) || !strings.Contains(ev.data, `subscriptionId":5}`) {
				t.Fatalf("round %d: want the tools list change of subscription 5, got %+v", round, ev)
			}
			break
		}
	}
	// Without keep-alives only the drain can wake the stream to end it.
	e2 := newHTTPEnv(t, srv, &StreamableHTTPOptions{KeepAliveInterval: -1})
	resp2 := e2.do(context.Background(), http.MethodPost, listen, modernHeaders(MethodSubscriptionsListen, ""))
	defer resp2.Body.Close()
	wantStatus(t, resp2, 200)
	rd2 := newSSEReader(t, resp2.Body)
	if ack, _, ok := rd2.nextMessage(); !ok || ack.Method != NotificationSubscriptionsAck {
		t.Fatalf("first frame %+v", ack)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e2.h.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v (the listen stream did not end when the handler drained)", err)
	}
	if ev, ok := rd2.next(); ok {
		t.Fatalf("after Shutdown: %+v", ev)
	}
}

// TestSSEEventSeq: the event id formatted in place is eventID's.
func TestSSEEventSeq(t *testing.T) {
	for _, c := range []struct {
		stream string
		seq    uint64
	}{{"0", 0}, {"17", 1}, {"3", 18446744073709551615}} {
		var a, b sseWriter
		a.event(eventID(c.stream, c.seq), []byte(`{"a":1}`))
		b.eventSeq(c.stream, c.seq, []byte(`{"a":1}`))
		if !bytes.Equal(a.buf, b.buf) {
			t.Fatalf("%s-%d: got %q, want %q", c.stream, c.seq, b.buf, a.buf)
		}
	}
}
