package reqstate_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/gopmcp/pmcp/reqstate"
)

// secretEncodings returns the forms in which a leaked secret could appear.
func secretEncodings(secret []byte) []string {
	return []string{
		string(secret),
		hex.EncodeToString(secret),
		strings.ToUpper(hex.EncodeToString(secret)),
		base64.StdEncoding.EncodeToString(secret),
		base64.RawStdEncoding.EncodeToString(secret),
		base64.URLEncoding.EncodeToString(secret),
		base64.RawURLEncoding.EncodeToString(secret),
		fmt.Sprint([]byte(secret)), // "[1 2 3 ...]"
		fmt.Sprintf("%#v", []byte(secret)),
	}
}

func TestKeyRedaction(t *testing.T) {
	// Printable secret bytes so that a raw leak would be visible in text.
	secret := []byte("0123456789abcdefghijklmnopqrstuv")
	key := reqstate.Key{ID: "prod-2026-07", Secret: secret}
	opts := reqstate.Options{Keys: []reqstate.Key{key}}
	// A typical configuration struct (Options itself has a func field,
	// which encoding/json cannot marshal).
	type config struct {
		Keys []reqstate.Key
		Key  *reqstate.Key
	}
	cfg := config{Keys: opts.Keys, Key: &key}

	slogJSON := func(args ...any) string {
		var buf bytes.Buffer
		slog.New(slog.NewJSONHandler(&buf, nil)).Info("msg", args...)
		return buf.String()
	}
	slogText := func(args ...any) string {
		var buf bytes.Buffer
		slog.New(slog.NewTextHandler(&buf, nil)).Info("msg", args...)
		return buf.String()
	}
	jsonMarshal := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("json.Marshal: %v", err)
		}
		return string(b)
	}

	tests := []struct {
		name string
		out  string
	}{
		{"String", key.String()},
		{"GoString", key.GoString()},
		{"%v", fmt.Sprintf("%v", key)},
		{"%+v", fmt.Sprintf("%+v", key)},
		{"%#v", fmt.Sprintf("%#v", key)},
		{"%s", fmt.Sprintf("%s", key)},
		{"%q", fmt.Sprintf("%q", key)},
		{"%x", fmt.Sprintf("%x", key)},
		{"%X", fmt.Sprintf("%X", key)},
		{"%d", fmt.Sprintf("%d", key)},
		{"pointer %v", fmt.Sprintf("%v", &key)},
		{"pointer %+v", fmt.Sprintf("%+v", &key)},
		{"Println", fmt.Sprintln(key)},
		{"slice %v", fmt.Sprintf("%v", []reqstate.Key{key})},
		{"Options %+v", fmt.Sprintf("%+v", opts)},
		{"Options %#v", fmt.Sprintf("%#v", opts)},
		{"slog JSON", slogJSON("key", key)},
		{"slog JSON Any pointer", slogJSON(slog.Any("key", &key))},
		{"slog JSON config", slogJSON("cfg", cfg)},
		{"slog text", slogText("key", key)},
		{"json.Marshal", jsonMarshal(key)},
		{"json.Marshal config", jsonMarshal(cfg)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, leak := range secretEncodings(secret) {
				if strings.Contains(tt.out, leak) {
					t.Fatalf("output %q contains the secret as %q", tt.out, leak)
				}
			}
			if !strings.Contains(tt.out, key.ID) {
				t.Errorf("output %q lacks the key id", tt.out)
			}
			if !strings.Contains(tt.out, "[REDACTED]") {
				t.Errorf("output %q lacks [REDACTED]", tt.out)
			}
		})
	}

	t.Run("json is valid", func(t *testing.T) {
		odd := reqstate.Key{ID: "id\x00\xff\"<", Secret: secret}
		b, err := json.Marshal(odd)
		if err != nil || !json.Valid(b) {
			t.Fatalf("json.Marshal = %q, %v", b, err)
		}
	})
}

