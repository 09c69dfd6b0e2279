package pmcp

import (
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
)

// Extensions is a typed map for request-scoped values that middleware hands
// to handlers, keyed by Go type: at most one value per type. Printing an
// Extensions shows type names only, never values, so it is safe to log.
// The zero value is ready to use.
type Extensions struct {
	m map[reflect.Type]any
}

// SetExtension stores v under its type T, replacing any earlier value.
func SetExtension[T any](e *Extensions, v T) {
	if e.m == nil {
		e.m = make(map[reflect.Type]any)
	}
	e.m[reflect.TypeFor[T]()] = v
}

// GetExtension returns the value stored under type T.
func GetExtension[T any](e *Extensions) (T, bool) {
	v, ok := e.m[reflect.TypeFor[T]()]
	if !ok {
		var zero T
		return zero, false
	}
	return v.(T), true
}

// RemoveExtension deletes the value stored under type T.
func RemoveExtension[T any](e *Extensions) { delete(e.m, reflect.TypeFor[T]()) }

// Len reports how many values are stored.
func (e *Extensions) Len() int { return len(e.m) }

// Clone returns a shallow copy: the map is new, the values are shared
// (store pointers for large values).
func (e *Extensions) Clone() Extensions {
	if e.m == nil {
		return Extensions{}
	}
	m := make(map[reflect.Type]any, len(e.m))
	for k, v := range e.m {
		m[k] = v
	}
	return Extensions{m: m}
}

// TypeNames lists the stored types, sorted.
func (e *Extensions) TypeNames() []string {
	names := make([]string, 0, len(e.m))
	for t := range e.m {
		names = append(names, t.String())
	}
	slices.Sort(names)
	return names
}

// String prints the stored type names only.
func (e Extensions) String() string {
	return "Extensions{" + strings.Join(e.TypeNames(), ", ") + "}"
}

// Format makes every fmt verb print type names only.
func (e Extensions) Format(f fmt.State, _ rune) { fmt.Fprint(f, e.String()) }

// LogValue implements slog.LogValuer with type names only.
func (e Extensions) LogValue() slog.Value { return slog.AnyValue(e.TypeNames()) }
