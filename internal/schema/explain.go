package schema

import (
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/google/jsonschema-go/jsonschema"
)

// This file turns jsonschema-go's validation errors into short messages that
// name the offending instance location.
//
// jsonschema-go reports the first failing keyword as a chain of wrapped
// errors, one per schema being evaluated, each prefixed "validating <loc>: "
// where <loc> is the schema's JSON Pointer ("/properties/a") or its $id, and
// ending with a message such as `type: x has type "string", want "integer"`.
// The chain therefore names schema locations, not instance locations. We walk
// it alongside the instance: a step into "properties/a" is a step into member
// "a"; a step through "allOf/0" or a $ref stays on the same value; a step into
// "items" or "additionalProperties" could be any item or member, so we find the
// first one that fails that subschema (jsonschema-go also stops at the first)
// by validating the candidates against it, and continue with that error.
// The final message is built from the failing subschema and the instance value
// rather than from jsonschema-go's text, which embeds (possibly huge) values.

const (
	maxMessageLen     = 512 // bytes per message
	maxErrors         = 8   // messages per ValidationError
	maxKeyLen         = 64  // bytes per member name in a path
	maxPathLen        = 200 // bytes per path
	maxDetailBranches = 4   // anyOf/oneOf branches explained
)

type pathSeg struct {
	key   string
	index int
	kind  segKind
}

type segKind uint8

const (
	segKey segKind = iota
	segIndex
	segName    // the member name itself (propertyNames)
	segUnknown // some member or item we could not identify
)

type explainer struct {
	c       *Compiled
	budget  float64 // estimated work left for re-validating subtrees
	details bool    // whether to explain anyOf/oneOf branches
}

func (c *Compiled) explain(err error, inst any) *ValidationError {
	// Explaining may re-validate parts of the instance; it gets half the
	// validation budget, and degrades to less precise messages beyond it.
	x := &explainer{c: c, budget: float64(c.limits.MaxValidationCost) / 2, details: true}
	frames, leaf := splitChain(err)
	msgs := x.chain(frames, leaf, nil, inst, true, nil)
	if len(msgs) > maxErrors {
		msgs = msgs[:maxErrors]
	}
	return &ValidationError{Label: c.label, Errors: msgs}
}

// splitChain returns the schema locations of a jsonschema-go validation error
// chain, outermost first, and the innermost message.
func splitChain(err error) (frames []string, leaf string) {
	const prefix = "validating "
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			break
		}
		inner := u.Unwrap()
		if inner == nil {
			break
		}
		outer, in := err.Error(), inner.Error()
		head, ok := strings.CutSuffix(outer, in)
		if !ok || !strings.HasPrefix(head, prefix) || !strings.HasSuffix(head, ": ") {
			break
		}
		frames = append(frames, head[len(prefix):len(head)-2])
		err = inner
	}
	return frames, err.Error()
}

// chain explains the failure described by frames and leaf. start is the node
// of frames[0] if already known; cur is the instance value at that node and
// known reports whether cur is reliable; path is the instance path to cur.
func (x *explainer) chain(frames []string, leaf string, start *node, cur any, known bool, path []pathSeg) []string {
	n := start
	if n == nil && len(frames) > 0 {
		n = x.lookup(frames[0], nil)
	}
	if n == nil {
		return []string{x.message(path, nil, cur, false, leaf)}
	}
	for _, f := range frames[1:] {
		next := x.lookup(f, n)
		if next == nil {
			return []string{x.message(path, nil, cur, false, leaf)}
		}
		st := step(n, next)
		switch st.kind {
		case stepSame:
		case stepKey:
			if obj, ok := cur.(jobject); ok && known && n.properties[st.key] == next {
				// jsonschema-go checks "properties" in map order, so which
				// failing property it reports is random. Report the first
				// one in name order instead, for stable messages.
				if msgs, ok := x.firstFailingProperty(n, obj, st.key, path); ok {
					return msgs
				}
			}
			if obj, ok := cur.(jobject); ok && known {
				cur, known = obj[st.key]
				if !known {
					cur = nil
				}
			} else {
				known = false
			}
			path = append(path, pathSeg{key: st.key})
		case stepIndex:
			if arr, ok := cur.(jarray); ok && known && st.index < len(arr) {
				cur = arr[st.index]
			} else {
				known = false
			}
			path = append(path, pathSeg{index: st.index, kind: segIndex})
		default:
			if known {
				if msgs, ok := x.findFailing(n, next, st, cur, path); ok {
					return msgs
				}
			}
			kind := segUnknown
			if st.kind == stepAnyName {
				kind = segName
			}
			path = append(path, pathSeg{kind: kind, key: "*"})
			known = false
		}
		n = next
	}
	return []string{x.message(path, n, cur, known, leaf)}
}

