package peer

import (
	"io"
	"net/url"
	"strings"
	"unicode/utf8"
)

// MaxStringBytes is the bound the client side (the root package's client
// and package oauthclient) caps every server-controlled string at (error
// messages, tool names, versions) before it enters an error or a log
// record.
const MaxStringBytes = 1024

// CapString bounds a server-controlled string before it enters an error
// or a log record: at most max bytes (cut on a rune boundary, marked with
// "..."), control characters replaced, invalid UTF-8 repaired.
func CapString(s string, max int) string {
	if len(s) > max {
		cut := max - 3
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return strings.Map(func(r rune) rune {
		if r == '\t' || (r >= 0x20 && r != 0x7f && !(r >= 0x80 && r < 0xa0)) {
			return r
		}
		return ' '
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

// DrainClose reads a little of what is left of a body (so the connection
// can be reused) and closes it.
func DrainClose(b io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(b, 4<<10))
	_ = b.Close()
}

// SameOrigin reports whether a and b share scheme and host (with port).
func SameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host)
}
