// Command resources serves a small set of notes over stdio in both protocol
// eras: a resource listing them, a resource template reading one
// (notes://{name}), a prompt that embeds a note, and completions of note
// names for both the template and the prompt. It exits with status 0 when
// the client closes stdin.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"maps"
	"slices"
	"strings"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/transport/stdio"
)

var notes = map[string]string{
	"groceries": "milk, bread, apples",
	"ideas":     "a shorter first hour",
	"todo":      "write the release notes",
}

// example:resources begin

// readNote serves notes://{name}; Vars holds the template's variables.
func readNote(ctx context.Context, _ *pmcp.RequestHandlerExtra, r *pmcp.ResourceRequest) (*pmcp.ReadResourceResult, error) {
	text, ok := notes[r.Vars["name"]]
	if !ok {
		return nil, fmt.Errorf("note %q: %w", r.Vars["name"], pmcp.ErrResourceNotFound)
	}
	return &pmcp.ReadResourceResult{Contents: []*pmcp.ResourceContents{{URI: r.URI, MIMEType: "text/plain", Text: text}}}, nil
}

// summarize embeds the note named by its (required) argument.
func summarize(ctx context.Context, _ *pmcp.RequestHandlerExtra, p *pmcp.GetPromptParams) (*pmcp.GetPromptResult, error) {
	name := p.Arguments["name"]
	text, ok := notes[name]
	if !ok {
		return nil, fmt.Errorf("no note %q", name)
	}
	return &pmcp.GetPromptResult{Messages: []*pmcp.PromptMessage{
		{Role: "user", Content: pmcp.Text("Summarize the note " + name + " in one line:\n" + text)},
	}}, nil
}

// complete offers the note names that begin with what the user typed, for
// the template's {name} and for the prompt's name argument alike.
func complete(ctx context.Context, _ *pmcp.RequestHandlerExtra, p *pmcp.CompleteParams) (*pmcp.CompleteResult, error) {
	var values []string
	if p.Argument.Name == "name" {
		for n := range notes {
			if strings.HasPrefix(n, p.Argument.Value) {
				values = append(values, n)
			}
		}
		slices.Sort(values)
	}
	return &pmcp.CompleteResult{Completion: pmcp.Completion{Values: values}}, nil
}

// example:resources end

func main() {
	srv, err := pmcp.NewServer(pmcp.ServerOptions{Name: "notes", Version: "1.0.0", Completion: complete})
	if err != nil {
		log.Fatal(err)
	}
	// example:register begin
	err = errors.Join(
		srv.AddResource(&pmcp.Resource{URI: "notes://index", Name: "index", MIMEType: "text/plain"},
			func(ctx context.Context, _ *pmcp.RequestHandlerExtra, r *pmcp.ResourceRequest) (*pmcp.ReadResourceResult, error) {
				names := slices.Sorted(maps.Keys(notes))
				return &pmcp.ReadResourceResult{Contents: []*pmcp.ResourceContents{{URI: r.URI, MIMEType: "text/plain", Text: strings.Join(names, "\n")}}}, nil
			}),
		srv.AddResourceTemplate(&pmcp.ResourceTemplate{URITemplate: "notes://{name}", Name: "note", MIMEType: "text/plain"}, readNote),
		srv.AddPrompt(&pmcp.Prompt{Name: "summarize", Description: "Summarizes a note.",
			Arguments: []*pmcp.PromptArgument{{Name: "name", Description: "the note", Required: true}}}, summarize),
	)
	if err != nil {
		log.Fatal(err)
	}
	// example:register end
	if err := srv.Serve(context.Background(), stdio.Stdio(stdio.Options{})); err != nil {
		log.Fatal(err)
	}
}
