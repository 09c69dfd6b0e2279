package schema

import (
	"fmt"
	"maps"
	"math"
	"net/url"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
)

// This file builds a graph of the subschemas of a schema document, directly
// from its JSON, mirroring how jsonschema-go walks and resolves a schema. The
// graph is used to
//
//   - refuse $ref targets outside the document (jsonschema-go would call a
//     Loader; we never pass one, but we want a clear error),
//   - refuse reference cycles that do not consume input, such as
//     {"$ref": "#"}: jsonschema-go would recurse until the goroutine stack
//     overflows, which is a fatal, unrecoverable error that kills the process,
//   - bound regular expressions,
//   - estimate, before validating, an upper bound on the work jsonschema-go
//     will do for a given instance (see estimate),
//   - translate jsonschema-go's error chains, which name schema locations,
//     into instance paths (see explain.go).

type draft int

const (
	draft2020 draft = iota
	draft7
)

const (
	schema2020 = "https://json-schema.org/draft/2020-12/schema"
	schema7    = "http://json-schema.org/draft-07/schema#"
)

// canonicalDialect maps the accepted spellings of $schema (http or https,
// with or without an empty fragment) to the exact strings jsonschema-go
// recognizes. The empty string means draft 2020-12.
func canonicalDialect(s string) (string, draft, bool) {
	if s == "" {
		return schema2020, draft2020, true
	}
	rest, ok := strings.CutPrefix(s, "https://")
	if !ok {
		rest, ok = strings.CutPrefix(s, "http://")
	}
	if !ok {
		return "", 0, false
	}
	switch strings.TrimSuffix(rest, "#") {
	case "json-schema.org/draft/2020-12/schema":
		return schema2020, draft2020, true
	case "json-schema.org/draft-07/schema":
		return schema7, draft7, true
	}
	return "", 0, false
}

// knownKeywords are the JSON names of the fields of jsonschema.Schema. They are
// used to detect keys that jsonschema-go (which decodes schemas with
// encoding/json, whose field matching is case-insensitive) would read as a
// keyword although other validators would not.
var knownKeywords = []string{
	"$id", "$schema", "$ref", "$comment", "$defs", "definitions", "dependencies",
	"$anchor", "$dynamicAnchor", "$dynamicRef", "$vocabulary", "title",
	"description", "default", "deprecated", "readOnly", "writeOnly", "examples",
	"type", "enum", "const", "multipleOf", "minimum", "maximum",
	"exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "pattern",
	"prefixItems", "items", "minItems", "maxItems", "additionalItems",
	"uniqueItems", "contains", "minContains", "maxContains", "unevaluatedItems",
	"minProperties", "maxProperties", "required", "dependentRequired",
	"properties", "patternProperties", "additionalProperties", "propertyNames",
	"unevaluatedProperties", "allOf", "anyOf", "oneOf", "not", "if", "then",
	"else", "dependentSchemas", "contentEncoding", "contentMediaType",
	"contentSchema", "format",
}

var knownKeywordSet = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range knownKeywords {
		m[k] = true
	}
	return m
}()

// A node is one (sub)schema of the document.
type node struct {
	idx     int
	path    string         // JSON Pointer from the document root, as jsonschema-go spells it ("" for the root)
	obj     map[string]any // nil for the boolean schemas true and false
	boolean bool           // the value of a boolean schema

	base    *node    // innermost enclosing node with an $id (or the root)
	uri     *url.URL // for bases: the resolved base URI
	anchors map[string]*node
	dynamic map[string]bool // anchor name -> is a $dynamicAnchor

	// Applicators that apply to the same instance.
	inPlace []*node
	// Targets of $ref and $dynamicRef (a subset of inPlace).
	refTargets []*node

	// Applicators that apply to object members.
	properties        map[string]*node
	patternProperties []patternNode
	additionalProps   *node
	unevaluatedProps  *node
	propertyNames     *node

	// Applicators that apply to array items.
	prefixItems      []*node
	itemsArray       []*node // draft-07 "items": [...]
	items            *node
	additionalItems  *node
	contains         *node
	unevaluatedItems *node

	weight     float64 // cost of evaluating this node's own keywords once
	stringCost float64 // per-byte cost factor for string instances (0: no string keywords)
	unique     bool    // uniqueItems
	hasDefault bool

	closure float64 // cost of this node and everything applied in place (computed by checkCycles)
	chain   int     // longest chain of in-place applicators from this node, itself included
	state   uint8   // DFS state for checkCycles
}

