package pmcp

import (
	"math"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// flatSchema is a fast acceptance check for the simplest and most common
// input schemas: an object of primitive properties, as inferred from a
// struct of strings, numbers and booleans. For those, tools/call does not
// need the general validator to accept well-formed arguments.
//
// It only ever accepts: arguments it accepts are arguments the compiled
// schema accepts (tools_validate_test.go checks this against the general
// validator). Anything else, valid or not, goes to the general validator,
// which decides and words the errors exactly as before.
type flatSchema struct {
	props      []flatProp
	required   uint64 // bit i: props[i] is required
	additional bool   // unknown members are allowed (their values must be primitives here)
}

type flatProp struct {
	name     string
	types    uint8 // flatNull | flatString | ...
	min, max float64
	hasMin   bool
	hasMax   bool
}

const (
	flatNull = 1 << iota
	flatString
	flatNumber
	flatInteger
	flatBoolean
)

// flatMaxArgs bounds the arguments the fast check reads: far below every
// instance limit of the general validator (size, depth, validation cost).
const flatMaxArgs = 16 << 10

var flatTypeNames = map[string]uint8{
	"null": flatNull, "string": flatString, "number": flatNumber, "integer": flatInteger, "boolean": flatBoolean,
}

// compileFlat returns the fast check of an input schema, or nil when the
// schema is not of the simple shape it handles. Schemas use only type,
// properties, required, additionalProperties (a boolean), title and
// description at the root, and type (primitive types), minimum, maximum,
// title and description in each property.
func compileFlat(raw jsontext.Value) *flatSchema {
	var root map[string]jsontext.Value
	if json.Unmarshal(raw, &root) != nil {
		return nil
	}
	fs := &flatSchema{additional: true}
	var props map[string]jsontext.Value
	var required []string
	for k, v := range root {
		switch k {
		case "type":
			var t string
			if json.Unmarshal(v, &t) != nil || t != "object" {
				return nil
			}
		case "properties":
			if json.Unmarshal(v, &props) != nil {
				return nil
			}
		case "required":
			if json.Unmarshal(v, &required) != nil {
				return nil
			}
		case "additionalProperties":
			if json.Unmarshal(v, &fs.additional) != nil {
				return nil
			}
		case "title", "description":
			var s string
			if json.Unmarshal(v, &s) != nil {
				return nil
			}
		default:
			return nil
		}
	}
	if _, ok := root["type"]; !ok || len(props) > 64 {
		return nil
	}
	for name, v := range props {
		p, ok := compileFlatProp(name, v)
		if !ok {
			return nil
		}
		fs.props = append(fs.props, p)
	}
	for _, r := range required {
		i := fs.index(r)
		if i < 0 {
			return nil
		}
		fs.required |= 1 << i
	}
	return fs
}

func compileFlatProp(name string, raw jsontext.Value) (flatProp, bool) {
	p := flatProp{name: name}
	var m map[string]jsontext.Value
	if json.Unmarshal(raw, &m) != nil {
		return p, false
	}
	for k, v := range m {
		switch k {
		case "type":
			var names []string
			if v.Kind() == '"' {
				var one string
				if json.Unmarshal(v, &one) != nil {
					return p, false
				}
				names = []string{one}
			} else if json.Unmarshal(v, &names) != nil || len(names) == 0 {
				return p, false
			}
			for _, n := range names {
				t, ok := flatTypeNames[n]
				if !ok || p.types&t != 0 {
					return p, false
				}
				p.types |= t
			}
		case "minimum", "maximum":
			var f float64
			if v.Kind() != '0' || json.Unmarshal(v, &f) != nil || math.IsInf(f, 0) || math.IsNaN(f) {
				return p, false
			}
			if k == "minimum" {
				p.min, p.hasMin = f, true
			} else {
				p.max, p.hasMax = f, true
			}
		case "title", "description":
			var s string
			if json.Unmarshal(v, &s) != nil {
				return p, false
			}
		default:
			return p, false
		}
	}
	return p, p.types != 0
}

func (fs *flatSchema) index(name string) int {
	for i := range fs.props {
		if fs.props[i].name == name {
			return i
		}
	}
	return -1
}

// accepts reports whether args, a JSON object, certainly satisfies the
// schema. False means "not known": the general validator decides.
func (fs *flatSchema) accepts(args jsontext.Value) bool {
	if len(args) > flatMaxArgs {
		return false
	}
	sc := paramScannerPool.Get().(*paramScanner)
	defer sc.release()
	if !sc.begin(args) {
		return false
	}
	d := &sc.dec
	var seen uint64
	for {
		name, ok := sc.nextName()
		if !ok {
			break
		}
		i := -1
		for j := range fs.props {
			if fs.props[j].name == string(name) {
				i = j
				break
			}
		}
		tok, err := d.ReadToken()
		if err != nil {
			return false
		}
		if i < 0 {
			switch tok.Kind() {
			case '{', '[':
				return false // nested values: left to the general validator
			case '0':
				// The general validator's decoder refuses numbers out of
				// the float64 range anywhere.
				if f, err := tok.Float(); err != nil || math.IsInf(f, 0) {
					return false
				}
			}
			if !fs.additional {
				return false
			}
			continue
		}
		if !fs.props[i].accepts(tok) {
			return false
		}
		seen |= 1 << i
	}
	return sc.end() && seen&fs.required == fs.required
}

func (p *flatProp) accepts(tok jsontext.Token) bool {
	switch tok.Kind() {
	case 'n':
		return p.types&flatNull != 0
	case '"':
		return p.types&flatString != 0
	case 't', 'f':
		return p.types&flatBoolean != 0
	case '0':
		if p.types&(flatNumber|flatInteger) == 0 {
			return false
		}
		f, err := tok.Float()
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return false
		}
		if p.types&flatNumber == 0 {
			if _, frac := math.Modf(f); frac != 0 {
				return false
			}
		}
		if p.hasMin && f < p.min || p.hasMax && f > p.max {
			return false
		}
		return true
	}
	return false
}
