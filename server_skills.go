package pmcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// The skills extension (SEP-2640): a server serves Agent Skills as
// resources under skill://<skill-path>/, lists them with skills/list and
// describes one with skills/get.
const (
	ExtensionSkills  = "io.modelcontextprotocol/skills"
	MethodSkillsList = "skills/list"
	MethodSkillsGet  = "skills/get"
	// skillFileName is the manifest every skill has at its root.
	skillFileName = "SKILL.md"
)

// Bounds the skills API enforces at registration.
const (
	// maxSkillFiles is the most files (SKILL.md included) one skill may
	// have; maxSkillBytes bounds their summed size.
	maxSkillFiles = 512
	maxSkillBytes = 16 << 20
)

// Skill is an Agent Skill to serve (Server.AddSkill). SKILL.md is rendered
// from Name, Description, Metadata and Body, so its frontmatter and the
// listing always agree.
type Skill struct {
	// Path is the skill path: one or more segments of lowercase letters,
	// digits and single hyphens, the last of which is the skill name, e.g.
	// "pdf-processing" or "acme/pdf-processing".
	Path string
	// Description says what the skill does and when to use it (required).
	Description string
	// Metadata is the optional frontmatter metadata map.
	Metadata map[string]string
	// Body is the Markdown after the frontmatter.
	Body string
	// Files are the skill's other files by relative path (no SKILL.md,
	// no "." or ".." segments).
	Files map[string]string
}

