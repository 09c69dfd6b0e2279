package schema

import "errors"

// Default resource limits. See [Limits].
const (
	DefaultMaxSchemaBytes    = 1 << 20 // 1 MiB
	DefaultMaxSchemaDepth    = 128
	DefaultMaxInstanceBytes  = 4 << 20 // 4 MiB
	DefaultMaxInstanceDepth  = 128
	DefaultMaxValidationCost = 500_000
)

// Fixed (not configurable) bounds on regular expressions in schemas. The size
// is an estimate of the number of instructions of the compiled program, which
// is what the cost of matching is proportional to; see the package
// documentation.
const (
	maxPatternProgram      = 10_000
	maxTotalPatternProgram = 200_000
)

// maxValidationFrames bounds the recursion depth of jsonschema-go's validator
// (one frame per subschema being applied: instance depth times chains of
// $ref, allOf and the like), and so the goroutine stack it uses.
const maxValidationFrames = 10_000

// maxPointerLen bounds the length of the JSON Pointer of any subschema.
const maxPointerLen = 16 << 10

// ErrLimitExceeded is wrapped by the errors returned when a schema or an
// instance exceeds one of the configured [Limits], as opposed to violating the
// schema. Test with errors.Is.
var ErrLimitExceeded = errors.New("resource limit exceeded")

// Limits bound the resources used to compile a schema and to validate one
// instance against it. A zero field means "use the default".
//
// The limits exist because both schemas (for example an outputSchema sent by
// an untrusted server) and instances (tool arguments sent by an untrusted
// client) can be hostile.
type Limits struct {
	// MaxSchemaBytes caps the size of a schema document. Default 1 MiB.
	MaxSchemaBytes int
	// MaxSchemaDepth caps the JSON nesting depth of a schema document.
	// Default 128.
	MaxSchemaDepth int
	// MaxInstanceBytes caps the size of an instance. For ValidateJSON it is
	// the length of the input; for Validate it is an estimate of the encoded
	// size. Default 4 MiB.
	MaxInstanceBytes int
	// MaxInstanceDepth caps the JSON nesting depth of an instance.
	// Default 128.
	MaxInstanceDepth int
	// MaxValidationCost caps the estimated work needed to validate one
	// instance, in units of roughly one schema-keyword evaluation on one
	// instance value (see the package documentation). The estimate is an
	// upper bound that is computed cheaply before validation starts; an
	// instance whose estimate exceeds the cap is rejected without being
	// validated. Default 500,000: a unit costs 100-500ns of validation
	// on current hardware, so validation (including explaining a failure)
	// stays well under a second.
	MaxValidationCost int64
}

func (l Limits) withDefaults() Limits {
	if l.MaxSchemaBytes <= 0 {
		l.MaxSchemaBytes = DefaultMaxSchemaBytes
	}
	if l.MaxSchemaDepth <= 0 {
		l.MaxSchemaDepth = DefaultMaxSchemaDepth
	}
	if l.MaxInstanceBytes <= 0 {
		l.MaxInstanceBytes = DefaultMaxInstanceBytes
	}
	if l.MaxInstanceDepth <= 0 {
		l.MaxInstanceDepth = DefaultMaxInstanceDepth
	}
	if l.MaxValidationCost <= 0 {
		l.MaxValidationCost = DefaultMaxValidationCost
	}
	return l
}

// Cost model constants (units of roughly one keyword evaluation).
const (
	// regexCostPerInstByte is the estimated cost of matching one byte of a
	// string against one instruction of a compiled regular expression, in
	// the worst case (Go's regexp simulates the program's threads in
	// lockstep, so matching is O(len(input) × len(program))).
	regexCostPerInstByte = 1.0 / 64
	// minStringCost is the per-byte cost charged for strings checked by any
	// string keyword (counting runes, quoting the string into an error
	// message).
	minStringCost = 1.0 / 32
	// frameCostPerByte is the per-byte cost of copying such an error message
	// once per enclosing schema.
	frameCostPerByte = 1.0 / 1024
)
