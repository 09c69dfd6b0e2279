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
// start at data[i], or len(data) if it is unterminated. It jumps from
// quote to quote (a vectorized search even for short strings: cheaper
// than a byte loop past a few bytes, and MCP's member names are long).
func String(data []byte, i int) int {
	for i < len(data) {
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
	return len(data)
}

// Value returns the index just past the value that starts at data[i]
// (its first byte, not whitespace): past the closing quote of a string,
// the bracket closing an object or array, or the last byte of a literal
// or number. It returns len(data) when the value does not end.
func Value(data []byte, i int) int {
	if i >= len(data) {
		return len(data)
	}
	switch data[i] {
	case '"':
		return min(String(data, i+1)+1, len(data))
	case '{', '[':
		depth := 0
		for ; i < len(data); i++ {
			switch data[i] {
			case '"':
				i = String(data, i+1)
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(data)
	}
	for ; i < len(data); i++ {
		switch data[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
	}
	return len(data)
}

// Space returns the index of the first byte at or after i that is not
// JSON whitespace, or len(data).
func Space(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}
