package tokenhash

import (
	"crypto/sha256"
	"strings"
	"testing"
)

func TestSHA256(t *testing.T) {
	for _, s := range []string{"", "a", strings.Repeat("tok.", 300)} {
		if got, want := SHA256(s), sha256.Sum256([]byte(s)); got != want {
			t.Errorf("SHA256(%d bytes) = %x, want %x", len(s), got, want)
		}
	}
	long := strings.Repeat("x", 1000)
	if n := testing.AllocsPerRun(100, func() { _ = SHA256(long) }); n != 0 {
		t.Errorf("%v allocations, want 0", n)
	}
}
