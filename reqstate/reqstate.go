package reqstate

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Defaults applied by [New] to zero-valued [Options] fields.
const (
	DefaultTTL           = 5 * time.Minute
	DefaultMaxTokenBytes = 16 << 10
)

// Errors returned by [Sealer.Open] and [Sealer.Seal]. Open wraps exactly one of
// ErrUnknownKey, ErrExpired and ErrInvalid; test with errors.Is.
var (
	// ErrUnknownKey reports a well-formed token sealed with a key that is not
	// in the ring. Treat the request as a fresh first call (re-elicit).
	ErrUnknownKey = errors.New("reqstate: unknown key")

	// ErrExpired reports an authentic token whose expiry has passed. Treat
	// the request as a fresh first call (re-elicit).
	ErrExpired = errors.New("reqstate: expired")

	// ErrInvalid reports any other failure to open a token: bad encoding,
	// wrong version or length, failed authentication (tampering, or a
	// different principal, method or params) or malformed plaintext. Reply
	// with a JSON-RPC error.
	ErrInvalid = errors.New("reqstate: invalid request state")

	// ErrTooLarge is returned by Seal when the token would exceed
	// Options.MaxTokenBytes.
	ErrTooLarge = errors.New("reqstate: request state too large")

	// ErrBadState is returned by Seal when State.Continuation is not valid
	// JSON or State.Answers is not a JSON object.
	ErrBadState = errors.New("reqstate: malformed state")
)

// Preallocated detailed errors, so that rejecting garbage never allocates.
var (
	errTooLong      = fmt.Errorf("%w: token exceeds size limit", ErrInvalid)
	errTooShort     = fmt.Errorf("%w: token too short", ErrInvalid)
	errEncoding     = fmt.Errorf("%w: malformed encoding", ErrInvalid)
	errVersion      = fmt.Errorf("%w: unsupported version", ErrInvalid)
	errAuth         = fmt.Errorf("%w: authentication failed", ErrInvalid)
	errPlaintext    = fmt.Errorf("%w: malformed payload", ErrInvalid)
	errContinuation = fmt.Errorf("%w: continuation is not valid JSON", ErrBadState)
	errAnswers      = fmt.Errorf("%w: answers is not a JSON object", ErrBadState)
)

// Token layout constants (see the package documentation).
const (
	version   = 1
	kidSize   = 8
	nonceSize = 12
	tagSize   = 16
	headerLen = 1 + kidSize + nonceSize

	// expiry(8) | round(1) | flags(1)
	fixedPlaintextLen = 8 + 1 + 1
	minRawLen         = headerLen + fixedPlaintextLen + tagSize

	flagContinuation = 1 << 0
	flagAnswers      = 1 << 1
	knownFlags       = flagContinuation | flagAnswers
)

// enc is the token encoding. Strict rejects non-zero trailing bits; Open also
// rejects line breaks (which base64 otherwise skips), so encoding is canonical.
var enc = base64.RawURLEncoding.Strict()

// MinTokenBytes is the length of the smallest possible token (a State with
// no Continuation and no Answers): 47 raw bytes in unpadded base64.
// Options.MaxTokenBytes must be at least this.
const MinTokenBytes = 63

// Compile-time check that MinTokenBytes matches the layout.
var _ [MinTokenBytes - (minRawLen*8+5)/6]struct{}
var _ [(minRawLen*8+5)/6 - MinTokenBytes]struct{}

// Options configures a [Sealer].
type Options struct {
	// Keys is the key ring. Keys[0] seals new tokens; every key opens. IDs
	// must be non-empty and unique, secrets exactly KeySize bytes. If empty,
	// New generates one random key, which is fine for a single process but
	// not for replicas, which must share a ring.
	Keys []Key

	// TTL is how long a sealed token stays valid. Zero (or negative) means
	// DefaultTTL.
	TTL time.Duration

	// MaxTokenBytes bounds the length of the token string. Seal fails with
	// ErrTooLarge above it; Open rejects longer tokens before decoding. Zero
	// (or negative) means DefaultMaxTokenBytes; a positive value below
	// MinTokenBytes is rejected by New.
	MaxTokenBytes int

	// Now is the clock. Nil means time.Now.
	Now func() time.Time
}

