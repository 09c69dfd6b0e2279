package pmcp

import "context"

// PromptHandler renders a prompt. Required arguments are checked before it
// runs.
type PromptHandler func(ctx context.Context, extra *RequestHandlerExtra, p *GetPromptParams) (*GetPromptResult, error)

type serverPrompt struct {
	prompt  *Prompt
	handler PromptHandler
	scopes  []string
}

// AddPrompt registers a prompt. A prompt with the same name is replaced.
func (s *Server) AddPrompt(p *Prompt, h PromptHandler) error {
	if p == nil || h == nil {
		return regErr("nil prompt or handler")
	}
	if p.Name == "" {
		return regErr("prompt needs a name")
	}
	scopes, err := checkScopes("prompt "+p.Name, p.Scopes)
	if err != nil {
		return err
	}
	s.noteScoped(scopes)
	s.mu.Lock()
	s.prompts.put(p.Name, &serverPrompt{prompt: p, handler: h, scopes: scopes})
	s.mu.Unlock()
	s.notifyListChanged(listPrompts)
	return nil
}

// RemovePrompts unregisters prompts by name.
func (s *Server) RemovePrompts(names ...string) int {
	s.mu.Lock()
	n := s.prompts.remove(names...)
	s.mu.Unlock()
	if n > 0 {
		s.notifyListChanged(listPrompts)
	}
	return n
}

func (s *Server) getPrompt(ctx context.Context, extra *RequestHandlerExtra, p *GetPromptParams) (Result, error) {
	sp, ok := s.prompts.get(p.Name)
	if !ok {
		return nil, unknownPrompt(p.Name)
	}
	if err := authorize(extra, sp.scopes); err != nil {
		return nil, err
	}
	for _, a := range sp.prompt.Arguments {
		if _, ok := p.Arguments[a.Name]; a.Required && !ok {
			return nil, invalidParams("prompt %q: missing required argument %q", p.Name, a.Name)
		}
	}
	res, err := sp.handler(ctx, extra, p)
	if err != nil {
		return nil, err
	}
	if res == nil {
		return &GetPromptResult{}, nil
	}
	// Normalized by finishResult, in the request's copy.
	return res, nil
}
