package pmcp_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// TestSkillsRoundTrip serves the everything server's skill and loads it
// through the client API on every transport, in both eras.
func TestSkillsRoundTrip(t *testing.T) {
	for _, tc := range transportCases {
		for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
			t.Run(tc.name+"/"+era.String(), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				s := tc.connect(t, pmcp.NewClient(pmcp.ClientOptions{Era: era}))
				if _, ok := s.ServerCapabilities().Extensions[pmcp.ExtensionSkills]; !ok {
					t.Fatalf("skills extension not declared: %+v", s.ServerCapabilities())
				}
				list, err := s.ListSkills(ctx, "")
				if err != nil || len(list.Skills) != 1 {
					t.Fatalf("skills/list: %+v %v", list, err)
				}
				e := list.Skills[0]
				if e.URI != "skill://pdf-processing/SKILL.md" || e.Frontmatter["name"] != "pdf-processing" {
					t.Fatalf("entry %+v", e)
				}
				got, err := s.GetSkill(ctx, e.URI)
				if err != nil || got.URI != e.URI {
					t.Fatalf("skills/get: %+v %v", got, err)
				}
				var re *jsonrpc.Error
				if _, err := s.GetSkill(ctx, "skill://nope/SKILL.md"); !errors.As(err, &re) || re.Code != jsonrpc.CodeInvalidParams {
					t.Fatalf("skills/get of an unknown skill: %v", err)
				}
				loaded, err := s.LoadSkill(ctx, e)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(loaded.Files["skill://pdf-processing/references/FORMS.md"], "Filling in forms") {
					t.Fatalf("files %v", loaded.Files)
				}
				// An entry that does not match what the server serves is
				// rejected at SKILL.md, before any other file is read.
				files, _ := e.Files()
				bad := *e
				bad.Resources = append([]pmcp.SkillFile(nil), files...)
				for i := range files {
					bad.Resources.([]pmcp.SkillFile)[i].Digest = "sha256:" + strings.Repeat("0", 64)
				}
				if _, err := s.LoadSkill(ctx, &bad); !errors.Is(err, pmcp.ErrSkillVerification) {
					t.Fatalf("tampered digest: %v", err)
				}
				bad = *e
				bad.Frontmatter = map[string]any{"name": "pdf-processing", "description": "something else"}
				if _, err := s.LoadSkill(ctx, &bad); !errors.Is(err, pmcp.ErrSkillVerification) {
					t.Fatalf("tampered frontmatter: %v", err)
				}
			})
		}
	}
}
