// Package tokenhash hashes credentials held as strings without copying
// them: the SHA-256 that names a bearer token (the session principal of
// package pmcp, the verified-token cache key of package auth) is taken on
// every request, and a token is usually longer than the 32 bytes the
// compiler converts to a []byte on the stack.
package tokenhash

import (
	"crypto/sha256"
	"unsafe"
)

// SHA256 returns the SHA-256 of s. It reads the bytes of s in place:
// sha256.Sum256 neither keeps nor modifies its argument, so the string's
// immutability holds.
func SHA256(s string) [sha256.Size]byte {
	if s == "" {
		return sha256.Sum256(nil)
	}
	return sha256.Sum256(unsafe.Slice(unsafe.StringData(s), len(s)))
}
