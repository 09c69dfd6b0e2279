package reqstate_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/gopmcp/pmcp/reqstate"
)

// Tokens sealed once with goldenSealer for testBinding (see also goldenToken).
// They are literals, not sealed at test time, because every fuzz worker
// process runs the setup again and fresh tokens (random nonces) would differ
// between the coordinator and the workers.
var fuzzValid = map[string]reqstate.State{
	goldenToken: testState(),
	"ASMemy91fbjUA61MP4ccfsijRtcojVwwaTV6lpBY95OnfophDpmbTE5rASVpuRk":                                     {},
	"ASMemy91fbjUf3B6i20nHt3iJnnSkJkR_Ifhv-XvGBm-rPsLjjNtN-d2ZIGNiCYNmjZpVMEjb6HZ":                        {Round: 2, Continuation: []byte(`{"k":"v"}`)},
	"ASMemy91fbjUdVcUoVIy3UJ5sV-KvV8sz4WcVnvAm8fLfMH88WAAA3Mhkkkb6-XWfxl8r7qmN_PSBnwQT1JwfKOhVFhDu1ZsCSw": {Round: 3, Answers: []byte(`{"a":{"action":"decline"}}`)},
}

// FuzzOpen feeds arbitrary strings to Open. It must never panic, must always
// return exactly one of the three documented errors, and may only succeed for
// the tokens in fuzzValid, which were produced by Seal, in which case the
// state must be the sealed one. Forging any other accepted token would
// require breaking AES-GCM (encoding is canonical, so no alternative spelling
// of a valid token is accepted either).
func FuzzOpen(f *testing.F) {
	s := goldenSealer(f)
	b := testBinding()
	valid := fuzzValid
	for tok := range valid {
		f.Add(tok)
		f.Add(tok[:len(tok)-1])
		f.Add(tok + "-TAMPERED")
	}
	f.Add("")
	f.Add("AQ")

	f.Fuzz(func(t *testing.T, token string) {
		st, err := s.Open(b, token)
		if _, ok := valid[token]; ok && err != nil {
			t.Fatalf("Open(valid token %q): %v", token, err)
		}
		if err == nil {
			want, ok := valid[token]
			if !ok {
				t.Fatalf("Open accepted a token Seal never produced: %q -> %+v", token, st)
			}
			if st.Round != want.Round || !bytes.Equal(st.Continuation, want.Continuation) || !bytes.Equal(st.Answers, want.Answers) {
				t.Fatalf("Open(%q) = %+v, want %+v", token, st, want)
			}
			return
		}
		n := 0
		for _, sentinel := range []error{reqstate.ErrUnknownKey, reqstate.ErrExpired, reqstate.ErrInvalid} {
			if errors.Is(err, sentinel) {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("Open(%q) error %v matches %d sentinels, want 1", token, err, n)
		}
		if st.Round != 0 || st.Continuation != nil || st.Answers != nil {
			t.Fatalf("Open(%q) returned state %+v with error %v", token, st, err)
		}
		if errors.Is(err, reqstate.ErrExpired) {
			// The clock is fixed and every valid token is fresh, so an
			// expiry verdict would mean unauthenticated data was trusted.
			t.Fatalf("Open(%q) = ErrExpired for a token Seal never produced", token)
		}
	})
}

// FuzzRoundTrip checks that anything Seal accepts opens to the same state
// under the same binding and never under a different principal.
func FuzzRoundTrip(f *testing.F) {
	s := goldenSealer(f)
	f.Add("user-1", "tools/call", []byte(`{"name":"x"}`), uint8(1), []byte(`{"step":1}`), []byte(`{"q":true}`))
	f.Add("", "", []byte{}, uint8(0), []byte{}, []byte{})
	f.Add("\x00", "m", []byte{0xff}, uint8(255), []byte(`[1,2]`), []byte(`{}`))

	f.Fuzz(func(t *testing.T, principal, method string, params []byte, round uint8, cont, answers []byte) {
		b := reqstate.Binding{Principal: principal, Method: method, ParamsDigest: reqstate.DigestParams(params)}
		st := reqstate.State{Round: round, Continuation: cont, Answers: answers}
		tok, err := s.Seal(b, st)
		if errors.Is(err, reqstate.ErrBadState) || errors.Is(err, reqstate.ErrTooLarge) {
			return
		}
		if err != nil {
			t.Fatalf("Seal: %v", err)
		}
		got, err := s.Open(b, tok)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if got.Round != round || !bytes.Equal(got.Continuation, cont) || !bytes.Equal(got.Answers, answers) {
			t.Fatalf("Open = %+v, want %+v", got, st)
		}
		other := b
		other.Principal += "x"
		if _, err := s.Open(other, tok); !errors.Is(err, reqstate.ErrInvalid) {
			t.Fatalf("Open under another principal: err = %v, want ErrInvalid", err)
		}
	})
}