type patternNode struct {
	source string
	re     *regexp.Regexp
	prog   float64 // number of instructions of the compiled program
	n      *node
}

// graph is the analyzed schema document.
type graph struct {
	draft  draft
	root   *node
	nodes  []*node
	byPath map[string]*node
	byID   map[string][]*node // raw $id -> nodes
	uris   map[string]*node   // resolved base URI -> node

	totalProgram float64
	hasDefaults  bool
	refs         []pendingRef
}

type pendingRef struct {
	n       *node
	ref     string
	dynamic bool
}

// analyze builds and checks the graph of the decoded schema document doc.
func analyze(doc any, d draft, lim Limits) (*graph, error) {
	g := &graph{
		draft:  d,
		byPath: map[string]*node{},
		byID:   map[string][]*node{},
		uris:   map[string]*node{},
	}
	root, err := g.walk(doc, "", nil)
	if err != nil {
		return nil, err
	}
	g.root = root
	if err := g.resolveRefs(); err != nil {
		return nil, err
	}
	if err := g.checkCycles(); err != nil {
		return nil, err
	}
	// A subschema whose evaluation on a single value exceeds the budget
	// makes every instance that reaches it fail; such schemas are not
	// useful, and are a sign of a deliberately exponential construction.
	for _, n := range g.nodes {
		if n.closure > float64(lim.MaxValidationCost) {
			return nil, limitErrorf("schema at %s is too complex: validating a single value against it could take %.3g units of work (the limit is %d)", displayPointer(n.path), n.closure, lim.MaxValidationCost)
		}
	}
	return g, nil
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func (g *graph) walk(v any, path string, parentBase *node) (*node, error) {
	if len(path) > maxPointerLen {
		// jsonschema-go prefixes its error messages with the pointer of
		// every schema being applied; keep those bounded.
		return nil, limitErrorf("schema at %s: JSON Pointer to the subschema is longer than %d bytes", displayPointer(path), maxPointerLen)
	}
	n := &node{idx: len(g.nodes), path: path}
	g.nodes = append(g.nodes, n)
	g.byPath[path] = n
	switch v := v.(type) {
	case bool:
		n.boolean = v
		n.base = parentBase
		n.weight = 1
		return n, nil
	case map[string]any:
		n.obj = v
	default:
		return nil, fmt.Errorf("schema at %s: a schema must be an object or a boolean, not %s", displayPointer(path), jsonTypeOf(v))
	}
	obj := n.obj

	for k := range obj {
		if knownKeywordSet[k] {
			continue
		}
		for _, kw := range knownKeywords {
			if strings.EqualFold(k, kw) {
				return nil, fmt.Errorf("schema at %s: key %q differs from the keyword %q only in case, which is ambiguous", displayPointer(path), k, kw)
			}
		}
	}

	// Base URI and anchors, as jsonschema-go's resolveURIs computes them.
	base := parentBase
	if parentBase == nil { // the root
		n.base = n
		n.uri = &url.URL{}
		g.uris[""] = n
		base = n
	}
	if id, ok := obj["$id"].(string); ok && id != "" {
		g.byID[id] = append(g.byID[id], n)
		_, hasRef := obj["$ref"].(string)
		if !(g.draft == draft7 && hasRef) {
			idURI, err := url.Parse(id)
			if err != nil {
				return nil, fmt.Errorf("schema at %s: $id: %v", displayPointer(path), err)
			}
			switch {
			case idURI.Fragment != "" && g.draft == draft2020:
				return nil, fmt.Errorf("schema at %s: $id %q must not have a fragment", displayPointer(path), id)
			case idURI.Fragment != "": // draft-07 location-independent identifier
				if err := g.addAnchor(base, strings.TrimPrefix(id, "#"), n, false); err != nil {
					return nil, err
				}
			default:
				u := base.uri.ResolveReference(idURI)
				if !u.IsAbs() {
					return nil, fmt.Errorf("schema at %s: $id %q does not resolve to an absolute URI", displayPointer(path), id)
				}
				key := u.String()
				if other := g.uris[key]; other != nil && other != n {
					return nil, fmt.Errorf("schema at %s: $id %q is also used at %s", displayPointer(path), id, displayPointer(other.path))
				}
				g.uris[key] = n
				n.uri = u
				base = n
			}
		}
	}
	n.base = base
	if g.draft == draft2020 {
		if a, ok := obj["$anchor"].(string); ok && a != "" {
			if err := g.addAnchor(base, a, n, false); err != nil {
				return nil, err
			}
		}
		if a, ok := obj["$dynamicAnchor"].(string); ok && a != "" {
			if err := g.addAnchor(base, a, n, true); err != nil {
				return nil, err
			}
		}
	}
	if r, ok := obj["$ref"].(string); ok && r != "" {
		g.refs = append(g.refs, pendingRef{n: n, ref: r})
	}
	if r, ok := obj["$dynamicRef"].(string); ok && r != "" {
		g.refs = append(g.refs, pendingRef{n: n, ref: r, dynamic: true})
	}

	// Subschemas, in a deterministic order.
	child := func(kw string, v any) (*node, error) {
		return g.walk(v, path+"/"+kw, base)
	}
	for _, kw := range slices.Sorted(maps.Keys(obj)) {
		val := obj[kw]
		switch kw {
		case "$defs", "definitions", "properties", "patternProperties", "dependentSchemas", "dependencies":
			m, ok := val.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("schema at %s: %s must be an object", displayPointer(path), kw)
			}
			for _, key := range slices.Sorted(maps.Keys(m)) {
				sub := m[key]
				if kw == "dependencies" {
					if _, isArray := sub.([]any); isArray {
						continue // draft-07 property dependencies
					}
				}
				c, err := child(kw+"/"+pointerEscaper.Replace(key), sub)
				if err != nil {
					return nil, err
				}
				switch kw {
				case "properties":
					if n.properties == nil {
						n.properties = map[string]*node{}
					}
					n.properties[key] = c
				case "patternProperties":
					re, prog, err := g.compilePattern(path, key)
					if err != nil {
						return nil, err
					}
					n.patternProperties = append(n.patternProperties, patternNode{source: key, re: re, prog: prog, n: c})
				case "dependentSchemas", "dependencies":
					n.inPlace = append(n.inPlace, c)
				}
			}
		case "prefixItems", "allOf", "anyOf", "oneOf", "items":
			a, ok := val.([]any)
			if !ok {
				if kw == "items" {
					c, err := child(kw, val)
					if err != nil {
						return nil, err
					}
					n.items = c
					continue
				}
				return nil, fmt.Errorf("schema at %s: %s must be an array", displayPointer(path), kw)
			}
			for i, sub := range a {
				c, err := child(kw+"/"+strconv.Itoa(i), sub)
				if err != nil {
					return nil, err
				}
				switch kw {
				case "prefixItems":
					n.prefixItems = append(n.prefixItems, c)
				case "items":
					n.itemsArray = append(n.itemsArray, c)
				default:
					n.inPlace = append(n.inPlace, c)
				}
			}
		case "additionalProperties", "propertyNames", "unevaluatedProperties",
			"additionalItems", "contains", "unevaluatedItems",
			"not", "if", "then", "else", "contentSchema":
			c, err := child(kw, val)
			if err != nil {
				return nil, err
			}
			switch kw {
			case "additionalProperties":
				n.additionalProps = c
			case "propertyNames":
				n.propertyNames = c
			case "unevaluatedProperties":
				n.unevaluatedProps = c
			case "additionalItems":
				n.additionalItems = c
			case "contains":
				n.contains = c
			case "unevaluatedItems":
				n.unevaluatedItems = c
			case "not", "if", "then", "else":
				n.inPlace = append(n.inPlace, c)
			case "contentSchema":
				// Recorded by jsonschema-go but never applied.
			}
		case "pattern":
			if p, ok := val.(string); ok && p != "" {
				_, prog, err := g.compilePattern(path, p)
				if err != nil {
					return nil, err
				}
				n.stringCost += prog * regexCostPerInstByte
			}
			n.stringCost += minStringCost
		case "minLength", "maxLength":
			n.stringCost += minStringCost
		case "default":
			n.hasDefault = true
			g.hasDefaults = true
		case "uniqueItems":
			n.unique = val == true
		}
	}

	// The cost of evaluating the node's own keywords: loops over enum,
	// required, properties (jsonschema-go looks up every listed property in
	// the instance) and the like, and formatting the node's pointer into an
	// error message.
	n.weight = 1 + float64(len(path))/1024
	for _, kw := range []string{"enum", "required"} {
		if a, ok := obj[kw].([]any); ok {
			n.weight += float64(len(a))
		}
	}
	for _, kw := range []string{"properties", "dependentRequired", "patternProperties"} {
		if m, ok := obj[kw].(map[string]any); ok {
			n.weight += float64(len(m))
		}
	}
	if _, ok := obj["const"]; ok {
		n.weight++
	}
	return n, nil
}

