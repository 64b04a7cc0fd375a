package assistant

import (
	"context"
	"fmt"

	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
)

// CodeWriteAlwaysConfirms (invalid): a write tool cannot be exempted from
// confirmation.
const CodeWriteAlwaysConfirms = "write_always_confirms"

// ToolInfo describes a tool as the caller's organisation has it.
type ToolInfo struct {
	Name        string
	Description string
	Effect      tool.Effect
	// AlwaysConfirm says every call of the tool waits for a human decision:
	// true for every write, and for a read the organisation marked so.
	AlwaysConfirm bool
}

// Policy reads the tool policy of the caller's organisation; without a
// policy store (Deps.Policies nil) no tool is marked. Errors:
// unauthenticated; the store's.
func (s *Service) Policy(ctx context.Context) (tool.Policy, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return tool.Policy{}, err
	}
	return s.policy(ctx, p.OrgID)
}

func (s *Service) policy(ctx context.Context, orgID string) (tool.Policy, error) {
	if s.d.Policies == nil {
		return tool.NewPolicy(orgID), nil
	}
	rules, err := s.d.Policies.ListToolPolicies(ctx, orgID)
	if err != nil {
		return tool.Policy{}, err
	}
	var marked []string
	for _, r := range rules {
		if r.AlwaysConfirm {
			marked = append(marked, r.Tool)
		}
	}
	return tool.NewPolicy(orgID, marked...), nil
}

func toolInfo(t tool.Tool, pol tool.Policy) ToolInfo {
	return ToolInfo{Name: t.Name, Description: t.Description, Effect: t.Effect, AlwaysConfirm: pol.Confirms(t)}
}

// ListTools returns every tool of the registry, sorted by name, as the
// caller's organisation has it. Errors: unauthenticated; the policy store's.
func (s *Service) ListTools(ctx context.Context) ([]ToolInfo, error) {
	pol, err := s.Policy(ctx)
	if err != nil {
		return nil, err
	}
	tools := s.d.Registry.Tools()
	out := make([]ToolInfo, len(tools))
	for i, t := range tools {
		out[i] = toolInfo(t, pol)
	}
	return out, nil
}

// SetToolPolicy marks the named tool always_confirm for the caller's
// organisation, or unmarks it, and returns the tool as the organisation now
// has it. A read so marked waits for a human decision in chat and by voice,
// as a write does; a write always waits, and cannot be unmarked. Errors:
// forbidden unless the caller is an organisation admin; not_found for an
// unknown tool; invalid (write_always_confirms, field always_confirm) for
// unmarking a write; unavailable without a policy store; the store's.
func (s *Service) SetToolPolicy(ctx context.Context, name string, alwaysConfirm bool) (ToolInfo, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return ToolInfo{}, err
	}
	if !p.IsAdmin() {
		return ToolInfo{}, &ports.Error{Kind: ports.KindForbidden, Message: "only an organisation admin may change tool policies"}
	}
	def, ok := s.d.Registry.Lookup(name)
	if !ok {
		return ToolInfo{}, ports.NotFound("tool", name)
	}
	if def.Effect == tool.EffectWrite && !alwaysConfirm {
		return ToolInfo{}, &ports.Error{Kind: ports.KindInvalid, Code: CodeWriteAlwaysConfirms,
			Message: fmt.Sprintf("tool %s is a write: it always needs confirmation", name),
			Fields:  []ports.FieldError{{Field: "always_confirm", Reason: "a write tool always needs confirmation"}}}
	}
	if s.d.Policies == nil {
		return ToolInfo{}, &ports.Error{Kind: ports.KindUnavailable, Message: "tool policies are not kept by this server"}
	}
	if err := s.d.Policies.SetAlwaysConfirm(ctx, p.OrgID, name, alwaysConfirm, p.UserID, s.d.Clock.Now()); err != nil {
		return ToolInfo{}, err
	}
	return ToolInfo{Name: def.Name, Description: def.Description, Effect: def.Effect,
		AlwaysConfirm: alwaysConfirm || def.Effect == tool.EffectWrite}, nil
}
