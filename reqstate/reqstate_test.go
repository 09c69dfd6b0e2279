package reqstate_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp/reqstate"
)

func statesEqual(a, b reqstate.State) bool {
	return a.Round == b.Round &&
		bytes.Equal(a.Continuation, b.Continuation) &&
		bytes.Equal(a.Answers, b.Answers)
}

func TestRoundTrip(t *testing.T) {
	s := mustNew(t, reqstate.Options{Keys: []reqstate.Key{testKey("k1", 1)}})
	big := []byte(`{"blob":"` + strings.Repeat("x", 8000) + `"}`)
	tests := []struct {
		name string
		b    reqstate.Binding
		st   reqstate.State
		want reqstate.State // zero means same as st
	}{
		{name: "empty state", b: testBinding()},
		{name: "round only", b: testBinding(), st: reqstate.State{Round: 255}},
		{name: "continuation only", b: testBinding(), st: reqstate.State{Round: 1, Continuation: []byte(`[1,2,3]`)}},
		{name: "answers only", b: testBinding(), st: reqstate.State{Round: 2, Answers: []byte(`{"a":1}`)}},
		{name: "both", b: testBinding(), st: testState()},
		{name: "scalar continuation", b: testBinding(), st: reqstate.State{Continuation: []byte(`"s"`)}},
		{name: "large payload", b: testBinding(), st: reqstate.State{Round: 3, Continuation: big, Answers: []byte(`{}`)}},
		{name: "empty binding", b: reqstate.Binding{}, st: testState()},
		{name: "unicode principal", b: reqstate.Binding{Principal: "ユーザー\x00", Method: "sampling/x"}, st: testState()},
		{name: "long principal", b: reqstate.Binding{Principal: strings.Repeat("p", 300), Method: "m"}, st: testState()},
		{
			name: "empty slices are absent",
			b:    testBinding(),
			st:   reqstate.State{Round: 4, Continuation: []byte{}, Answers: []byte{}},
			want: reqstate.State{Round: 4},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := mustSeal(t, s, tt.b, tt.st)
			if len(tok) > reqstate.DefaultMaxTokenBytes {
				t.Fatalf("token length %d exceeds default max", len(tok))
			}
			got, err := s.Open(tt.b, tok)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			want := tt.want
			if want.Round == 0 && want.Continuation == nil && want.Answers == nil {
				want = tt.st
			}
			if !statesEqual(got, want) {
				t.Fatalf("Open = %+v, want %+v", got, want)
			}
			if len(want.Continuation) == 0 && got.Continuation != nil {
				t.Errorf("absent Continuation opened as non-nil %q", got.Continuation)
			}
			if len(want.Answers) == 0 && got.Answers != nil {
				t.Errorf("absent Answers opened as non-nil %q", got.Answers)
			}
		})
	}
}

func TestGoldenToken(t *testing.T) {
	s := goldenSealer(t)
	got, err := s.Open(testBinding(), goldenToken)
	if err != nil {
		t.Fatalf("Open(golden): %v", err)
	}
	if !statesEqual(got, testState()) {
		t.Fatalf("Open(golden) = %+v, want %+v", got, testState())
	}
}