// Binding is what a token is bound to. It is authenticated (as AAD) but not
// stored in the token: Open must be given the same Binding that Seal was.
type Binding struct {
	// Principal identifies the authenticated caller (for example the OAuth
	// subject or a session identity). May be empty if there is none.
	Principal string
	// Method is the JSON-RPC method of the request.
	Method string
	// ParamsDigest is a digest of the request params excluding
	// inputResponses and requestState; see DigestParams.
	ParamsDigest [32]byte
}

// State is the server's resumable state carried across rounds.
type State struct {
	// Round counts completed input rounds.
	Round uint8
	// Continuation is handler-defined raw JSON, or nil.
	Continuation []byte
	// Answers is the raw JSON object of input responses accumulated over
	// previous rounds, or nil.
	Answers []byte
}

// DigestParams returns SHA-256 over a domain-separation label followed by
// each part prefixed with its 8-byte big-endian length, so that
// ("ab", "c") and ("a", "bc") produce different digests. Callers typically
// pass a canonical encoding of the request params (without inputResponses
// and requestState), optionally with further context such as a tool name.
func DigestParams(parts ...[]byte) [32]byte {
	h := sha256.New()
	h.Write([]byte("pmcp/reqstate/params/v1\x00"))
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

type ringKey struct {
	kid  [kidSize]byte
	aead cipher.AEAD
}

// Sealer seals and opens request state tokens. It is immutable after New
// and safe for concurrent use.
type Sealer struct {
	ring     []ringKey
	ttl      time.Duration
	maxToken int
	now      func() time.Time
}

// New validates opts and returns a Sealer. The AES-GCM instances for every
// key are built here; the Sealer keeps no reference to opts.Keys or their
// Secret slices (only the expanded AES key schedules), so callers may clear
// the secrets after New returns.
func New(opts Options) (*Sealer, error) {
	s := &Sealer{
		ttl:      opts.TTL,
		maxToken: opts.MaxTokenBytes,
		now:      opts.Now,
	}
	if s.ttl <= 0 {
		s.ttl = DefaultTTL
	}
	if s.maxToken <= 0 {
		s.maxToken = DefaultMaxTokenBytes
	}
	if s.maxToken < MinTokenBytes {
		return nil, fmt.Errorf("reqstate: MaxTokenBytes %d is below the minimum token size %d", s.maxToken, MinTokenBytes)
	}
	if s.now == nil {
		s.now = time.Now
	}

	keys := opts.Keys
	if len(keys) == 0 {
		k, err := NewKey("generated")
		if err != nil {
			return nil, err
		}
		keys = []Key{k}
	}
	s.ring = make([]ringKey, 0, len(keys))
	ids := make(map[string]bool, len(keys))
	for i, k := range keys {
		if k.ID == "" {
			return nil, fmt.Errorf("reqstate: key %d has an empty id", i)
		}
		if ids[k.ID] {
			return nil, fmt.Errorf("reqstate: duplicate key id %q", k.ID)
		}
		ids[k.ID] = true
		if len(k.Secret) != KeySize {
			return nil, fmt.Errorf("reqstate: key %q: secret is %d bytes, want %d", k.ID, len(k.Secret), KeySize)
		}
		rk := ringKey{kid: keyIDHash(k.ID)}
		for _, other := range s.ring {
			if other.kid == rk.kid {
				return nil, fmt.Errorf("reqstate: key id %q collides with another key's id hash", k.ID)
			}
		}
		block, err := aes.NewCipher(k.Secret)
		if err != nil {
			return nil, fmt.Errorf("reqstate: key %q: %w", k.ID, err)
		}
		rk.aead, err = cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("reqstate: key %q: %w", k.ID, err)
		}
		s.ring = append(s.ring, rk)
	}
	return s, nil
}

