package reqstate

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
)

// KeySize is the required length of Key.Secret in bytes (AES-256).
const KeySize = 32

const redacted = "[REDACTED]"

// Key is one entry of a Sealer's key ring.
//
// The ID is public: its SHA-256 prefix travels in every token so that Open can
// pick the right key. The Secret must be [KeySize] random bytes and must be
// kept private. None of Key's formatting or logging methods reveal it.
type Key struct {
	ID     string
	Secret []byte
}

// NewKey returns a key with the given id and a fresh random secret from
// crypto/rand.
func NewKey(id string) (Key, error) {
	if id == "" {
		return Key{}, errors.New("reqstate: key id must not be empty")
	}
	secret := make([]byte, KeySize)
	if _, err := rand.Read(secret); err != nil {
		return Key{}, fmt.Errorf("reqstate: generating key %q: %w", id, err)
	}
	return Key{ID: id, Secret: secret}, nil
}

// KeyFromBase64 returns a key whose secret is decoded from b64, which may use
// the standard or URL-safe alphabet, with or without padding. Surrounding
// whitespace is ignored. The secret must decode to exactly [KeySize] bytes.
// Errors never include the secret.
func KeyFromBase64(id, b64 string) (Key, error) {
	if id == "" {
		return Key{}, errors.New("reqstate: key id must not be empty")
	}
	b64 = strings.TrimSpace(b64)
	for _, enc := range []*base64.Encoding{
		base64.StdEncoding, base64.RawStdEncoding,
		base64.URLEncoding, base64.RawURLEncoding,
	} {
		secret, err := enc.DecodeString(b64)
		if err != nil {
			continue
		}
		if len(secret) != KeySize {
			clear(secret)
			return Key{}, fmt.Errorf("reqstate: key %q: secret is %d bytes, want %d", id, len(secret), KeySize)
		}
		return Key{ID: id, Secret: secret}, nil
	}
	return Key{}, fmt.Errorf("reqstate: key %q: secret is not valid base64", id)
}

// String returns the key id with the secret redacted.
func (k Key) String() string {
	return "Key{ID:" + strconv.Quote(k.ID) + ", Secret:" + redacted + "}"
}

// GoString implements fmt.GoStringer with the secret redacted.
func (k Key) GoString() string {
	return "reqstate.Key{ID:" + strconv.Quote(k.ID) + ", Secret:" + redacted + "}"
}

// Format implements fmt.Formatter so that every verb (%v, %+v, %#v, %s, %x,
// ...) prints the redacted form.
func (k Key) Format(f fmt.State, verb rune) {
	switch {
	case verb == 'v' && f.Flag('#'):
		_, _ = f.Write([]byte(k.GoString()))
	case verb == 'q':
		_, _ = f.Write([]byte(strconv.Quote(k.String())))
	default:
		_, _ = f.Write([]byte(k.String()))
	}
}

// LogValue implements slog.LogValuer with the secret redacted.
func (k Key) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("id", k.ID),
		slog.String("secret", redacted),
	)
}

// MarshalJSON emits {"id":...,"secret":"[REDACTED]"} so that marshaling a
// configuration struct that embeds keys cannot leak them.
func (k Key) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}{k.ID, redacted})
}
