package assistant

import "github.com/devpilot/devpilot/ports"

// RecentTurns is how far back the tools a conversation used keep their
// areas in play: the messages from the RecentTurns-th last user message on
// (the message being answered and the RecentTurns-1 before it, with the
// continuations of confirmations between them).
const RecentTurns = 4

// recentTools are the names of the tools called, and of the confirmations
// raised, in the session's last RecentTurns user turns, most recent first:
// the conversation's part of routing (tool.Registry.RouteFollowing).
func recentTools(history []ports.ChatMessage, confs []ports.Confirmation) []string {
	from, users := 0, 0
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Role == ports.MessageUser {
			if users++; users == RecentTurns {
				from = i
				break
			}
		}
	}
	window := history[from:]
	turns := make(map[string]bool, RecentTurns)
	var names []string
	for i := len(window) - 1; i >= 0; i-- {
		m := window[i]
		if m.TurnID != "" {
			turns[m.TurnID] = true
		}
		for j := len(m.ToolCalls) - 1; j >= 0; j-- {
			names = append(names, m.ToolCalls[j].Name)
		}
	}
	for i := len(confs) - 1; i >= 0; i-- {
		if turns[confs[i].TurnID] {
			names = append(names, confs[i].ToolName)
		}
	}
	return names
}