func keyIDHash(id string) [kidSize]byte {
	sum := sha256.Sum256([]byte(id))
	return [kidSize]byte(sum[:kidSize])
}

func uvarintLen(x int) int {
	n := 1
	for u := uint64(x); u >= 0x80; u >>= 7 {
		n++
	}
	return n
}

func aadLen(b *Binding) int {
	return 1 +
		uvarintLen(len(b.Principal)) + len(b.Principal) +
		uvarintLen(len(b.Method)) + len(b.Method) +
		len(b.ParamsDigest)
}

func appendAAD(dst []byte, b *Binding) []byte {
	dst = append(dst, version)
	dst = binary.AppendUvarint(dst, uint64(len(b.Principal)))
	dst = append(dst, b.Principal...)
	dst = binary.AppendUvarint(dst, uint64(len(b.Method)))
	dst = append(dst, b.Method...)
	return append(dst, b.ParamsDigest[:]...)
}

// isJSONObject reports whether valid JSON data is an object.
func isJSONObject(data []byte) bool {
	data = bytes.TrimLeft(data, " \t\r\n")
	return len(data) > 0 && data[0] == '{'
}

// Seal encrypts st into a token bound to b that expires after the
// configured TTL. Empty Continuation or Answers are treated as absent.
// It returns ErrBadState if Continuation is not valid JSON or Answers is not
// a JSON object, and ErrTooLarge if the token would exceed MaxTokenBytes.
func (s *Sealer) Seal(b Binding, st State) (string, error) {
	ptLen := fixedPlaintextLen
	var flags byte
	if len(st.Continuation) > 0 {
		flags |= flagContinuation
		ptLen += uvarintLen(len(st.Continuation)) + len(st.Continuation)
	}
	if len(st.Answers) > 0 {
		flags |= flagAnswers
		ptLen += uvarintLen(len(st.Answers)) + len(st.Answers)
	}
	rawLen := headerLen + ptLen + tagSize
	encLen := enc.EncodedLen(rawLen)
	// Compare in a way that cannot overflow for absurd inputs.
	if ptLen > s.maxToken || encLen > s.maxToken {
		return "", ErrTooLarge
	}
	if flags&flagContinuation != 0 && !json.Valid(st.Continuation) {
		return "", errContinuation
	}
	if flags&flagAnswers != 0 && (!json.Valid(st.Answers) || !isJSONObject(st.Answers)) {
		return "", errAnswers
	}

	key := &s.ring[0]
	// One buffer: raw token | AAD | encoded token.
	aLen := aadLen(&b)
	buf := make([]byte, rawLen+aLen+encLen)
	raw := buf[:rawLen]
	aad := appendAAD(buf[rawLen:rawLen], &b)
	out := buf[rawLen+aLen:]

	raw[0] = version
	copy(raw[1:1+kidSize], key.kid[:])
	nonce := raw[1+kidSize : headerLen]
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("reqstate: reading nonce: %w", err)
	}

	pt := raw[headerLen : headerLen+ptLen]
	expiry := s.now().Add(s.ttl).UnixNano()
	binary.BigEndian.PutUint64(pt[0:8], uint64(expiry))
	pt[8] = st.Round
	pt[9] = flags
	p := pt[fixedPlaintextLen:fixedPlaintextLen]
	if flags&flagContinuation != 0 {
		p = binary.AppendUvarint(p, uint64(len(st.Continuation)))
		p = append(p, st.Continuation...)
	}
	if flags&flagAnswers != 0 {
		p = binary.AppendUvarint(p, uint64(len(st.Answers)))
		p = append(p, st.Answers...)
	}
	if len(p) != ptLen-fixedPlaintextLen {
		panic("reqstate: internal error: plaintext length mismatch")
	}

	// Encrypt in place: dst = raw[:headerLen] appends over the plaintext,
	// which is the exact-overlap case cipher.AEAD permits.
	sealed := key.aead.Seal(raw[:headerLen], nonce, pt, aad)
	if len(sealed) != rawLen {
		panic("reqstate: internal error: sealed length mismatch")
	}
	enc.Encode(out, raw)
	return string(out), nil
}

