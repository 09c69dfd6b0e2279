package reqstate_test

import (
	"strings"
	"testing"

	"github.com/gopmcp/pmcp/reqstate"
)

var benchSizes = []struct {
	name string
	st   reqstate.State
}{
	{"empty", reqstate.State{Round: 1}},
	{"small", testState()},
	{"1KiB", reqstate.State{
		Round:        2,
		Continuation: []byte(`{"blob":"` + strings.Repeat("x", 1000) + `"}`),
		Answers:      []byte(`{"q1":{"action":"accept","content":{"seat":"12A"}}}`),
	}},
}

func BenchmarkSeal(b *testing.B) {
	s := mustNew(b, reqstate.Options{Keys: []reqstate.Key{testKey("bench", 1)}})
	bind := testBinding()
	for _, bs := range benchSizes {
		b.Run(bs.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Seal(bind, bs.st); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkOpen(b *testing.B) {
	s := mustNew(b, reqstate.Options{Keys: []reqstate.Key{testKey("bench", 1), testKey("old", 2)}})
	bind := testBinding()
	for _, bs := range benchSizes {
		tok := mustSeal(b, s, bind, bs.st)
		b.Run(bs.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Open(bind, tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("reject-tampered", func(b *testing.B) {
		tok := mustSeal(b, s, bind, testState()) + "-TAMPERED"
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Open(bind, tok); err == nil {
				b.Fatal("opened")
			}
		}
	})
}