func TestTokenFormat(t *testing.T) {
	key := testKey("format-key", 7)
	s := mustNew(t, reqstate.Options{Keys: []reqstate.Key{key}})
	st := testState()
	tok1 := mustSeal(t, s, testBinding(), st)
	tok2 := mustSeal(t, s, testBinding(), st)
	if tok1 == tok2 {
		t.Fatal("two seals of the same state produced identical tokens")
	}
	if strings.ContainsAny(tok1, "=+/") {
		t.Fatalf("token %q is not unpadded base64url", tok1)
	}
	raw, err := base64.RawURLEncoding.DecodeString(tok1)
	if err != nil {
		t.Fatal(err)
	}
	raw2, _ := base64.RawURLEncoding.DecodeString(tok2)
	if raw[0] != 1 {
		t.Errorf("version byte = %d, want 1", raw[0])
	}
	sum := sha256.Sum256([]byte(key.ID))
	if !bytes.Equal(raw[1:9], sum[:8]) {
		t.Errorf("key id hash = %x, want %x", raw[1:9], sum[:8])
	}
	if bytes.Equal(raw[9:21], raw2[9:21]) {
		t.Error("nonces repeated")
	}
	// expiry(8) round(1) flags(1) + two uvarint(1)-prefixed fields + tag(16)
	wantLen := 21 + 10 + 1 + len(st.Continuation) + 1 + len(st.Answers) + 16
	if len(raw) != wantLen {
		t.Errorf("raw length = %d, want %d", len(raw), wantLen)
	}
	if bytes.Contains(raw, st.Continuation) || bytes.Contains(raw, st.Answers) {
		t.Error("plaintext visible in token")
	}
	if min := mustSeal(t, s, testBinding(), reqstate.State{}); len(min) != reqstate.MinTokenBytes {
		t.Errorf("empty-state token length = %d, want MinTokenBytes = %d", len(min), reqstate.MinTokenBytes)
	}
}