func (g *graph) addAnchor(base *node, name string, n *node, dynamic bool) error {
	if base.anchors == nil {
		base.anchors = map[string]*node{}
		base.dynamic = map[string]bool{}
	}
	if other, ok := base.anchors[name]; ok {
		return fmt.Errorf("schema at %s: duplicate anchor %q (also at %s)", displayPointer(n.path), name, displayPointer(other.path))
	}
	base.anchors[name] = n
	base.dynamic[name] = dynamic
	return nil
}

// compilePattern checks the size of a regular expression before compiling it.
// Go's regexp package guarantees matching in time linear in the input, but
// the constant is the size of the compiled program, which a short pattern
// with counted repetitions can make huge (x{1000}{1000} is rejected by Go, but
// (x{1000}){100} is not).
func (g *graph) compilePattern(path, p string) (*regexp.Regexp, float64, error) {
	size := programSizeOf(p)
	if size > maxPatternProgram {
		return nil, 0, limitErrorf("schema at %s: regular expression %q is too large (about %.0f instructions; the limit is %d)", displayPointer(path), truncate(p, 64), size, maxPatternProgram)
	}
	g.totalProgram += size
	if g.totalProgram > maxTotalPatternProgram {
		return nil, 0, limitErrorf("schema: regular expressions are too large in total (the limit is about %d instructions)", maxTotalPatternProgram)
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, 0, fmt.Errorf("schema at %s: invalid regular expression %q: %v", displayPointer(path), truncate(p, 64), err)
	}
	// The exact program size, now that it is known to be small.
	prog := size
	if sre, err := syntax.Parse(p, syntax.Perl); err == nil {
		if pr, err := syntax.Compile(sre.Simplify()); err == nil {
			prog = float64(len(pr.Inst))
		}
	}
	return re, prog, nil
}