func TestNewKey(t *testing.T) {
	a, err := reqstate.NewKey("a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := reqstate.NewKey("b")
	if err != nil {
		t.Fatal(err)
	}
	if a.ID != "a" || len(a.Secret) != reqstate.KeySize || len(b.Secret) != reqstate.KeySize {
		t.Fatalf("bad keys: %v %v", a, b)
	}
	if bytes.Equal(a.Secret, b.Secret) {
		t.Fatal("two random keys are equal")
	}
	if _, err := reqstate.NewKey(""); err == nil {
		t.Fatal("NewKey with empty id succeeded")
	}
}

func TestKeyFromBase64(t *testing.T) {
	secret := make([]byte, reqstate.KeySize)
	for i := range secret {
		secret[i] = byte(0xf0 + i) // exercises '+', '/', '-', '_' in encodings
	}
	tests := []struct {
		name    string
		id      string
		b64     string
		wantErr bool
	}{
		{"std", "k", base64.StdEncoding.EncodeToString(secret), false},
		{"raw std", "k", base64.RawStdEncoding.EncodeToString(secret), false},
		{"url", "k", base64.URLEncoding.EncodeToString(secret), false},
		{"raw url", "k", base64.RawURLEncoding.EncodeToString(secret), false},
		{"trailing newline", "k", base64.StdEncoding.EncodeToString(secret) + "\n", false},
		{"empty id", "", base64.StdEncoding.EncodeToString(secret), true},
		{"short", "k", base64.StdEncoding.EncodeToString(secret[:31]), true},
		{"long", "k", base64.StdEncoding.EncodeToString(append(bytes.Clone(secret), 0)), true},
		{"not base64", "k", "!!!!", true},
		{"empty", "k", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := reqstate.KeyFromBase64(tt.id, tt.b64)
			if tt.wantErr {
				if err == nil {
					t.Fatal("succeeded, want error")
				}
				if trimmed := strings.TrimSpace(tt.b64); trimmed != "" && strings.Contains(err.Error(), trimmed) {
					t.Fatalf("error %q echoes the secret", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if k.ID != tt.id || !bytes.Equal(k.Secret, secret) {
				t.Fatalf("got %v with secret %x", k, k.Secret)
			}
			if _, err := reqstate.New(reqstate.Options{Keys: []reqstate.Key{k}}); err != nil {
				t.Fatalf("New: %v", err)
			}
		})
	}
}

// A Sealer holds only AES-GCM instances behind pointers; printing or logging
// it must not reveal key material either.
func TestSealerPrintingRedacted(t *testing.T) {
	secret := []byte("0123456789abcdefghijklmnopqrstuv")
	s := mustNew(t, reqstate.Options{Keys: []reqstate.Key{{ID: "k", Secret: secret}}})
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("msg", "sealer", s, "value", *s)
	outs := []string{
		fmt.Sprintf("%v", s), fmt.Sprintf("%+v", s), fmt.Sprintf("%#v", s),
		fmt.Sprintf("%+v", *s), fmt.Sprintf("%#v", *s), fmt.Sprint(*s),
		buf.String(),
	}
	for _, out := range outs {
		for _, leak := range secretEncodings(secret) {
			if strings.Contains(out, leak) {
				t.Fatalf("output %q contains the secret as %q", out, leak)
			}
		}
		// The AES key schedule starts with the key itself; make sure its
		// first word shows up in no common rendering.
		if strings.Contains(out, fmt.Sprintf("%d %d %d %d", secret[0], secret[1], secret[2], secret[3])) ||
			strings.Contains(out, fmt.Sprintf("%x", secret[:4])) ||
			strings.Contains(out, fmt.Sprintf("%d", uint32(secret[0])<<24|uint32(secret[1])<<16|uint32(secret[2])<<8|uint32(secret[3]))) {
			t.Fatalf("output %q contains key-schedule words", out)
		}
	}
}
