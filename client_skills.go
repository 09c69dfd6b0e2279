package pmcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// ErrSkillVerification: a skill file read from the server does not match
// the skill's entry (digest, size, or SKILL.md frontmatter). Its content
// must not be used, and LoadSkill reads nothing further.
var ErrSkillVerification = errors.New("pmcp: skill verification failed")

// ListSkills returns one page of the server's skills (skills/list).
func (s *ClientSession) ListSkills(ctx context.Context, cursor string) (*ListSkillsResult, error) {
	return listPage[ListSkillsResult](ctx, s, MethodSkillsList, cursor)
}

// GetSkill returns the entry of the skill whose SKILL.md is uri
// (skills/get).
func (s *ClientSession) GetSkill(ctx context.Context, uri string) (*SkillEntry, error) {
	meta, err := s.requestMeta(nil, nil)
	if err != nil {
		return nil, err
	}
	raw, err := s.call(ctx, MethodSkillsGet, &SkillURIParams{URI: uri, Meta: meta})
	if err != nil {
		return nil, err
	}
	var res GetSkillResult
	if err := decodeResult(MethodSkillsGet, raw, &res); err != nil {
		return nil, err
	}
	if res.Skill == nil {
		return nil, fmt.Errorf("pmcp: %s: result has no skill", MethodSkillsGet)
	}
	return res.Skill, nil
}

// Files returns the entry's file list, false when the skill's resources
// are "dynamic" (or malformed).
func (e *SkillEntry) Files() ([]SkillFile, bool) {
	if e == nil || e.Resources == nil {
		return nil, false
	}
	if fs, ok := e.Resources.([]SkillFile); ok {
		return fs, true
	}
	b, err := Marshal(e.Resources)
	if err != nil {
		return nil, false
	}
	var fs []SkillFile
	if Unmarshal(b, &fs) != nil {
		return nil, false
	}
	return fs, true
}

// LoadedSkill is a skill whose files were read and verified.
type LoadedSkill struct {
	Entry *SkillEntry
	// Files holds each file's text by URI, SKILL.md included.
	Files map[string]string
}

// LoadSkill reads a skill's files lazily, at the moment it is loaded (never
// at listing), verifying each against the entry: SKILL.md first (digest,
// size, and its YAML frontmatter field by field against the entry's),
// then the other listed files. The first mismatch stops the load with
// ErrSkillVerification; nothing after it is read.
func (s *ClientSession) LoadSkill(ctx context.Context, e *SkillEntry) (*LoadedSkill, error) {
	files, ok := e.Files()
	if !ok {
		return nil, fmt.Errorf("%w: %s has no file list (dynamic resources are not supported)", ErrSkillVerification, capPeerString(e.URI))
	}
	byURI := make(map[string]SkillFile, len(files))
	for _, f := range files {
		byURI[f.URI] = f
	}
	manifest, ok := byURI[e.URI]
	if !ok {
		return nil, fmt.Errorf("%w: the entry does not list its SKILL.md", ErrSkillVerification)
	}
	out := &LoadedSkill{Entry: e, Files: make(map[string]string, len(files))}
	read := func(f SkillFile) (string, error) {
		res, err := s.ReadResource(ctx, f.URI)
		if err != nil {
			return "", err
		}
		var text *string
		for _, c := range res.Contents {
			if c != nil && (c.URI == f.URI || len(res.Contents) == 1) {
				t := c.Text
				text = &t
				break
			}
		}
		if text == nil {
			return "", fmt.Errorf("%w: %s has no text content", ErrSkillVerification, capPeerString(f.URI))
		}
		if int64(len(*text)) != f.Size {
			return "", fmt.Errorf("%w: %s is %d bytes, the entry says %d", ErrSkillVerification, capPeerString(f.URI), len(*text), f.Size)
		}
		sum := sha256.Sum256([]byte(*text))
		if "sha256:"+hex.EncodeToString(sum[:]) != f.Digest {
			return "", fmt.Errorf("%w: %s does not match its digest", ErrSkillVerification, capPeerString(f.URI))
		}
		return *text, nil
	}
	text, err := read(manifest)
	if err != nil {
		return nil, err
	}
	fm, ok := parseFrontmatter(text)
	if !ok || !sameFrontmatter(fm, e.Frontmatter) {
		return nil, fmt.Errorf("%w: the frontmatter of %s differs from the entry's", ErrSkillVerification, capPeerString(e.URI))
	}
	out.Files[e.URI] = text
	for _, f := range files {
		if f.URI == e.URI {
			continue
		}
		t, err := read(f)
		if err != nil {
			return nil, err
		}
		out.Files[f.URI] = t
	}
	return out, nil
}

