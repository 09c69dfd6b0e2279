// Package jsonskip finds where JSON strings and values end by their
// delimiters alone, without validating anything: for bytes that a strict
// JSON parser has already accepted (jsonrpc.Decode's params, read again by
// the server's params scan) and for scans that must not depend on
// validity (jsonrpc's nesting-depth pre-scan). On invalid input the
// results are meaningless but in bounds: no function here panics or
// loops.
package jsonskip

import "bytes"

// String returns the index of the quote closing the string whose contents
// start at data[i], or len(data) if it is unterminated. Short strings
// (most member names) are scanned byte by byte; longer ones jump from
// quote to quote.
func String(data []byte, i int) int {
	for end := min(i+16, len(data)); i < end; i++ {
		switch data[i] {
		case '"':
			return i
		case '\\':
			i++
		}
	}
	if i >= len(data) {
		return len(data)
	}
	for {
		j := bytes.IndexByte(data[i:], '"')
		if j < 0 {
			return len(data)
		}
		i += j
		k := i - 1
		for data[k] == '\\' { // stops at the opening quote at the latest
			k--
		}
		if (i-1-k)%2 == 0 {
			return i // not escaped
		}
		i++
	}
}
