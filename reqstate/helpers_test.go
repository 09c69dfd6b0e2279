package reqstate_test

import (
	"testing"
	"time"

	"github.com/gopmcp/pmcp/reqstate"
)

// testKey returns a deterministic key whose secret bytes are fill, fill+1, ...
func testKey(id string, fill byte) reqstate.Key {
	secret := make([]byte, reqstate.KeySize)
	for i := range secret {
		secret[i] = fill + byte(i)
	}
	return reqstate.Key{ID: id, Secret: secret}
}

// fakeClock is a settable clock for Options.Now.
type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time          { return c.t }
func (c *fakeClock) Advance(d time.Duration) { c.t = c.t.Add(d) }

var epoch = time.Unix(1_800_000_000, 0)

func mustNew(t testing.TB, opts reqstate.Options) *reqstate.Sealer {
	t.Helper()
	s, err := reqstate.New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func mustSeal(t testing.TB, s *reqstate.Sealer, b reqstate.Binding, st reqstate.State) string {
	t.Helper()
	tok, err := s.Seal(b, st)
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	return tok
}

func testBinding() reqstate.Binding {
	return reqstate.Binding{
		Principal:    "user-1",
		Method:       "tools/call",
		ParamsDigest: reqstate.DigestParams([]byte(`{"name":"book"}`)),
	}
}

func testState() reqstate.State {
	return reqstate.State{
		Round:        1,
		Continuation: []byte(`{"step":"confirm"}`),
		Answers:      []byte(`{"q1":{"action":"accept"}}`),
	}
}

// Golden token: sealed once with goldenKey() at epoch for testBinding() and
// testState(). It pins the version-1 wire format and is also a fuzz seed.
const goldenToken = "ASMemy91fbjUNvJOlTA9XajNftGrL_aUljXXv7zp0cBKfztrvwS_MPV1UxJsBBu4E3ZdGs8zkVQR8GK4wHywaX_RsUzRkiCL7tk9H-KOK-diAEzMePMZP-KKk6wv"

func goldenKey() reqstate.Key { return testKey("fuzz-key", 0) }

func goldenSealer(t testing.TB) *reqstate.Sealer {
	return mustNew(t, reqstate.Options{
		Keys: []reqstate.Key{goldenKey()},
		Now:  func() time.Time { return epoch },
	})
}
