package pmcp

import (
	"bytes"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Metadata holds the string values middleware passes to handlers (tenant
// ids, tokens, ...) in RequestHandlerExtra.Metadata: write them with the
// extra's SetMetadata and SetSecretMetadata, read them with GetMetadata and
// GetSecretMetadata. Its zero value is an empty, ready-to-use set.
//
// Redaction rules. A value is never printed (String, every fmt verb
// including %#v, %q and %x, slog) nor marshalled (encoding/json and
// github.com/go-json-experiment/json), "[REDACTED]" standing in its place,
// when either
//
//   - it was stored as a secret (SetSecretMetadata): secrecy goes with the
//     value, whatever its key is called; read it back with
//     GetSecretMetadata and call Secret.Reveal where the clear text is
//     really needed; or
//   - its key looks like a credential's name ([IsSensitiveMetadataKey]):
//     a second guard for values stored as plain strings.
//
// GetMetadata returns plain values only; a secret value reads as absent
// there, so it never slips out as a string by accident.
type Metadata struct {
	m map[string]metadataValue
}

type metadataValue struct {
	v      string
	secret bool
}

// set stores a plain value under key (redacted when printed only if the
// key is sensitive).
func (m *Metadata) set(key, value string) { m.put(key, metadataValue{v: value}) }

// setSecret stores a secret value under key: it is redacted in every
// printed and marshalled form whatever the key, and only getSecret returns
// it.
func (m *Metadata) setSecret(key string, value Secret) {
	m.put(key, metadataValue{v: string(value), secret: true})
}

func (m *Metadata) put(key string, v metadataValue) {
	if m.m == nil {
		m.m = make(map[string]metadataValue)
	}
	m.m[key] = v
}

// get returns the plain value stored under key. It reports false when
// there is none, and also when the value is a secret (use getSecret).
func (m Metadata) get(key string) (string, bool) {
	v, ok := m.m[key]
	if !ok || v.secret {
		return "", false
	}
	return v.v, true
}

// getSecret returns the value stored under key as a Secret, whether it was
// stored as one or as a plain string. It reports false when key is absent.
func (m Metadata) getSecret(key string) (Secret, bool) {
	v, ok := m.m[key]
	return Secret(v.v), ok
}

// Delete removes key.
func (m *Metadata) Delete(key string) { delete(m.m, key) }

// Len returns the number of keys.
func (m Metadata) Len() int { return len(m.m) }

// Keys returns the keys, sorted.
func (m Metadata) Keys() []string { return slices.Sorted(maps.Keys(m.m)) }

// clone returns an independent copy (RequestHandlerExtra.Clone uses it).
func (m Metadata) clone() Metadata {
	if m.m == nil {
		return Metadata{}
	}
	return Metadata{m: maps.Clone(m.m)}
}

// printable returns the value under k as it may be shown.
func (m Metadata) printable(k string) string {
	v := m.m[k]
	if v.secret || IsSensitiveMetadataKey(k) {
		return redacted
	}
	return v.v
}

// String prints the set as map[k:v ...], keys sorted, redacted as
// described on Metadata.
func (m Metadata) String() string {
	var b strings.Builder
	b.WriteString("map[")
	for i, k := range m.Keys() {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k)
		b.WriteByte(':')
		b.WriteString(m.printable(k))
	}
	b.WriteByte(']')
	return b.String()
}

// Format routes every verb (including %#v, %+v, %q and %x) through String.
func (m Metadata) Format(f fmt.State, _ rune) { fmt.Fprint(f, m.String()) }

// LogValue implements slog.LogValuer, redacted as described on Metadata.
func (m Metadata) LogValue() slog.Value {
	attrs := make([]slog.Attr, 0, len(m.m))
	for _, k := range m.Keys() {
		attrs = append(attrs, slog.String(k, m.printable(k)))
	}
	return slog.GroupValue(attrs...)
}

// MarshalJSON encodes the set as a JSON object of strings, keys sorted,
// redacted as described on Metadata. Both JSON packages use it.
func (m Metadata) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := jsontext.NewEncoder(&buf)
	if err := enc.WriteToken(jsontext.BeginObject); err != nil {
		return nil, err
	}
	for _, k := range m.Keys() {
		if err := enc.WriteToken(jsontext.String(k)); err != nil {
			return nil, err
		}
		if err := enc.WriteToken(jsontext.String(m.printable(k))); err != nil {
			return nil, err
		}
	}
	if err := enc.WriteToken(jsontext.EndObject); err != nil {
		return nil, err
	}
	return bytes.TrimSpace(buf.Bytes()), nil
}

