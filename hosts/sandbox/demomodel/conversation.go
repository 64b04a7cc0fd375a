package demomodel

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// The assistant's tools the model calls, by the names core/cloud, core/spec,
// core/content and core/scm register them: the model knows them by name only,
// as a real provider does.
const (
	toolListAccounts   = "list_cloud_accounts"
	toolCosts          = "get_costs"
	toolListClusters   = "list_clusters"
	toolListServices   = "list_services"
	toolServiceLogs    = "get_service_logs"
	toolListFunctions  = "list_functions"
	toolListApps       = "list_apps"
	toolDeployService  = "deploy_service"
	toolScaleService   = "scale_service"
	toolListSpecs      = "list_spec_sessions"
	toolGetSpec        = "get_spec_session"
	toolGenerateStage  = "generate_spec_stage"
	toolGetBrand       = "get_brand"
	toolListBriefs     = "list_briefs"
	toolListContent    = "list_content"
	toolCreateBrief    = "create_brief"
	toolGenerateDraft  = "generate_content"
	toolListRepos      = "list_repos"
	toolListCommits    = "list_commits"
	toolListPulls      = "list_pulls"
	toolSearchCommits  = "search_commits"
	toolRepoActivity   = "get_repo_activity"
	selectedProjectKey = "Selected project id:"
)

// result is the answer to one tool call, read from a tool message
// ({"ok":true,"result":…} or {"ok":false,"error":"…"}, as the assistant
// writes them).
type result struct {
	call  fakeopenai.Call
	args  map[string]any
	ok    bool
	value any
	err   string
	index int // of the tool message in the request
}

// conversation is what the model reads from a chat request with tools.
type conversation struct {
	req    *fakeopenai.Request
	system string
	// context is the request context the assistant puts before the last
	// user message ("" when it has none).
	context string
	// user is the last user message; msg is it in lower case with its
	// spaces collapsed.
	user, msg string
	userIndex int
	results   []result // every tool result, in order
	// turnCalls are the calls made since the last user message, and
	// lastRound the results of the latest of them when the request ends
	// with tool messages.
	turnCalls []plannedCall
	lastRound []result
	rounds    int
	kb        knowledge
}

// plannedCall is a tool call with its arguments.
type plannedCall struct {
	name string
	args map[string]any
}

func parseConversation(req *fakeopenai.Request) *conversation {
	c := &conversation{req: req, userIndex: -1}
	calls := map[string]fakeopenai.Call{}
	for i, msg := range req.Messages {
		switch msg.Role {
		case "system", "developer":
			if c.system == "" {
				c.system = msg.Content
			}
		case "user":
			c.context, c.user = splitContext(msg.Content)
			c.userIndex = i
		case "assistant":
			for _, call := range msg.ToolCalls {
				calls[call.ID] = call
			}
		case "tool":
			call := calls[msg.ToolCallID]
			if call.Name == "" {
				call.Name = msg.Name
			}
			c.results = append(c.results, readResult(call, msg.Content, i))
		}
	}
	c.msg = strings.ToLower(oneLine(c.user))
	for i := c.userIndex + 1; i < len(req.Messages); i++ {
		msg := req.Messages[i]
		if msg.Role == "assistant" && len(msg.ToolCalls) > 0 {
			c.rounds++
			for _, call := range msg.ToolCalls {
				c.turnCalls = append(c.turnCalls, plannedCall{name: call.Name, args: decodeArgs(call.Arguments)})
			}
		}
	}
	first := len(req.Messages)
	for first > 0 && req.Messages[first-1].Role == "tool" {
		first--
	}
	for _, r := range c.results {
		if r.index >= first {
			c.lastRound = append(c.lastRound, r)
		}
	}
	c.kb = learn(c.results)
	return c
}

func decodeArgs(text string) map[string]any {
	args := map[string]any{}
	if err := json.Unmarshal([]byte(text), &args); err != nil || args == nil {
		return map[string]any{}
	}
	return args
}

func readResult(call fakeopenai.Call, content string, index int) result {
	r := result{call: call, args: decodeArgs(call.Arguments), index: index}
	var m struct {
		OK     bool            `json:"ok"`
		Result json.RawMessage `json:"result"`
		Error  string          `json:"error"`
	}
	if err := json.Unmarshal([]byte(content), &m); err != nil {
		r.err = strings.TrimSpace(content)
		return r
	}
	r.ok, r.err = m.OK, m.Error
	if len(m.Result) > 0 {
		_ = json.Unmarshal(m.Result, &r.value)
	}
	return r
}

// turnResults are the results of the calls made since the last user message.
func (c *conversation) turnResults() []result {
	var out []result
	for _, r := range c.results {
		if r.index > c.userIndex {
			out = append(out, r)
		}
	}
	return out
}

// offers reports whether the request offers the tool.
func (c *conversation) offers(name string) bool {
	_, ok := c.req.Tool(name)
	return ok
}

// called reports whether a call of the tool was made in this turn with
// arguments that include want.
func (c *conversation) called(name string, want map[string]any) bool {
	return slices.ContainsFunc(c.turnCalls, func(p plannedCall) bool {
		if p.name != name {
			return false
		}
		for k, v := range want {
			if !reflect.DeepEqual(normalise(p.args[k]), normalise(v)) {
				return false
			}
		}
		return true
	})
}

// normalise makes numbers comparable whether decoded or built.
func normalise(v any) any {
	switch n := v.(type) {
	case int:
		return float64(n)
	case int64:
		return float64(n)
	}
	return v
}

// selectedProject is the project the user is looking at, as the request
// context before the last user message names it (or, from an older
// assistant, the system prompt).
func (c *conversation) selectedProject() string {
	for _, text := range []string{c.context, c.system} {
		for _, key := range []string{selectedProjectField, selectedProjectKey} {
			_, rest, ok := strings.Cut(text, key)
			if !ok {
				continue
			}
			if fields := strings.Fields(rest); len(fields) > 0 && fields[0] != "none" {
				return fields[0]
			}
		}
	}
	return ""
}

// The request context block the assistant puts before the last user message.
const (
	contextOpen          = "<request_context>"
	contextClose         = "</request_context>"
	selectedProjectField = "selected_project_id:"
)

// splitContext separates the request context from what the user wrote.
func splitContext(content string) (context, user string) {
	rest, ok := strings.CutPrefix(strings.TrimLeft(content, " \n"), contextOpen)
	if !ok {
		return "", content
	}
	context, user, ok = strings.Cut(rest, contextClose)
	if !ok {
		return "", content
	}
	return context, strings.TrimLeft(user, "\n")
}

// mentions reports whether the lower-cased message names s (in any case) as
// a whole word or phrase.
func (c *conversation) mentions(s string) bool { return containsWord(c.msg, strings.ToLower(s)) }

// containsWord reports whether text holds word, not as part of a longer word.
func containsWord(text, word string) bool {
	word = strings.TrimSpace(word)
	if word == "" {
		return false
	}
	for from := 0; ; {
		i := strings.Index(text[from:], word)
		if i < 0 {
			return false
		}
		start, end := from+i, from+i+len(word)
		if (start == 0 || !isWordByte(text[start-1])) && (end == len(text) || !isWordByte(text[end])) {
			return true
		}
		from = start + 1
	}
}

func isWordByte(b byte) bool {
	return b == '_' || b == '-' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= 0x80
}
