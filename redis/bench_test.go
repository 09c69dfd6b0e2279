package redis

import (
	"fmt"
	"testing"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/tasks"
)

// Loopback figures for the report: one Append is one script round trip.
func BenchmarkEventStoreAppend(b *testing.B) {
	s := NewEventStore(needRedis(b), EventStoreOptions{Prefix: uniquePrefix("bench")})
	data := []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`)
	b.ReportAllocs()
	var seq uint64
	for b.Loop() {
		seq++
		if err := s.Append(b.Context(), "sess", fmt.Sprint(seq%8), seq, data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMemoryEventStoreAppend(b *testing.B) {
	s := pmcp.NewMemoryEventStore(pmcp.MemoryEventStoreOptions{})
	data := []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`)
	b.ReportAllocs()
	var seq uint64
	for b.Loop() {
		seq++
		_ = s.Append(b.Context(), "sess", fmt.Sprint(seq%8), seq, data)
	}
}

func BenchmarkTaskStoreGet(b *testing.B) {
	s, err := NewTaskStore(b.Context(), needRedis(b), TaskStoreOptions{Prefix: uniquePrefix("bench"), Tasks: tasks.Options{SweepInterval: -1}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	task, err := s.Create(b.Context(), "o", tasks.Spec{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Get(b.Context(), "o", task.ID); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTaskStoreUpdate(b *testing.B) {
	s, err := NewTaskStore(b.Context(), needRedis(b), TaskStoreOptions{Prefix: uniquePrefix("bench"), Tasks: tasks.Options{SweepInterval: -1}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	task, err := s.Create(b.Context(), "o", tasks.Spec{})
	if err != nil {
		b.Fatal(err)
	}
	msgs := []string{"a", "b"}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if _, err := s.Update(b.Context(), "o", task.ID, tasks.Change{StatusMessage: &msgs[i%2]}); err != nil {
			b.Fatal(err)
		}
	}
}