// programSizeOf estimates the number of instructions of the compiled program
// for the regular expression p (as parsed by regexp.Compile). It returns 0 if
// p does not parse (regexp.Compile then reports the error).
func programSizeOf(p string) float64 {
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return 0
	}
	var size func(*syntax.Regexp) float64
	size = func(re *syntax.Regexp) float64 {
		var s float64
		for _, sub := range re.Sub {
			s += size(sub)
		}
		switch re.Op {
		case syntax.OpLiteral:
			return float64(len(re.Rune))
		case syntax.OpRepeat:
			count := re.Max
			if count < 0 {
				count = re.Min + 1
			}
			return s*float64(max(count, 1)) + 1
		case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpConcat, syntax.OpAlternate, syntax.OpCapture:
			return s + 2
		default:
			return s + 1
		}
	}
	return size(re)
}

// resolveRefs resolves every $ref and $dynamicRef the way jsonschema-go does,
// refusing references that leave the document.
func (g *graph) resolveRefs() error {
	for _, r := range g.refs {
		targets, err := g.resolveRef(r)
		if err != nil {
			return fmt.Errorf("schema at %s: %w", displayPointer(r.n.path), err)
		}
		r.n.inPlace = append(r.n.inPlace, targets...)
		r.n.refTargets = append(r.n.refTargets, targets...)
	}
	g.refs = nil
	return nil
}

