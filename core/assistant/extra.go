package assistant

import (
	"context"
	"strings"

	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
)

// registryFor is the registry of a turn of the organisation orgID: the
// service's, with the organisation's tools from Deps.Extra; and the notes,
// for the model, about tools left out. It never fails: the source leaves
// out what it cannot list, within its own time bound.
func (s *Service) registryFor(ctx context.Context, orgID string) (*tool.Registry, []string) {
	if s.d.Extra == nil || orgID == "" {
		return s.d.Registry, nil
	}
	ex := s.d.Extra.OrgTools(ctx, orgID)
	if len(ex.Tools) == 0 {
		return s.d.Registry, ex.Notes
	}
	reg, problems := s.d.Registry.With(ex)
	for _, err := range problems {
		s.log.Warn("an organisation's tool was left out", "org_id", orgID, "err", err)
	}
	return reg, ex.Notes
}

// registryOf is the registry that has the tool named name for the
// organisation orgID: the service's, unless Deps.Extra owns the name.
func (s *Service) registryOf(ctx context.Context, orgID, name string) *tool.Registry {
	if _, ok := s.d.Registry.Lookup(name); ok || s.d.Extra == nil || !s.d.Extra.Owns(name) {
		return s.d.Registry
	}
	reg, _ := s.registryFor(ctx, orgID)
	return reg
}

// notesBlock is the notes about tools left out, as a paragraph of the
// system prompt; "" without notes.
func notesBlock(notes []string) string {
	if len(notes) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\nTools not available in this reply (tell the user when they ask for them):")
	for _, n := range notes {
		b.WriteString("\n- ")
		b.WriteString(ports.OneLine(n))
	}
	return b.String()
}