// Attributes is a map of arbitrary values describing a caller, such as
// token claims (AuthContext.Claims) or what an authentication layer
// extracted (AuthInfo.Extra). Read and write it as the map it is; only its
// printed and marshalled forms differ: in String, every fmt verb, slog and
// both JSON packages, a value under a sensitive key
// ([IsSensitiveMetadataKey]) at any depth, and any [Secret] value, is
// "[REDACTED]".
type Attributes map[string]any

// MarshalJSON encodes the map with sorted keys, redacting as described on
// Attributes.
func (a Attributes) MarshalJSON() ([]byte, error) {
	raw, err := json.Marshal(map[string]any(a), json.Deterministic(true))
	if err != nil {
		return nil, err
	}
	return redactJSON(raw)
}

// String prints the redacted JSON form.
func (a Attributes) String() string {
	b, err := a.MarshalJSON()
	if err != nil {
		return fmt.Sprintf("Attributes(%d keys, unprintable)", len(a))
	}
	return string(b)
}

// Format routes every verb through String.
func (a Attributes) Format(f fmt.State, _ rune) { fmt.Fprint(f, a.String()) }

// LogValue implements slog.LogValuer: one attribute per key, with string
// values as they are and other values as redacted JSON text.
func (a Attributes) LogValue() slog.Value {
	keys := slices.Sorted(maps.Keys(a))
	attrs := make([]slog.Attr, 0, len(keys))
	for _, k := range keys {
		var s string
		switch v := a[k].(type) {
		case string:
			s = v
		default:
			b, err := Attributes{k: v}.MarshalJSON()
			if err != nil {
				s = "unprintable"
			} else {
				var one map[string]jsontext.Value
				if json.Unmarshal(b, &one) == nil {
					s = string(one[k])
				}
			}
		}
		if IsSensitiveMetadataKey(k) {
			s = redacted
		}
		attrs = append(attrs, slog.String(k, s))
	}
	return slog.GroupValue(attrs...)
}

// redactJSON re-encodes the JSON value raw with every value under a
// sensitive member name, at any depth, replaced by "[REDACTED]".
func redactJSON(raw []byte) ([]byte, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	var buf bytes.Buffer
	enc := jsontext.NewEncoder(&buf)
	if err := redactValue(dec, enc); err != nil {
		return nil, err
	}
	return bytes.TrimSpace(buf.Bytes()), nil
}

func redactValue(dec *jsontext.Decoder, enc *jsontext.Encoder) error {
	switch dec.PeekKind() {
	case '{', '[':
		open, err := dec.ReadToken()
		if err != nil {
			return err
		}
		if err := enc.WriteToken(open); err != nil {
			return err
		}
		obj := open.Kind() == '{'
		for dec.PeekKind() != '}' && dec.PeekKind() != ']' {
			if obj {
				name, err := dec.ReadToken()
				if err != nil {
					return err
				}
				if err := enc.WriteToken(name); err != nil {
					return err
				}
				if IsSensitiveMetadataKey(name.String()) {
					if err := dec.SkipValue(); err != nil {
						return err
					}
					if err := enc.WriteToken(jsontext.String(redacted)); err != nil {
						return err
					}
					continue
				}
			}
			if err := redactValue(dec, enc); err != nil {
				return err
			}
		}
		end, err := dec.ReadToken()
		if err != nil {
			return err
		}
		return enc.WriteToken(end)
	default:
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		return enc.WriteValue(v)
	}
}

// sensitiveKeyParts are the fragments that make a key sensitive, matched
// against the key lower-cased with '-', '_', '.' and spaces removed.
var sensitiveKeyParts = [...]string{
	"token", "secret", "password", "passwd", "passphrase", "passcode", "pwd",
	"apikey", "accesskey", "signingkey", "encryptionkey", "privatekey", "private",
	"auth", "bearer", "cookie", "credential", "session", "refresh", "jwt",
	"signature", "csrf", "xsrf",
}

// IsSensitiveMetadataKey reports whether values under key are redacted
// whatever their type: a key is sensitive when, lower-cased and with '-',
// '_', '.' and spaces removed, it contains a fragment of a credential's
// name (token, secret, pass..., pwd, apikey, auth, bearer, cookie,
// credential, session, refresh, jwt, signature, csrf, ...). "X-Api-Key",
// "refresh_token", "DB.Password" and "pwd" are sensitive.
func IsSensitiveMetadataKey(key string) bool {
	k := strings.Map(func(r rune) rune {
		switch r {
		case '-', '_', '.', ' ':
			return -1
		}
		return r
	}, strings.ToLower(key))
	for _, p := range sensitiveKeyParts {
		if strings.Contains(k, p) {
			return true
		}
	}
	return false
}