func (g *graph) resolveRef(r pendingRef) ([]*node, error) {
	kw := "$ref"
	if r.dynamic {
		kw = "$dynamicRef"
	}
	refURI, err := url.Parse(r.ref)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %v", kw, r.ref, err)
	}
	refURI = r.n.base.uri.ResolveReference(refURI)
	u := *refURI
	u.Fragment = ""
	doc := g.uris[u.String()]
	if doc == nil {
		return nil, fmt.Errorf("%s %q refers to a schema outside this document; remote references are not supported", kw, r.ref)
	}
	frag := refURI.Fragment
	if frag != "" && !strings.HasPrefix(frag, "/") {
		target, ok := doc.anchors[frag]
		if !ok {
			return nil, fmt.Errorf("%s %q: no anchor %q", kw, r.ref, frag)
		}
		targets := []*node{target}
		if r.dynamic && doc.dynamic[frag] {
			// Resolved at validation time to the outermost dynamic scope
			// with this dynamic anchor: any of them may be used.
			for _, n := range g.nodes {
				if n.obj != nil && n != target && n.obj["$dynamicAnchor"] == frag {
					targets = append(targets, n)
				}
			}
		}
		return targets, nil
	}
	// A JSON Pointer relative to doc; normalize its escaping to ours.
	p := doc.path
	if frag != "" {
		for seg := range strings.SplitSeq(frag[1:], "/") {
			seg = strings.NewReplacer("~0", "~", "~1", "/").Replace(seg)
			p += "/" + pointerEscaper.Replace(seg)
		}
	}
	target := g.byPath[p]
	if target == nil {
		return nil, fmt.Errorf("%s %q does not refer to a schema in this document", kw, r.ref)
	}
	return []*node{target}, nil
}

// checkCycles refuses cycles among in-place applicators (which include $ref)
// and computes, for every node, the cost of evaluating it and everything it
// applies in place, counting repetitions: {"allOf": [{"$ref": "#/$defs/a"},
// {"$ref": "#/$defs/a"}]} costs a twice, and a chain of such definitions
// grows exponentially, which the estimate must see.
func (g *graph) checkCycles() error {
	const (
		unvisited = iota
		active
		done
	)
	var visit func(n *node, stack []*node) error
	visit = func(n *node, stack []*node) error {
		switch n.state {
		case done:
			return nil
		case active:
			i := slices.Index(stack, n)
			var names []string
			for _, s := range stack[i:] {
				names = append(names, displayPointer(s.path))
			}
			names = append(names, displayPointer(n.path))
			return fmt.Errorf("schema: reference cycle that does not consume input: %s", truncate(strings.Join(names, " -> "), 512))
		}
		n.state = active
		stack = append(stack, n)
		c := n.weight
		n.chain = 1
		for _, t := range n.inPlace {
			if err := visit(t, stack); err != nil {
				return err
			}
			c += t.closure
			n.chain = max(n.chain, t.chain+1)
		}
		n.closure = math.Min(c, 1e300)
		n.state = done
		if n.chain > maxValidationFrames {
			return limitErrorf("schema at %s: chain of more than %d references or other in-place applicators", displayPointer(n.path), maxValidationFrames)
		}
		return nil
	}
	for _, n := range g.nodes {
		if err := visit(n, nil); err != nil {
			return err
		}
	}
	return nil
}

