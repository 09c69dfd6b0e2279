package pmcp

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
)

// Metadata is a string map that middleware fills for handlers (tokens,
// tenant ids, ...). Values under sensitive keys are redacted in every
// printed form: String, all fmt verbs and slog. A key is sensitive when it
// contains, case-insensitively, any of SensitiveMetadataKeyParts.
type Metadata map[string]string

// SensitiveMetadataKeyParts are the key fragments whose values Metadata
// never prints.
var SensitiveMetadataKeyParts = []string{
	"token", "secret", "password", "passwd", "api_key", "apikey", "api-key",
	"authorization", "auth", "bearer", "cookie", "credential", "private_key", "session",
}

// IsSensitiveMetadataKey reports whether values under key are redacted.
func IsSensitiveMetadataKey(key string) bool {
	k := strings.ToLower(key)
	for _, p := range SensitiveMetadataKeyParts {
		if strings.Contains(k, p) {
			return true
		}
	}
	return false
}

func (m Metadata) keys() []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func printable(k, v string) string {
	if IsSensitiveMetadataKey(k) {
		return redacted
	}
	return v
}

// String prints the map with sensitive values redacted, keys sorted.
func (m Metadata) String() string {
	var b strings.Builder
	b.WriteString("map[")
	for i, k := range m.keys() {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s:%s", k, printable(k, m[k]))
	}
	b.WriteByte(']')
	return b.String()
}

// Format routes every verb (including %#v and %+v) through String.
func (m Metadata) Format(f fmt.State, _ rune) { fmt.Fprint(f, m.String()) }

// LogValue implements slog.LogValuer with sensitive values redacted.
func (m Metadata) LogValue() slog.Value {
	attrs := make([]slog.Attr, 0, len(m))
	for _, k := range m.keys() {
		attrs = append(attrs, slog.String(k, printable(k, m[k])))
	}
	return slog.GroupValue(attrs...)
}

// Clone returns a copy of the map.
func (m Metadata) Clone() Metadata {
	if m == nil {
		return nil
	}
	c := make(Metadata, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