// lookup finds the node a frame names: a JSON Pointer, "root", or an $id.
// Ambiguities are resolved in favor of a node reachable from prev.
func (x *explainer) lookup(frame string, prev *node) *node {
	g := x.c.g
	var cands []*node
	if frame == "root" {
		cands = append(cands, g.root)
	}
	if strings.HasPrefix(frame, "/") {
		if n := g.byPath[frame]; n != nil {
			cands = append(cands, n)
		}
	}
	cands = append(cands, g.byID[frame]...)
	if len(cands) == 0 {
		return nil
	}
	if prev != nil {
		for _, c := range cands {
			if slices.Contains(prev.refTargets, c) || step(prev, c).kind != stepJump {
				return c
			}
		}
	}
	return cands[0]
}

type stepKind uint8

const (
	stepSame stepKind = iota // same instance value (allOf, $ref, ...)
	stepJump                 // unrelated nodes; treated as the same value
	stepKey
	stepIndex
	stepAnyMember     // some member of an object (additionalProperties, ...)
	stepPatternMember // some member whose name matches a pattern
	stepAnyName       // some member name (propertyNames)
	stepAnyItem       // some item of an array, from index start on
)

type stepInfo struct {
	kind  stepKind
	key   string
	index int
}

var pointerUnescaper = strings.NewReplacer("~1", "/", "~0", "~")

// step classifies the move from schema p to schema c in an error chain.
func step(p, c *node) stepInfo {
	if slices.Contains(p.refTargets, c) {
		return stepInfo{kind: stepSame}
	}
	rel, ok := strings.CutPrefix(c.path, p.path+"/")
	if !ok {
		return stepInfo{kind: stepJump}
	}
	kw, rest, hasRest := strings.Cut(rel, "/")
	if hasRest && strings.Contains(rest, "/") {
		return stepInfo{kind: stepJump}
	}
	switch kw {
	case "properties":
		return stepInfo{kind: stepKey, key: pointerUnescaper.Replace(rest)}
	case "patternProperties":
		return stepInfo{kind: stepPatternMember}
	case "additionalProperties", "unevaluatedProperties":
		return stepInfo{kind: stepAnyMember}
	case "propertyNames":
		return stepInfo{kind: stepAnyName}
	case "prefixItems", "items":
		if hasRest {
			i, err := strconv.Atoi(rest)
			if err != nil {
				return stepInfo{kind: stepJump}
			}
			return stepInfo{kind: stepIndex, index: i}
		}
		return stepInfo{kind: stepAnyItem, index: len(p.prefixItems)}
	case "additionalItems":
		return stepInfo{kind: stepAnyItem, index: len(p.itemsArray)}
	case "unevaluatedItems", "contains":
		return stepInfo{kind: stepAnyItem}
	case "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "dependencies":
		return stepInfo{kind: stepSame}
	}
	return stepInfo{kind: stepJump}
}

type candidate struct {
	seg pathSeg
	val any
}

// findFailing finds the first member or item of cur that fails schema c (a
// child of p reached by an ambiguous step) and explains that failure.
func (x *explainer) findFailing(p, c *node, st stepInfo, cur any, path []pathSeg) ([]string, bool) {
	var cands []candidate
	switch st.kind {
	case stepAnyMember, stepPatternMember, stepAnyName:
		obj, ok := cur.(jobject)
		if !ok {
			return nil, false
		}
		var pat *patternNode
		if st.kind == stepPatternMember {
			for i := range p.patternProperties {
				if p.patternProperties[i].n == c {
					pat = &p.patternProperties[i]
				}
			}
			if pat == nil {
				return nil, false
			}
		}
		for _, k := range sortedKeys(obj) {
			switch {
			case st.kind == stepAnyName:
				cands = append(cands, candidate{pathSeg{key: k, kind: segName}, jstring(k)})
				continue
			case pat != nil:
				if !pat.re.MatchString(k) {
					continue
				}
			case c == p.additionalProps:
				if p.properties[k] != nil || slices.ContainsFunc(p.patternProperties, func(pp patternNode) bool { return pp.re.MatchString(k) }) {
					continue
				}
			}
			cands = append(cands, candidate{pathSeg{key: k}, obj[k]})
		}
	case stepAnyItem:
		arr, ok := cur.(jarray)
		if !ok {
			return nil, false
		}
		for i := st.index; i < len(arr); i++ {
			cands = append(cands, candidate{pathSeg{index: i, kind: segIndex}, arr[i]})
		}
	default:
		return nil, false
	}
	sub := x.c.subValidator(c)
	if sub == nil {
		return nil, false
	}
	for _, cand := range cands {
		if !x.spend(cand.val, c) {
			return nil, false
		}
		err := safeValidate(sub, cand.val)
		if err == nil {
			continue
		}
		p2 := append(slices.Clip(path), cand.seg)
		frames, leaf := splitChain(err)
		if len(frames) >= 2 { // frames[0] is the wrapper schema
			return x.chain(frames[1:], leaf, c, cand.val, true, p2), true
		}
		return []string{x.message(p2, c, cand.val, true, leaf)}, true
	}
	return nil, false
}

