package assistant

import (
	"slices"

	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
)

// toolScopeError is nil when the caller's token scopes (see
// ports.ValidScope) allow running def: reading its area for a read,
// writing it for a write. Otherwise it is a forbidden Error (code
// insufficient_scope) naming the scope needed, so a token that may chat
// cannot reach through the assistant what its scopes keep it from in the
// API. A tool without an area belongs to the assistant's. Console sessions,
// unscoped tokens and calls without a principal pass.
func toolScopeError(p ports.Principal, def tool.Tool) error {
	area := ports.ScopeArea(def.Area)
	if area == ports.ScopeAccount || !slices.Contains(ports.ScopeAreas, area) { // an extra tool's area
		area = ports.ScopeAssistant
	}
	write := def.Effect != tool.EffectRead
	if p.Allows(area, write) {
		return nil
	}
	return ports.InsufficientScope(area, write, "running the tool "+def.Name)
}