// Open verifies and decrypts a token produced by Seal for the same Binding.
//
// It returns ErrUnknownKey for a well-formed token whose key id is not in the
// ring, ErrExpired for an authentic token past its expiry, and ErrInvalid
// (possibly wrapped with detail) for anything else. Expiry is evaluated only
// after authentication succeeded.
//
// The returned Continuation and Answers share one freshly allocated buffer
// owned by the caller; each has its capacity clipped so that appending to one
// never overwrites the other.
func (s *Sealer) Open(b Binding, token string) (State, error) {
	// Cheap structural checks first, before any allocation or crypto.
	if len(token) > s.maxToken {
		return State{}, errTooLong
	}
	if len(token) < MinTokenBytes {
		return State{}, errTooShort
	}
	decLen := enc.DecodedLen(len(token))
	aLen := aadLen(&b)
	// One buffer: decoded token | AAD | copy of the token text.
	buf := make([]byte, decLen+aLen+len(token))
	src := buf[decLen+aLen:]
	copy(src, token)
	n, err := enc.Decode(buf[:decLen], src)
	// base64 silently skips '\r' and '\n'; requiring the canonical length
	// rejects them, so each accepted token has a single string form.
	if err != nil || enc.EncodedLen(n) != len(token) {
		return State{}, errEncoding
	}
	raw := buf[:n]
	if len(raw) < minRawLen {
		return State{}, errTooShort
	}
	if raw[0] != version {
		return State{}, errVersion
	}
	kid := [kidSize]byte(raw[1 : 1+kidSize])
	var key *ringKey
	for i := range s.ring {
		if s.ring[i].kid == kid {
			key = &s.ring[i]
			break
		}
	}
	if key == nil {
		return State{}, ErrUnknownKey
	}

	aad := appendAAD(buf[decLen:decLen], &b)
	nonce := raw[1+kidSize : headerLen]
	ct := raw[headerLen:]
	pt, err := key.aead.Open(ct[:0], nonce, ct, aad)
	if err != nil {
		return State{}, errAuth
	}

	// Authenticated from here on.
	st, expiry, ok := parsePlaintext(pt)
	if !ok {
		return State{}, errPlaintext
	}
	if s.now().UnixNano() >= expiry {
		return State{}, ErrExpired
	}
	return st, nil
}

func parsePlaintext(pt []byte) (st State, expiry int64, ok bool) {
	if len(pt) < fixedPlaintextLen {
		return State{}, 0, false
	}
	expiry = int64(binary.BigEndian.Uint64(pt[0:8]))
	st.Round = pt[8]
	flags := pt[9]
	if flags&^knownFlags != 0 {
		return State{}, 0, false
	}
	rest := pt[fixedPlaintextLen:]
	if flags&flagContinuation != 0 {
		if st.Continuation, rest, ok = readField(rest); !ok {
			return State{}, 0, false
		}
	}
	if flags&flagAnswers != 0 {
		if st.Answers, rest, ok = readField(rest); !ok {
			return State{}, 0, false
		}
	}
	if len(rest) != 0 {
		return State{}, 0, false
	}
	return st, expiry, true
}

// readField reads uvarint(length) | bytes. Zero-length fields are rejected
// because Seal never writes them.
func readField(b []byte) (field, rest []byte, ok bool) {
	l, n := binary.Uvarint(b)
	if n <= 0 || l == 0 || l > uint64(len(b)-n) {
		return nil, nil, false
	}
	end := n + int(l)
	return b[n:end:end], b[end:], true
}