// firstFailingProperty looks for a member of obj named before key (which is
// known to fail) that fails its schema in n.properties, and explains it.
func (x *explainer) firstFailingProperty(n *node, obj jobject, key string, path []pathSeg) ([]string, bool) {
	for _, k := range sortedKeys(obj) {
		if k >= key {
			break
		}
		p := n.properties[k]
		if p == nil {
			continue
		}
		sub := x.c.subValidator(p)
		if sub == nil || !x.spend(obj[k], p) {
			return nil, false
		}
		if err := safeValidate(sub, obj[k]); err != nil {
			frames, leaf := splitChain(err)
			p2 := append(slices.Clip(path), pathSeg{key: k})
			if len(frames) >= 2 {
				return x.chain(frames[1:], leaf, p, obj[k], true, p2), true
			}
			return []string{x.message(p2, p, obj[k], true, leaf)}, true
		}
	}
	return nil, false
}

// spend charges the estimated cost of validating v against n to the budget.
func (x *explainer) spend(v any, n *node) bool {
	est := estimator{budget: x.budget}
	est.visit(v, n, 1)
	x.budget -= est.used
	return x.budget >= 0
}

func sortedKeys(m jobject) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// subValidator returns a validator for the subschema n, resolved in the
// context of the whole document (so its $refs work), or nil. It is a schema
// {"$ref": "<internal URI>#<pointer to n>"} whose loader returns the
// document. Validators are cached; their number is bounded.
func (c *Compiled) subValidator(n *node) *jsonschema.Resolved {
	c.subMu.Lock()
	defer c.subMu.Unlock()
	if r, ok := c.subs[n.idx]; ok {
		return r
	}
	if len(c.subs) >= c.maxSub {
		return nil
	}
	if c.subs == nil {
		c.subs = map[int]*jsonschema.Resolved{}
	}
	base := url.URL{Scheme: "pmcp-internal", Host: "schema", Path: "/document.json"}
	ref := base
	ref.Fragment = n.path
	w := &jsonschema.Schema{Schema: c.schema.Schema, Ref: ref.String()}
	r, err := w.Resolve(&jsonschema.ResolveOptions{
		Loader: func(u *url.URL) (*jsonschema.Schema, error) {
			if u.String() == base.String() {
				// c.schema.Schema is never empty, so jsonschema-go does not
				// write to c.schema while resolving w.
				return c.schema, nil
			}
			return refuseRemote(u)
		},
	})
	if err != nil {
		r = nil
	}
	c.subs[n.idx] = r
	return r
}

// message renders one error: location and description.
func (x *explainer) message(path []pathSeg, n *node, cur any, known bool, leaf string) string {
	loc := location(path)
	msg := x.describe(path, loc, n, cur, known, leaf)
	if loc != "" {
		msg = loc + ": " + msg
	}
	return truncate(msg, maxMessageLen)
}

// location renders an instance path: `property "a.b[2]"`, or for a failing
// member name `property name "k" in "a.b"`. The root is "".
func location(path []pathSeg) string {
	if len(path) == 0 {
		return ""
	}
	if last := path[len(path)-1]; last.kind == segName {
		name := strconv.Quote(truncate(last.key, maxKeyLen))
		if len(path) == 1 {
			return "property name " + name
		}
		return "property name " + name + " in " + strconv.Quote(formatPath(path[:len(path)-1]))
	}
	return "property " + strconv.Quote(formatPath(path))
}