// displayPointer renders a document JSON Pointer for error messages.
func displayPointer(p string) string {
	return strconv.Quote(truncate("#"+p, 128))
}

// estimator computes an upper bound on the work jsonschema-go does to
// validate an instance: every keyword evaluation on every instance value that
// any applicator could reach, ignoring the short-circuits of allOf, if/then and
// the like, and applying additionalProperties, patternProperties and
// unevaluatedProperties to every member. It stops as soon as the bound exceeds
// the budget, so its own cost is at most proportional to the budget (and it is
// much cheaper per unit than validation).
type estimator struct {
	budget float64
	used   float64
}

func (e *estimator) over() bool { return e.used > e.budget }

func (e *estimator) visit(v any, n *node, frames int) {
	if e.used > e.budget {
		return
	}
	if frames > maxValidationFrames {
		// jsonschema-go's recursion would get this deep.
		e.used = math.Inf(1)
		return
	}
	e.used += n.weight
	if n.obj == nil {
		return
	}
	if s, ok := v.(jstring); ok && n.stringCost > 0 {
		// Matching a pattern is linear in the length of the string with a
		// factor proportional to the program size. On failure jsonschema-go
		// also quotes the whole string into its error message, which is then
		// copied once per enclosing schema ("frames").
		e.used += float64(len(s)) * (n.stringCost + float64(frames)*frameCostPerByte)
	}
	for _, t := range n.inPlace {
		e.visit(v, t, frames+1)
	}
	switch v := v.(type) {
	case jobject:
		if n.properties == nil && n.patternProperties == nil && n.additionalProps == nil &&
			n.unevaluatedProps == nil && n.propertyNames == nil {
			return
		}
		for k, val := range v {
			if e.used > e.budget {
				return
			}
			e.used++ // the member loop itself
			if p := n.properties[k]; p != nil {
				e.visit(val, p, frames+1)
			} else if n.additionalProps != nil {
				e.visit(val, n.additionalProps, frames+1)
			}
			for _, pp := range n.patternProperties {
				e.used += float64(len(k)) * pp.prog * regexCostPerInstByte
				e.visit(val, pp.n, frames+1)
			}
			if n.unevaluatedProps != nil {
				e.visit(val, n.unevaluatedProps, frames+1)
			}
			if n.propertyNames != nil {
				e.visit(jstring(k), n.propertyNames, frames+1)
			}
		}
	case jarray:
		if n.unique {
			e.used += float64(subtreeSize(v, int(e.budget-e.used)+1))
		}
		if n.prefixItems == nil && n.itemsArray == nil && n.items == nil && n.additionalItems == nil &&
			n.contains == nil && n.unevaluatedItems == nil {
			return
		}
		for i, val := range v {
			if e.used > e.budget {
				return
			}
			e.used++
			if i < len(n.prefixItems) {
				e.visit(val, n.prefixItems[i], frames+1)
			}
			if i < len(n.itemsArray) {
				e.visit(val, n.itemsArray[i], frames+1)
			} else if n.additionalItems != nil {
				e.visit(val, n.additionalItems, frames+1)
			}
			if n.items != nil {
				e.visit(val, n.items, frames+1)
			}
			if n.contains != nil {
				e.visit(val, n.contains, frames+1)
			}
			if n.unevaluatedItems != nil {
				e.visit(val, n.unevaluatedItems, frames+1)
			}
		}
	}
}

// subtreeSize counts the values in v, stopping early past limit.
func subtreeSize(v any, limit int) int {
	n := 1
	switch v := v.(type) {
	case jobject:
		for _, e := range v {
			if n > limit {
				break
			}
			n += subtreeSize(e, limit-n)
		}
	case jarray:
		for _, e := range v {
			if n > limit {
				break
			}
			n += subtreeSize(e, limit-n)
		}
	}
	return n
}
