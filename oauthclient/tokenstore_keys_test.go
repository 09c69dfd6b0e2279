package oauthclient

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
)

// Keys lists what a store holds, oldest saved first, and forgets deleted
// keys; a FileTokenStore lists what another instance wrote to the file.
func TestTokenStoreKeys(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tokens.json")
	a, b := TokenKey{"https://a/mcp", "https://as1"}, TokenKey{"https://a/mcp", "https://as2"}
	fs := NewFileTokenStore(path)
	for _, k := range []TokenKey{a, b} {
		if err := fs.Save(ctx, k, &Credentials{ClientID: "c", AccessToken: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	if keys, err := NewFileTokenStore(path).Keys(ctx); err != nil || !slices.Equal(keys, []TokenKey{a, b}) {
		t.Fatalf("file keys %v %v", keys, err)
	}
	if err := fs.Delete(ctx, a); err != nil {
		t.Fatal(err)
	}
	if keys, err := NewFileTokenStore(path).Keys(ctx); err != nil || !slices.Equal(keys, []TokenKey{b}) {
		t.Fatalf("after delete %v %v", keys, err)
	}
	var ms MemoryTokenStore
	if keys, _ := ms.Keys(ctx); len(keys) != 0 {
		t.Fatalf("empty store lists %v", keys)
	}
	_ = ms.Save(ctx, b, &Credentials{})
	if keys, _ := ms.Keys(ctx); !slices.Equal(keys, []TokenKey{b}) {
		t.Fatalf("memory keys %v", keys)
	}
}
