package pmcp

import (
	"bytes"
	stdjson "encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
)

const leak = "sk-live-verysecret"

// printedForms returns every printed and marshalled form of v that the
// redaction rules cover: fmt verbs, slog (JSON and text handlers) and both
// JSON encoders.
func printedForms(t *testing.T, v any, marshal bool) []string {
	t.Helper()
	var jb, tb bytes.Buffer
	slog.New(slog.NewJSONHandler(&jb, nil)).Info("m", "v", v)
	slog.New(slog.NewTextHandler(&tb, nil)).Info("m", "v", v)
	forms := []string{
		fmt.Sprint(v), fmt.Sprintf("%v", v), fmt.Sprintf("%+v", v), fmt.Sprintf("%#v", v),
		fmt.Sprintf("%s", v), fmt.Sprintf("%q", v), fmt.Sprintf("%x", v), fmt.Sprintf("%X", v),
		jb.String(), tb.String(),
	}
	if s, ok := v.(fmt.Stringer); ok {
		forms = append(forms, s.String())
	}
	if !marshal {
		return forms
	}
	b1, err := stdjson.Marshal(v)
	if err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	b2, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json v2: %v", err)
	}
	return append(forms, string(b1), string(b2))
}

func assertNoLeak(t *testing.T, what string, v any) { t.Helper(); checkLeak(t, what, v, true) }

// assertNoLeakPrinted is assertNoLeak without the JSON encoders, for
// values that are not meant to be marshalled.
func assertNoLeakPrinted(t *testing.T, what string, v any) { t.Helper(); checkLeak(t, what, v, false) }

func checkLeak(t *testing.T, what string, v any, marshal bool) {
	t.Helper()
	for i, s := range printedForms(t, v, marshal) {
		for _, enc := range []string{leak, fmt.Sprintf("%x", leak), fmt.Sprintf("%X", leak)} {
			if strings.Contains(s, enc) {
				t.Errorf("%s: form %d leaks the secret: %s", what, i, s)
			}
		}
	}
}

// TestRedactionSensitiveKeys: values under keys that name a credential
// are never printed nor marshalled, including keys the first list missed
// (pwd, refresh, private, ...), in Metadata, AuthContext.Claims and
// AuthInfo.Extra, at any depth.
func TestRedactionSensitiveKeys(t *testing.T) {
	e := DefaultRequestHandlerExtra()
	for _, k := range []string{"pwd", "refresh", "db_passphrase", "Private-Key", "X-CSRF", "id_jwt", "user.password", "Session-Cookie", "AWS_ACCESS_KEY"} {
		e.SetMetadata(k, leak)
	}
	e.SetMetadata("tenant", "acme")
	assertNoLeak(t, "metadata", e.Metadata)
	assertNoLeakPrinted(t, "extra", e)
	ac := AuthContext{Subject: "alice", Claims: map[string]any{
		"sub": "alice", "refresh_token": leak, "nested": map[string]any{"client_secret": leak, "list": []any{map[string]any{"pwd": leak}}},
	}}
	assertNoLeak(t, "auth context", ac)
	assertNoLeak(t, "auth context claims", ac.Claims)
	ai := AuthInfo{ClientID: "c1", Extra: map[string]any{"password": leak, "cookie": leak}}
	assertNoLeak(t, "auth info", ai)
	assertNoLeak(t, "auth info extra", ai.Extra)

	// What is not sensitive is still shown, and the values are still there
	// for the code that reads them.
	if s := fmt.Sprint(e.Metadata); !strings.Contains(s, "tenant:acme") {
		t.Errorf("non-sensitive value hidden: %s", s)
	}
	if b, _ := json.Marshal(ac); !strings.Contains(string(b), `"sub":"alice"`) {
		t.Errorf("non-sensitive claim hidden: %s", b)
	}
	if v, ok := e.GetMetadata("pwd"); !ok || v != leak {
		t.Errorf("GetMetadata(pwd) = %q, %v", v, ok)
	}
	if ac.Claims["refresh_token"] != leak {
		t.Error("claims value changed")
	}
}
