package tasks

import (
	"crypto/rand"
	"encoding/base64"
)

// idRandomChars is the length of the random part of an id.
var idRandomChars = base64.RawURLEncoding.EncodedLen(IDRandomBytes)

// NewID returns prefix followed by IDRandomBytes from crypto/rand in
// unpadded base64url. Ids act as bearer handles in the 2026-07-28 era, so
// they must be unguessable; crypto/rand never fails on supported platforms.
func NewID(prefix string) string {
	var b [IDRandomBytes]byte
	_, _ = rand.Read(b[:])
	return prefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// WellFormedID reports whether id could have come from NewID(prefix). Stores
// check it before any lookup so that junk ids cost nothing, and answer
// ErrNotFound for them like for any other unknown id.
func WellFormedID(prefix, id string) bool {
	if len(id) != len(prefix)+idRandomChars || id[:len(prefix)] != prefix {
		return false
	}
	for i := len(prefix); i < len(id); i++ {
		if !isIDChar(id[i]) {
			return false
		}
	}
	return true
}

func isIDChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

func checkIDPrefix(p string) error {
	if len(p) > MaxIDPrefixBytes {
		return invalid("IDPrefix longer than %d bytes", MaxIDPrefixBytes)
	}
	for i := 0; i < len(p); i++ {
		if !isIDChar(p[i]) {
			return invalid("IDPrefix may only hold [A-Za-z0-9_-]")
		}
	}
	return nil
}