func formatPath(path []pathSeg) string {
	var b strings.Builder
	for i, s := range path {
		if b.Len() > maxPathLen {
			b.WriteString("…")
			break
		}
		switch s.kind {
		case segIndex:
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		case segUnknown:
			b.WriteString("[*]")
		default:
			k := truncate(s.key, maxKeyLen)
			if isIdentifier(k) {
				if i > 0 {
					b.WriteByte('.')
				}
				b.WriteString(k)
			} else {
				b.WriteString("[" + strconv.Quote(k) + "]")
			}
		}
	}
	return b.String()
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r == '$' || unicode.IsLetter(r) || (i > 0 && (unicode.IsDigit(r) || r == '-'))) {
			return false
		}
	}
	return true
}

// describe renders the failure of the keyword named by leaf in schema n on
// value cur.
func (x *explainer) describe(path []pathSeg, loc string, n *node, cur any, known bool, leaf string) string {
	var obj map[string]any
	if n != nil {
		obj = n.obj
	}
	if obj == nil {
		if n != nil && !n.boolean {
			return "no value is allowed here"
		}
		return sanitize(leaf)
	}
	if strings.HasPrefix(leaf, "unexpected additional properties") {
		if o, ok := cur.(jobject); ok && known {
			var extra []string
			for _, k := range sortedKeys(o) {
				if n.properties[k] == nil && !slices.ContainsFunc(n.patternProperties, func(pp patternNode) bool { return pp.re.MatchString(k) }) {
					extra = append(extra, k)
				}
			}
			if len(extra) == 1 {
				return "unexpected property " + quoteName(extra[0])
			}
			if len(extra) > 1 {
				return "unexpected properties " + quoteList(extra)
			}
		}
		return "unexpected properties"
	}
	kw, rest, _ := strings.Cut(leaf, ":")
	kw, _, _ = strings.Cut(kw, "[")
	got := ""
	switch kw {
	case "type":
		want := typeList(obj["type"])
		if known {
			return "expected " + want + ", got " + jsonTypeOf(cur)
		}
		return "expected " + want
	case "enum":
		vals, _ := obj["enum"].([]any)
		if len(vals) == 1 {
			return "must be " + jsonValue(vals[0])
		}
		return "must be one of " + valueList(vals)
	case "const":
		return "must be " + jsonValue(obj["const"])
	case "multipleOf":
		return "must be a multiple of " + number(obj[kw])
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
		if f, ok := cur.(float64); ok && known {
			got = " (got " + formatFloat(f) + ")"
		}
		op := map[string]string{"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}[kw]
		return "must be " + op + " " + number(obj[kw]) + got
	case "minLength", "maxLength":
		if s, ok := cur.(jstring); ok && known {
			got = fmt.Sprintf(" (got %d)", utf8.RuneCountInString(string(s)))
		}
		return "must be at " + minMax(kw) + " " + count(obj[kw], "character") + " long" + got
	case "pattern":
		p, _ := obj["pattern"].(string)
		return "must match the pattern " + strconv.Quote(truncate(p, 128))
	case "minItems", "maxItems":
		if a, ok := cur.(jarray); ok && known {
			got = fmt.Sprintf(" (got %d)", len(a))
		}
		return "must have at " + minMax(kw) + " " + count(obj[kw], "item") + got
	case "uniqueItems":
		var i, j int
		if _, err := fmt.Sscanf(strings.TrimSpace(rest), "array items %d and %d are equal", &i, &j); err == nil {
			return fmt.Sprintf("must not contain duplicate items (items %d and %d are equal)", j, i)
		}
		return "must not contain duplicate items"
	case "contains":
		return `must contain at least one item matching the "contains" schema`
	case "minContains", "maxContains":
		return "must contain at " + minMax(kw) + " " + count(obj[kw], "item") + ` matching the "contains" schema`
	case "minProperties", "maxProperties":
		if o, ok := cur.(jobject); ok && known {
			got = fmt.Sprintf(" (got %d)", len(o))
		}
		return "must have at " + minMax(kw) + " " + count(obj[kw], "property") + got
	case "required":
		if o, ok := cur.(jobject); ok && known {
			var missing []string
			req, _ := obj["required"].([]any)
			for _, r := range req {
				if s, ok := r.(string); ok {
					if _, present := o[s]; !present && !slices.Contains(missing, s) {
						missing = append(missing, s)
					}
				}
			}
			if len(missing) == 1 {
				return "missing required property " + quoteName(missing[0])
			}
			if len(missing) > 1 {
				return "missing required properties " + quoteList(missing)
			}
		}
		return "missing required properties"
	case "dependentRequired":
		if o, ok := cur.(jobject); ok && known {
			deps, _ := obj["dependentRequired"].(map[string]any)
			if deps == nil {
				deps, _ = obj["dependencies"].(map[string]any)
			}
			for _, k := range slices.Sorted(maps.Keys(deps)) {
				if _, present := o[k]; !present {
					continue
				}
				reqs, _ := deps[k].([]any)
				for _, r := range reqs {
					if s, ok := r.(string); ok {
						if _, present := o[s]; !present {
							return "missing property " + quoteName(s) + " (required when " + quoteName(k) + " is present)"
						}
					}
				}
			}
		}
		return "missing dependent properties"
	case "not":
		return `must not match the "not" schema`
	case "anyOf":
		return `must match at least one of the "anyOf" schemas` + x.branches(path, loc, n, "anyOf", cur, known)
	case "oneOf":
		if strings.Contains(leaf, "validated against both") {
			return `must match exactly one of the "oneOf" schemas, but matches more than one`
		}
		return `must match exactly one of the "oneOf" schemas, but matches none` + x.branches(path, loc, n, "oneOf", cur, known)
	}
	return sanitize(leaf)
}

// branches explains why cur fails the first few branches of an anyOf or
// oneOf, as " (#0: ...; #1: ...)". Only one level of branches is explained.
func (x *explainer) branches(path []pathSeg, loc string, n *node, kw string, cur any, known bool) string {
	if !x.details || !known {
		return ""
	}
	x.details = false
	defer func() { x.details = true }()
	var parts []string
	for i := 0; i < maxDetailBranches; i++ {
		b := x.c.g.byPath[n.path+"/"+kw+"/"+strconv.Itoa(i)]
		if b == nil {
			break
		}
		sub := x.c.subValidator(b)
		if sub == nil || !x.spend(cur, b) {
			break
		}
		err := safeValidate(sub, cur)
		if err == nil {
			continue
		}
		frames, leaf := splitChain(err)
		var msgs []string
		if len(frames) >= 2 {
			msgs = x.chain(frames[1:], leaf, b, cur, true, path)
		} else {
			msgs = []string{x.message(path, b, cur, true, leaf)}
		}
		m := msgs[0]
		if loc != "" {
			m = strings.TrimPrefix(m, loc+": ")
		}
		parts = append(parts, fmt.Sprintf("#%d: %s", i, truncate(m, 160)))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

func minMax(kw string) string {
	if strings.HasPrefix(kw, "min") {
		return "least"
	}
	return "most"
}

func count(v any, noun string) string {
	f, _ := v.(float64)
	s := formatFloat(f) + " " + noun
	if f != 1 {
		if strings.HasSuffix(noun, "y") {
			s = s[:len(s)-1] + "ie"
		}
		s += "s"
	}
	return s
}

func number(v any) string {
	if f, ok := v.(float64); ok {
		return formatFloat(f)
	}
	return jsonValue(v)
}

func formatFloat(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// typeList renders the "type" keyword: "integer", "string or null".
func typeList(t any) string {
	var names []string
	switch t := t.(type) {
	case string:
		names = []string{t}
	case []any:
		hasNull := false
		for _, e := range t {
			if s, ok := e.(string); ok {
				if s == "null" {
					hasNull = true
				} else {
					names = append(names, s)
				}
			}
		}
		if hasNull {
			names = append(names, "null")
		}
	}
	switch len(names) {
	case 0:
		return "nothing"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// jsonValue renders a schema value (from the decoded document) as short JSON.
func jsonValue(v any) string {
	b, err := json.Marshal(v, json.Deterministic(true))
	if err != nil {
		return "?"
	}
	return truncate(string(b), 64)
}

func valueList(vals []any) string {
	var b strings.Builder
	for i, v := range vals {
		if i > 0 {
			b.WriteString(", ")
		}
		if i == 10 || b.Len() > 200 {
			fmt.Fprintf(&b, "… (%d values)", len(vals))
			break
		}
		b.WriteString(jsonValue(v))
	}
	return b.String()
}

func quoteName(s string) string { return strconv.Quote(truncate(s, maxKeyLen)) }

func quoteList(names []string) string {
	var b strings.Builder
	for i, s := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		if i == 10 || b.Len() > 200 {
			fmt.Fprintf(&b, "… (%d in all)", len(names))
			break
		}
		b.WriteString(quoteName(s))
	}
	return b.String()
}

// sanitize makes a jsonschema-go message fit for display: one line, bounded.
func sanitize(s string) string {
	s = truncate(s, maxMessageLen)
	return strings.Join(strings.Fields(s), " ")
}