// SkillFile is one entry of a skill's resources: its URI, the SHA-256 of
// its bytes ("sha256:<hex>") and its size in bytes.
type SkillFile struct {
	URI    string `json:"uri"`
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

// SkillEntry describes one skill in skills/list and skills/get.
// Frontmatter is the SKILL.md frontmatter as a JSON object; Resources lists
// every file, SKILL.md included (or is the string "dynamic" for skills
// served by other means).
type SkillEntry struct {
	URI         string         `json:"uri"`
	Frontmatter map[string]any `json:"frontmatter"`
	Resources   any            `json:"resources"`
}

// ListSkillsResult answers skills/list.
type ListSkillsResult struct {
	ResultFields
	CacheFields
	Skills     []*SkillEntry `json:"skills"`
	NextCursor string        `json:"nextCursor,omitempty"`
}

// GetSkillResult answers skills/get.
type GetSkillResult struct {
	ResultFields
	CacheFields
	Skill *SkillEntry `json:"skill"`
}

// SkillURIParams are the params of skills/get.
type SkillURIParams struct {
	URI  string         `json:"uri"`
	Meta jsontext.Value `json:"_meta,omitempty"`
}

var skillSegment = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$`)

// skillSet holds the registered skills by SKILL.md URI.
type skillSet struct {
	mu   sync.Mutex
	byID map[string]*SkillEntry
}

func (ss *skillSet) len() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.byID)
}

// AddSkill serves sk: its files become resources (SKILL.md as text/markdown
// named and described from the frontmatter), the skills extension is
// declared, and skills/list and skills/get describe it. A skill with the
// same path is replaced. A skill has at most 512 files (SKILL.md
// included) of at most 16 MiB in all.
func (s *Server) AddSkill(sk *Skill) error {
	if sk == nil {
		return regErr("nil skill")
	}
	segs := strings.Split(sk.Path, "/")
	for _, seg := range segs {
		if !skillSegment.MatchString(seg) || strings.Contains(seg, "--") {
			return regErr("skill path %q: each segment must be 1-64 lowercase letters, digits and single hyphens", sk.Path)
		}
	}
	name := segs[len(segs)-1]
	if strings.TrimSpace(sk.Description) == "" {
		return regErr("skill %q needs a description", sk.Path)
	}
	if len(sk.Files)+1 > maxSkillFiles {
		return regErr("skill %q has more than %d files", sk.Path, maxSkillFiles)
	}
	front := map[string]any{"name": name, "description": sk.Description}
	manifest := renderSkillMD(name, sk.Description, sk.Metadata, sk.Body)
	if len(sk.Metadata) > 0 {
		md := make(map[string]any, len(sk.Metadata))
		for k, v := range sk.Metadata {
			md[k] = v
		}
		front["metadata"] = md
	}
	base := "skill://" + sk.Path
	files := map[string]string{base + "/" + skillFileName: manifest}
	total := len(manifest)
	for rel, body := range sk.Files {
		clean := path.Clean(rel)
		if rel == "" || clean != rel || strings.HasPrefix(rel, "/") || strings.HasPrefix(rel, "../") || rel == ".." || rel == skillFileName {
			return regErr("skill %q: bad file path %q", sk.Path, rel)
		}
		files[base+"/"+rel] = body
		total += len(body)
	}
	if total > maxSkillBytes {
		return regErr("skill %q is larger than %d bytes", sk.Path, maxSkillBytes)
	}
	entry := &SkillEntry{URI: base + "/" + skillFileName, Frontmatter: front}
	var list []SkillFile
	for _, uri := range slices.Sorted(mapKeys(files)) {
		body := files[uri]
		sum := sha256.Sum256([]byte(body))
		list = append(list, SkillFile{URI: uri, Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(body))})
		res := &Resource{URI: uri, Name: strings.TrimPrefix(uri, base+"/"), MIMEType: skillMIME(uri)}
		if uri == entry.URI {
			res.Name, res.Description = name, sk.Description
		}
		text := body
		mime := res.MIMEType
		if err := s.AddResource(res, func(ctx context.Context, _ *RequestHandlerExtra, r *ResourceRequest) (*ReadResourceResult, error) {
			return &ReadResourceResult{Contents: []*ResourceContents{{URI: r.URI, MIMEType: mime, Text: text}}}, nil
		}); err != nil {
			return err
		}
	}
	entry.Resources = list
	s.skills.mu.Lock()
	if s.skills.byID == nil {
		s.skills.byID = make(map[string]*SkillEntry)
	}
	s.skills.byID[entry.URI] = entry
	s.skills.mu.Unlock()
	return nil
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func skillMIME(uri string) string {
	switch strings.ToLower(path.Ext(uri)) {
	case ".md":
		return "text/markdown"
	case ".json":
		return "application/json"
	}
	return "text/plain"
}

// renderSkillMD writes SKILL.md: YAML frontmatter whose scalars are JSON
// strings (valid YAML double-quoted scalars), then the body.
func renderSkillMD(name, desc string, md map[string]string, body string) string {
	q := func(v string) string {
		b, _ := json.Marshal(v)
		return string(b)
	}
	var b strings.Builder
	b.WriteString("---\nname: " + q(name) + "\ndescription: " + q(desc) + "\n")
	if len(md) > 0 {
		b.WriteString("metadata:\n")
		for _, k := range slices.Sorted(mapKeys(md)) {
			b.WriteString("  " + q(k) + ": " + q(md[k]) + "\n")
		}
	}
	b.WriteString("---\n")
	if body != "" {
		b.WriteString("\n" + body)
		if !strings.HasSuffix(body, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// serveSkills answers skills/list and skills/get.
func (s *Server) serveSkills(req string, params jsontext.Value, rs *reqState) (Result, error) {
	s.skills.mu.Lock()
	keys := slices.Sorted(mapKeys(s.skills.byID))
	entries := make([]*SkillEntry, len(keys))
	for i, k := range keys {
		entries[i] = s.skills.byID[k]
	}
	s.skills.mu.Unlock()
	if req == MethodSkillsGet {
		p, err := decodeParams[SkillURIParams](params)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.URI == p.URI {
				return rs.out.adopt(&GetSkillResult{Skill: e}), nil
			}
		}
		return nil, invalidParams("unknown skill %q", p.URI)
	}
	p, err := decodeParams[paginatedParams](params)
	if err != nil {
		return nil, err
	}
	start := 0
	if p.Cursor != "" {
		after, err := decodeCursor(p.Cursor)
		if err != nil {
			return nil, invalidParams("invalid cursor")
		}
		start, _ = slices.BinarySearch(keys, after)
		if start < len(keys) && keys[start] == after {
			start++
		}
	}
	end := min(start+s.pageSize(), len(keys))
	out := &ListSkillsResult{Skills: entries[start:end]}
	if end < len(keys) {
		out.NextCursor = encodeCursor(keys[end-1])
	}
	if out.Skills == nil {
		out.Skills = []*SkillEntry{}
	}
	return rs.out.adopt(out), nil
}