// sameFrontmatter compares a parsed frontmatter with an entry's, field by
// field: scalars as strings, maps recursively.
func sameFrontmatter(a map[string]any, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, av := range a {
		bv, ok := b[k]
		if !ok {
			return false
		}
		switch x := av.(type) {
		case map[string]any:
			y, ok := bv.(map[string]any)
			if !ok || !sameFrontmatter(x, y) {
				return false
			}
		case string:
			if fmt.Sprint(bv) != x {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// parseFrontmatter reads the leading "---" YAML block of a SKILL.md. It
// understands the subset skills use: "key: value" scalars (plain, single-
// or double-quoted) and nested maps by indentation. Anything else (lists,
// block scalars, anchors) is reported as unparseable, which makes the
// load fail rather than guess.
func parseFrontmatter(text string) (map[string]any, bool) {
	text = strings.TrimPrefix(text, "\ufeff")
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	if len(lines) < 2 || strings.TrimRight(lines[0], " \t") != "---" {
		return nil, false
	}
	type frame struct {
		indent int
		m      map[string]any
	}
	root := map[string]any{}
	stack := []frame{{-1, root}}
	var pendingKey string
	var pendingIndent int
	for _, line := range lines[1:] {
		if strings.TrimRight(line, " \t") == "---" {
			return root, pendingKey == ""
		}
		trimmed := strings.TrimLeft(line, " ")
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if strings.HasPrefix(trimmed, "\t") || strings.HasPrefix(trimmed, "- ") || trimmed == "-" {
			return nil, false
		}
		indent := len(line) - len(trimmed)
		if pendingKey != "" {
			if indent <= pendingIndent {
				return nil, false // "key:" with nothing nested
			}
			m := map[string]any{}
			stack[len(stack)-1].m[pendingKey] = m
			stack = append(stack, frame{indent, m})
			pendingKey = ""
		}
		for len(stack) > 1 && indent < stack[len(stack)-1].indent {
			stack = stack[:len(stack)-1]
		}
		if indent != stack[len(stack)-1].indent && len(stack) > 1 {
			return nil, false
		}
		key, rest, ok := splitYAMLKey(trimmed)
		if !ok {
			return nil, false
		}
		cur := stack[len(stack)-1].m
		if _, dup := cur[key]; dup {
			return nil, false
		}
		if rest == "" {
			pendingKey, pendingIndent = key, indent
			continue
		}
		v, ok := yamlScalar(rest)
		if !ok {
			return nil, false
		}
		cur[key] = v
	}
	return nil, false
}

func splitYAMLKey(s string) (key, rest string, ok bool) {
	if s[0] == '"' || s[0] == '\'' {
		end := strings.IndexByte(s[1:], s[0])
		if end < 0 {
			return "", "", false
		}
		k, ok := yamlScalar(s[:end+2])
		if !ok {
			return "", "", false
		}
		s2 := strings.TrimLeft(s[end+2:], " ")
		if !strings.HasPrefix(s2, ":") {
			return "", "", false
		}
		return k, strings.TrimSpace(s2[1:]), true
	}
	i := strings.Index(s, ": ")
	if i < 0 {
		if strings.HasSuffix(s, ":") {
			return strings.TrimSpace(s[:len(s)-1]), "", true
		}
		return "", "", false
	}
	return strings.TrimSpace(s[:i]), strings.TrimSpace(s[i+2:]), true
}

func yamlScalar(v string) (string, bool) {
	switch {
	case strings.HasPrefix(v, "\""):
		var out string
		if Unmarshal([]byte(v), &out) != nil {
			return "", false
		}
		return out, true
	case strings.HasPrefix(v, "'"):
		if len(v) < 2 || !strings.HasSuffix(v, "'") {
			return "", false
		}
		return strings.ReplaceAll(v[1:len(v)-1], "''", "'"), true
	case strings.ContainsAny(v[:1], "|>&*!{[%@`"):
		return "", false
	}
	if i := strings.Index(v, " #"); i >= 0 {
		v = strings.TrimSpace(v[:i])
	}
	return v, true
}