func TestNewValidation(t *testing.T) {
	good := testKey("a", 1)
	tests := []struct {
		name    string
		opts    reqstate.Options
		wantErr bool
	}{
		{name: "defaults generate a key", opts: reqstate.Options{}},
		{name: "one key", opts: reqstate.Options{Keys: []reqstate.Key{good}}},
		{name: "two keys", opts: reqstate.Options{Keys: []reqstate.Key{good, testKey("b", 2)}}},
		{name: "empty id", opts: reqstate.Options{Keys: []reqstate.Key{testKey("", 1)}}, wantErr: true},
		{name: "duplicate id", opts: reqstate.Options{Keys: []reqstate.Key{good, testKey("a", 9)}}, wantErr: true},
		{name: "short secret", opts: reqstate.Options{Keys: []reqstate.Key{{ID: "s", Secret: make([]byte, 16)}}}, wantErr: true},
		{name: "long secret", opts: reqstate.Options{Keys: []reqstate.Key{{ID: "s", Secret: make([]byte, 33)}}}, wantErr: true},
		{name: "nil secret", opts: reqstate.Options{Keys: []reqstate.Key{{ID: "s"}}}, wantErr: true},
		// Negative values the fields give no meaning are the defaults
		// (the options convention of package pmcp): the token opens.
		{name: "negative TTL is DefaultTTL", opts: reqstate.Options{TTL: -time.Second}},
		{name: "negative max is DefaultMaxTokenBytes", opts: reqstate.Options{MaxTokenBytes: -1}},
		{name: "max below minimum token", opts: reqstate.Options{MaxTokenBytes: reqstate.MinTokenBytes - 1}, wantErr: true},
		{name: "max at minimum token", opts: reqstate.Options{MaxTokenBytes: reqstate.MinTokenBytes}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := reqstate.New(tt.opts)
			if tt.wantErr {
				if err == nil {
					t.Fatal("New succeeded, want error")
				}
				for _, k := range tt.opts.Keys {
					if len(k.Secret) > 0 && strings.Contains(err.Error(), string(k.Secret)) {
						t.Fatalf("error %q contains the secret", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			tok := mustSeal(t, s, testBinding(), reqstate.State{})
			if _, err := s.Open(testBinding(), tok); err != nil {
				t.Fatalf("Open: %v", err)
			}
		})
	}
}

func TestGeneratedKeysDiffer(t *testing.T) {
	a := mustNew(t, reqstate.Options{})
	b := mustNew(t, reqstate.Options{})
	tok := mustSeal(t, a, testBinding(), testState())
	// Both generated keys share the id "generated", so b finds the key id but
	// authentication fails: separate processes with generated keys do not
	// interoperate, which is why replicas must share a ring.
	if _, err := b.Open(testBinding(), tok); !errors.Is(err, reqstate.ErrInvalid) {
		t.Fatalf("Open with another generated key: err = %v, want ErrInvalid", err)
	}
}

func TestRotation(t *testing.T) {
	oldKey := testKey("2026-01", 1)
	newKey := testKey("2026-02", 2)
	oldSealer := mustNew(t, reqstate.Options{Keys: []reqstate.Key{oldKey}})
	oldTok := mustSeal(t, oldSealer, testBinding(), testState())

	tests := []struct {
		name    string
		ring    []reqstate.Key
		wantErr error
	}{
		{name: "old key only", ring: []reqstate.Key{oldKey}},
		{name: "old key second", ring: []reqstate.Key{newKey, oldKey}},
		{name: "old key removed", ring: []reqstate.Key{newKey}, wantErr: reqstate.ErrUnknownKey},
		{
			name:    "same id different secret",
			ring:    []reqstate.Key{{ID: oldKey.ID, Secret: newKey.Secret}},
			wantErr: reqstate.ErrInvalid,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustNew(t, reqstate.Options{Keys: tt.ring})
			got, err := s.Open(testBinding(), oldTok)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Open: err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if !statesEqual(got, testState()) {
				t.Fatalf("Open = %+v", got)
			}
			// New tokens are sealed with ring[0] and do not open with the
			// old key alone.
			fresh := mustSeal(t, s, testBinding(), testState())
			_, err = oldSealer.Open(testBinding(), fresh)
			if tt.ring[0].ID != oldKey.ID && !errors.Is(err, reqstate.ErrUnknownKey) {
				t.Fatalf("old-only sealer opened token from new ring: err = %v", err)
			}
		})
	}
}

func TestExpiry(t *testing.T) {
	const ttl = time.Minute
	tests := []struct {
		name    string
		advance time.Duration
		wantErr error
	}{
		{name: "immediately", advance: 0},
		{name: "clock went backwards", advance: -time.Hour},
		{name: "just before expiry", advance: ttl - time.Nanosecond},
		{name: "at expiry", advance: ttl, wantErr: reqstate.ErrExpired},
		{name: "long after", advance: 24 * time.Hour, wantErr: reqstate.ErrExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{t: epoch}
			s := mustNew(t, reqstate.Options{Keys: []reqstate.Key{testKey("k", 1)}, TTL: ttl, Now: clock.Now})
			tok := mustSeal(t, s, testBinding(), testState())
			clock.Advance(tt.advance)
			got, err := s.Open(testBinding(), tok)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if errors.Is(err, reqstate.ErrInvalid) {
					t.Fatalf("expired error also matches ErrInvalid: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if !statesEqual(got, testState()) {
				t.Fatalf("Open = %+v", got)
			}
		})
	}
}

func TestDefaultTTL(t *testing.T) {
	clock := &fakeClock{t: epoch}
	s := mustNew(t, reqstate.Options{Now: clock.Now})
	tok := mustSeal(t, s, testBinding(), reqstate.State{})
	clock.Advance(reqstate.DefaultTTL - time.Nanosecond)
	if _, err := s.Open(testBinding(), tok); err != nil {
		t.Fatalf("before DefaultTTL: %v", err)
	}
	clock.Advance(time.Nanosecond)
	if _, err := s.Open(testBinding(), tok); !errors.Is(err, reqstate.ErrExpired) {
		t.Fatalf("at DefaultTTL: err = %v, want ErrExpired", err)
	}
}

// Expiry must only be reported for authentic tokens: an expired token that is
// tampered with or presented under another binding is ErrInvalid.
func TestExpiryCheckedAfterAuth(t *testing.T) {
	clock := &fakeClock{t: epoch}
	s := mustNew(t, reqstate.Options{Keys: []reqstate.Key{testKey("k", 1)}, TTL: time.Second, Now: clock.Now})
	tok := mustSeal(t, s, testBinding(), testState())
	clock.Advance(time.Hour)

	other := testBinding()
	other.Principal = "mallory"
	if _, err := s.Open(other, tok); !errors.Is(err, reqstate.ErrInvalid) {
		t.Errorf("expired token, other principal: err = %v, want ErrInvalid", err)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(tok)
	raw[21] ^= 0xff // first ciphertext byte: the expiry
	if _, err := s.Open(testBinding(), base64.RawURLEncoding.EncodeToString(raw)); !errors.Is(err, reqstate.ErrInvalid) {
		t.Errorf("expired token, tampered expiry: err = %v, want ErrInvalid", err)
	}
}

func TestTamperBytes(t *testing.T) {
	key := testKey("k", 1)
	s := mustNew(t, reqstate.Options{Keys: []reqstate.Key{key}})
	tok := mustSeal(t, s, testBinding(), testState())
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		t.Fatal(err)
	}
	for i := range raw {
		for _, mask := range []byte{0x01, 0x80, 0xff} {
			mut := bytes.Clone(raw)
			mut[i] ^= mask
			_, err := s.Open(testBinding(), base64.RawURLEncoding.EncodeToString(mut))
			// Bytes 1..8 are the (unauthenticated) key id hash: changing
			// them names a key that is not in the ring, which is by
			// definition ErrUnknownKey. Every other byte is ErrInvalid.
			want := reqstate.ErrInvalid
			if i >= 1 && i <= 8 {
				want = reqstate.ErrUnknownKey
			}
			if !errors.Is(err, want) {
				t.Fatalf("byte %d ^ %#x: err = %v, want %v", i, mask, err, want)
			}
		}
	}
}

func TestTamperString(t *testing.T) {
	s := mustNew(t, reqstate.Options{Keys: []reqstate.Key{testKey("k", 1)}})
	tok := mustSeal(t, s, testBinding(), testState())
	raw, _ := base64.RawURLEncoding.DecodeString(tok)

	// A token whose last character differs only in the unused low bits
	// decodes to the same bytes under lenient base64. An empty state gives a
	// 47-byte token, which leaves 2 unused bits in the last character.
	short := mustSeal(t, s, testBinding(), reqstate.State{Round: 1})
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := strings.IndexByte(alphabet, short[len(short)-1])
	nonCanonical := short[:len(short)-1] + string(alphabet[last^1])
	if a, err := base64.RawURLEncoding.DecodeString(nonCanonical); err != nil ||
		!bytes.Equal(a, mustDecode(t, short)) {
		t.Fatalf("test setup: non-canonical token does not decode leniently to the same bytes (%v)", err)
	}
	if _, err := s.Open(testBinding(), short); err != nil {
		t.Fatalf("canonical short token: %v", err)
	}

	tests := []struct {
		name  string
		token string
	}{
		{"append -TAMPERED", tok + "-TAMPERED"},
		{"prepend", "A" + tok},
		{"append padding", tok + "=="},
		{"std alphabet", strings.NewReplacer("-", "+", "_", "/").Replace(tok) + "+/"},
		{"embedded newline", tok[:10] + "\n" + tok[10:]},
		{"embedded CR", tok[:10] + "\r" + tok[10:]},
		{"embedded space", tok[:10] + " " + tok[10:]},
		{"non-canonical trailing bits", nonCanonical},
		{"empty", ""},
		{"garbage", "not a token at all, definitely not base64!!"},
		{"truncated by one", tok[:len(tok)-1]},
		{"truncated half", tok[:len(tok)/2]},
		{"truncated tag", base64.RawURLEncoding.EncodeToString(raw[:len(raw)-1])},
		{"header only", base64.RawURLEncoding.EncodeToString(raw[:21])},
		{"extra byte", base64.RawURLEncoding.EncodeToString(append(bytes.Clone(raw), 0))},
		{"version 2", base64.RawURLEncoding.EncodeToString(append([]byte{2}, raw[1:]...))},
		{"version 0", base64.RawURLEncoding.EncodeToString(append([]byte{0}, raw[1:]...))},
		{"zero tag", base64.RawURLEncoding.EncodeToString(append(bytes.Clone(raw[:len(raw)-16]), make([]byte, 16)...))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.token == tok {
				t.Fatal("test case did not modify the token")
			}
			st, err := s.Open(testBinding(), tt.token)
			if !errors.Is(err, reqstate.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			if !statesEqual(st, reqstate.State{}) {
				t.Fatalf("non-zero state returned with error: %+v", st)
			}
		})
	}
	// Every strict prefix is rejected, never accepted.
	for n := 0; n < len(tok); n++ {
		if _, err := s.Open(testBinding(), tok[:n]); err == nil {
			t.Fatalf("prefix of length %d opened", n)
		}
	}
}

func mustDecode(t *testing.T, tok string) []byte {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestBindingMismatch(t *testing.T) {
	s := mustNew(t, reqstate.Options{Keys: []reqstate.Key{testKey("k", 1)}})
	base := testBinding()
	tok := mustSeal(t, s, base, testState())

	mod := func(f func(*reqstate.Binding)) reqstate.Binding {
		b := base
		f(&b)
		return b
	}
	tests := []struct {
		name string
		b    reqstate.Binding
	}{
		{"other principal", mod(func(b *reqstate.Binding) { b.Principal = "user-2" })},
		{"empty principal", mod(func(b *reqstate.Binding) { b.Principal = "" })},
		{"principal prefix", mod(func(b *reqstate.Binding) { b.Principal = "user-" })},
		{"other method", mod(func(b *reqstate.Binding) { b.Method = "prompts/get" })},
		{"other params", mod(func(b *reqstate.Binding) { b.ParamsDigest = reqstate.DigestParams([]byte(`{"name":"cancel"}`)) })},
		{"zero params digest", mod(func(b *reqstate.Binding) { b.ParamsDigest = [32]byte{} })},
		// Length prefixes stop bytes from moving between fields.
		{"shifted boundary", mod(func(b *reqstate.Binding) { b.Principal = "user-1t"; b.Method = "ools/call" })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := s.Open(tt.b, tok); !errors.Is(err, reqstate.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestOversize(t *testing.T) {
	const limit = 512
	s := mustNew(t, reqstate.Options{Keys: []reqstate.Key{testKey("k", 1)}, MaxTokenBytes: limit})

	t.Run("open rejects before decoding", func(t *testing.T) {
		tok := mustSeal(t, s, testBinding(), testState())
		long := tok + strings.Repeat("A", limit) // would be a decoding error anyway
		if _, err := s.Open(testBinding(), long); !errors.Is(err, reqstate.ErrInvalid) {
			t.Fatalf("err = %v, want ErrInvalid", err)
		}
		// A valid token longer than the limit is rejected too.
		big := mustNew(t, reqstate.Options{Keys: []reqstate.Key{testKey("k", 1)}})
		bigTok := mustSeal(t, big, testBinding(), reqstate.State{Continuation: []byte(`"` + strings.Repeat("x", 2*limit) + `"`)})
		if _, err := s.Open(testBinding(), bigTok); !errors.Is(err, reqstate.ErrInvalid) {
			t.Fatalf("valid oversize token: err = %v, want ErrInvalid", err)
		}
		// Rejection happens before decoding or crypto: no buffer is
		// allocated at all.
		huge := strings.Repeat("A", 1<<20)
		allocs := testing.AllocsPerRun(100, func() {
			if _, err := s.Open(testBinding(), huge); err == nil {
				t.Fatal("huge token opened")
			}
		})
		if allocs != 0 {
			t.Fatalf("oversize rejection allocated %.1f times; want 0 (no decode, no crypto)", allocs)
		}
	})

	t.Run("seal refuses", func(t *testing.T) {
		// Find the largest continuation that fits and check the boundary.
		fits := 0
		for n := 1; n < limit; n++ {
			st := reqstate.State{Continuation: []byte(`"` + strings.Repeat("x", n) + `"`)}
			tok, err := s.Seal(testBinding(), st)
			if errors.Is(err, reqstate.ErrTooLarge) {
				break
			}
			if err != nil {
				t.Fatalf("n=%d: %v", n, err)
			}
			if len(tok) > limit {
				t.Fatalf("n=%d: token length %d exceeds limit %d", n, len(tok), limit)
			}
			fits = n
		}
		if fits == 0 || fits >= limit-1 {
			t.Fatalf("unexpected boundary %d", fits)
		}
		st := reqstate.State{Continuation: []byte(`"` + strings.Repeat("x", fits+1) + `"`)}
		if _, err := s.Seal(testBinding(), st); !errors.Is(err, reqstate.ErrTooLarge) {
			t.Fatalf("just over the limit: err = %v, want ErrTooLarge", err)
		}
	})
}

func TestSealBadState(t *testing.T) {
	s := mustNew(t, reqstate.Options{Keys: []reqstate.Key{testKey("k", 1)}})
	tests := []struct {
		name string
		st   reqstate.State
	}{
		{"continuation not JSON", reqstate.State{Continuation: []byte(`{`)}},
		{"continuation two values", reqstate.State{Continuation: []byte(`1 2`)}},
		{"answers not JSON", reqstate.State{Answers: []byte(`nope`)}},
		{"answers array", reqstate.State{Answers: []byte(`[{}]`)}},
		{"answers string", reqstate.State{Answers: []byte(`"{}"`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := s.Seal(testBinding(), tt.st); !errors.Is(err, reqstate.ErrBadState) {
				t.Fatalf("err = %v, want ErrBadState", err)
			}
		})
	}
}

func TestOpenedSlicesIndependent(t *testing.T) {
	s := mustNew(t, reqstate.Options{Keys: []reqstate.Key{testKey("k", 1)}})
	tok := mustSeal(t, s, testBinding(), testState())
	st, err := s.Open(testBinding(), tok)
	if err != nil {
		t.Fatal(err)
	}
	_ = append(st.Continuation, "XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"...)
	if !bytes.Equal(st.Answers, testState().Answers) {
		t.Fatalf("appending to Continuation changed Answers: %q", st.Answers)
	}
}

func TestErrorsDistinct(t *testing.T) {
	sentinels := []error{reqstate.ErrUnknownKey, reqstate.ErrExpired, reqstate.ErrInvalid, reqstate.ErrTooLarge, reqstate.ErrBadState}
	for i, a := range sentinels {
		for j, b := range sentinels {
			if i != j && errors.Is(a, b) {
				t.Errorf("%v matches %v", a, b)
			}
		}
	}
}

func TestConcurrent(t *testing.T) {
	s := mustNew(t, reqstate.Options{Keys: []reqstate.Key{testKey("new", 2), testKey("old", 1)}})
	old := mustNew(t, reqstate.Options{Keys: []reqstate.Key{testKey("old", 1)}})
	oldTok := mustSeal(t, old, testBinding(), testState())
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Go(func() {
			b := testBinding()
			b.Principal = strings.Repeat("u", g)
			for i := range 200 {
				st := reqstate.State{Round: uint8(i), Answers: []byte(`{"i":1}`)}
				tok, err := s.Seal(b, st)
				if err != nil {
					errs <- err
					return
				}
				got, err := s.Open(b, tok)
				if err != nil || !statesEqual(got, st) {
					errs <- errors.Join(errors.New("round trip failed"), err)
					return
				}
				if _, err := s.Open(testBinding(), oldTok); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestDigestParams(t *testing.T) {
	d := reqstate.DigestParams
	b := func(s string) []byte { return []byte(s) }
	if d(b("ab"), b("c")) == d(b("a"), b("bc")) {
		t.Error(`("ab","c") == ("a","bc")`)
	}
	if d() == d(b("")) {
		t.Error(`() == ("")`)
	}
	if d(b("a")) == d(b("a"), nil) {
		t.Error(`("a") == ("a", nil)`)
	}
	if d(b("x"), b("y")) != d(b("x"), b("y")) {
		t.Error("not deterministic")
	}
	if d(b("abc")) == sha256.Sum256(b("abc")) {
		t.Error("digest is a bare SHA-256 of the input")
	}
}

func TestSecretsNotRetained(t *testing.T) {
	key := testKey("k", 1)
	s := mustNew(t, reqstate.Options{Keys: []reqstate.Key{key}})
	clear(key.Secret) // New must have copied what it needs
	tok := mustSeal(t, s, testBinding(), testState())
	fresh := mustNew(t, reqstate.Options{Keys: []reqstate.Key{testKey("k", 1)}})
	if _, err := fresh.Open(testBinding(), tok); err != nil {
		t.Fatalf("token sealed after clearing the caller's secret does not open with the original key: %v", err)
	}
}
