package pmcp

import (
	"context"
	"fmt"
)

// ReadAppResource reads the view of tool t (its _meta.ui.resourceUri, or
// the flat key) and returns its content with the content's _meta.ui (CSP,
// permissions, domain, border; nil when it has none). It fails when t has
// no view or the server answers without AppMIMEType content for it.
func (s *ClientSession) ReadAppResource(ctx context.Context, t *Tool) (*ResourceContents, *AppUI, error) {
	ui := MetaAppUI(t.Meta)
	if ui == nil || ui.ResourceURI == "" {
		return nil, nil, fmt.Errorf("pmcp: tool %q has no MCP Apps view", t.Name)
	}
	res, err := s.ReadResource(ctx, ui.ResourceURI)
	if err != nil {
		return nil, nil, err
	}
	for _, c := range res.Contents {
		if c.URI == ui.ResourceURI && c.MIMEType == AppMIMEType {
			if m := MetaAppUI(c.Meta); m != nil {
				return c, m, nil
			}
			return c, nil, nil
		}
	}
	return nil, nil, fmt.Errorf("pmcp: %s has no %s content", ui.ResourceURI, AppMIMEType)
}
