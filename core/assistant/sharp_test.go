package assistant_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/devpilot/devpilot/core/assistant"
	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
)

// catalogue registers a catalogue like devpilot's: 13 cloud tools, 9
// content, 4 spec and 5 scm (31), with a core read in each area but spec's
// writes, and content tools taking a project filled in by code.
func catalogue(e *env, ran *atomic.Value) {
	e.t.Helper()
	run := func(name string) func(context.Context, json.RawMessage) (any, error) {
		return func(_ context.Context, args json.RawMessage) (any, error) {
			ran.Store(name + " " + string(args))
			return "ok", nil
		}
	}
	var tools []tool.Tool
	add := func(area tool.Area, reads, writes int) {
		for i := range reads + writes {
			t := tool.Tool{Name: fmt.Sprintf("%s_%d", area, i), Description: "a tool of " + string(area), Area: area,
				Effect: tool.EffectRead, Core: i == 0, Run: run(fmt.Sprintf("%s_%d", area, i)),
				Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{"limit":{"type":"integer","minimum":1}}}`)}
			if i >= reads {
				t.Effect, t.Summary = tool.EffectWrite, func(json.RawMessage) string { return "change" }
			}
			if area == tool.AreaContent {
				t.Schema = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["project_id"],"properties":{
"project_id":{"type":"string","minLength":1,"maxLength":100},"limit":{"type":"integer","minimum":1}}}`)
				t.FillProject = "project_id"
			}
			tools = append(tools, t)
		}
	}
	add(tool.AreaCloud, 9, 4)
	add(tool.AreaContent, 4, 5)
	add(tool.AreaSpec, 2, 2)
	add(tool.AreaSCM, 5, 0)
	e.register(tools...)
}

func toolNames(req ports.ChatRequest) []string {
	out := make([]string, len(req.Tools))
	for i, t := range req.Tools {
		out[i] = t.Name
	}
	return out
}

// TestChatRoutesTools: each model call carries at most 20 strict tools: the
// page's area's, the core reads and the areas the message names; without
// either, the reads.
func TestChatRoutesTools(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		page    string
		message string
		area    tool.Area // every tool of it is offered
		others  bool      // tools of other areas beyond the core reads
	}{
		{"cloud page", "/cloud", "how are things?", tool.AreaCloud, false},
		{"specs page", "/specs/0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "what next?", tool.AreaSpec, false},
		{"pse page", "#/pse", "what next?", tool.AreaSpec, false},
		{"content page", "/content/briefs", "hello", tool.AreaContent, false},
		{"repos page", "/repos", "hello", tool.AreaSCM, false},
		{"scm page", "/scm", "hello", tool.AreaSCM, false},
		{"cloud page, message on repos", "/cloud", "and the latest commits of the repo?", tool.AreaCloud, true},
		{"no page, message on content", "", "write a blog post from the brief", tool.AreaContent, false},
		{"no page, no clue", "", "hello there", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, assistant.Config{})
			var ran atomic.Value
			catalogue(e, &ran)
			e.script(say("ok"))
			in := assistant.ChatInput{Message: tt.message}
			if tt.page != "" {
				in.Context = &tool.PageContext{CurrentPage: tt.page}
			}
			e.chat(as(alice), in)
			req := e.requests()[0]
			if n := len(req.Tools); n == 0 || n > tool.DefaultMaxTools {
				t.Fatalf("%d tools offered: %v", n, toolNames(req))
			}
			offered := map[string]bool{}
			for _, d := range req.Tools {
				offered[d.Name] = true
				if !d.Strict || tool.StrictProblem(d.Parameters) != "" {
					t.Errorf("tool %s is not strict: %s", d.Name, tool.StrictProblem(d.Parameters))
				}
			}
			others := false
			for _, tl := range e.reg.Tools() {
				switch {
				case tl.Area == tt.area && !offered[tl.Name]:
					t.Errorf("tool %s of the page's area is not offered", tl.Name)
				case tl.Core && !offered[tl.Name]:
					t.Errorf("core tool %s is not offered", tl.Name)
				case tt.area == "" && tl.Effect == tool.EffectWrite && offered[tl.Name]:
					t.Errorf("write %s offered without a page or a clue", tl.Name)
				case tl.Area != tt.area && !tl.Core && offered[tl.Name]:
					others = true
				}
			}
			if others != tt.others {
				t.Errorf("tools of other areas offered: %v, want %v (%v)", others, tt.others, toolNames(req))
			}
		})
	}
}

// TestRouteBoundsTools: never more than the limit, and the same page gives
// the same tools in the same order.
func TestRouteBoundsTools(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{})
	var ran atomic.Value
	catalogue(e, &ran)
	page := &tool.PageContext{CurrentPage: "/cloud"}
	msg := "costs, commits, briefs, specs and every repo and post"
	a, b := e.reg.Route(page, msg, 0), e.reg.Route(page, msg, 0)
	if len(a) != tool.DefaultMaxTools || fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("%d tools; stable: %v", len(a), fmt.Sprint(a) == fmt.Sprint(b))
	}
	if got := e.reg.Route(nil, "", 5); len(got) != 5 {
		t.Errorf("%d tools with a limit of 5", len(got))
	}
}

// TestSystemPromptStableContextInLastUserMessage: the date and the rules are
// in the system prompt, which stays the same across turns of a day; the
// page, the selected project and the time are in the last user message only.
func TestSystemPromptStableContextInLastUserMessage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{})
	e.script(say("one"), say("two"))
	sid, _ := e.chat(as(alice), assistant.ChatInput{Message: "first",
		Context: &tool.PageContext{CurrentPage: "/cloud", SelectedProjectID: projectID}})
	e.clock.Advance(3 * 60e9)
	e.chat(as(alice), assistant.ChatInput{SessionID: sid, Message: "second",
		Context: &tool.PageContext{CurrentPage: "/content"}})
	reqs := e.requests()
	sys1, sys2 := reqs[0].Messages[0].Content, reqs[1].Messages[0].Content
	if sys1 != sys2 {
		t.Errorf("the system prompt changed between turns:\n%s\n---\n%s", sys1, sys2)
	}
	now := e.clock.Now().UTC()
	for _, want := range []string{"Today is " + now.Format("Monday, 2006-01-02"), "UTC", "never instructions",
		"Ids", "current_page", "selected_project_id"} {
		if !strings.Contains(sys1, want) {
			t.Errorf("the system prompt lacks %q", want)
		}
	}
	if strings.Contains(sys1, "current_page: /cloud") || strings.Contains(sys1, projectID) {
		t.Errorf("the system prompt holds per-turn context:\n%s", sys1)
	}
	msgs := reqs[1].Messages
	if msgs[1].Content != "first" {
		t.Errorf("an earlier user message carries context: %q", msgs[1].Content)
	}
	last := msgs[len(msgs)-1].Content
	for _, want := range []string{"current_page: /content\n", "selected_project_id: none\n",
		"current_time: " + now.Format("2006-01-02T15:04:05Z"), "</request_context>\n\nsecond"} {
		if !strings.Contains(last, want) {
			t.Errorf("the last user message lacks %q:\n%s", want, last)
		}
	}
}

// TestSelectedProjectFilledByCode: a tool taking project_id gets the
// selected project when the model sends null or leaves it out, and is
// shown project_id as nullable; without a selected project the call fails
// as before.
func TestSelectedProjectFilledByCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, args, selected string
		want                 string // the arguments run with; "" when refused
	}{
		{"null", `{"project_id":null,"limit":null}`, projectID, `{"project_id":"` + projectID + `"}`},
		{"left out", `{}`, projectID, `{"project_id":"` + projectID + `"}`},
		{"given", `{"project_id":"other","limit":3}`, projectID, `{"project_id":"other","limit":3}`},
		{"none selected", `{"project_id":null,"limit":null}`, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, assistant.Config{})
			var ran atomic.Value
			catalogue(e, &ran)
			e.script(call("c1", "content_0", tt.args), say("done"))
			var page *tool.PageContext
			if tt.selected != "" {
				page = &tool.PageContext{CurrentPage: "/content", SelectedProjectID: tt.selected}
			}
			_, evs := e.chat(as(alice), assistant.ChatInput{Message: "list the briefs", Context: page})
			res := only[assistant.ToolResultData](t, evs, assistant.EventToolResult)
			if tt.want == "" {
				if len(res) != 1 || res[0].OK || !strings.Contains(res[0].Error, "project_id") || ran.Load() != nil {
					t.Errorf("results %+v, ran %v", res, ran.Load())
				}
				return
			}
			got, _ := ran.Load().(string)
			var gotArgs, wantArgs any
			_ = json.Unmarshal([]byte(strings.TrimPrefix(got, "content_0 ")), &gotArgs)
			_ = json.Unmarshal([]byte(tt.want), &wantArgs)
			if fmt.Sprint(gotArgs) != fmt.Sprint(wantArgs) {
				t.Errorf("ran with %s, want %s", got, tt.want)
			}
			for _, d := range e.requests()[0].Tools {
				if d.Name == "content_0" && !strings.Contains(string(d.Parameters), `"project_id":{"description":`) {
					t.Errorf("project_id is not described: %s", d.Parameters)
				}
				if d.Name == "content_0" && !strings.Contains(string(d.Parameters), `"type":["string","null"]`) {
					t.Errorf("project_id is not nullable on the wire: %s", d.Parameters)
				}
			}
		})
	}
}

// TestLongHistoryTrimmed: a history over the budget is trimmed, oldest turns
// first, instead of failing; the system prompt and the last message stay.
func TestLongHistoryTrimmed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{HistoryTokens: 3000})
	var ran atomic.Value
	catalogue(e, &ran)
	big := strings.Repeat("lorem ipsum ", 400) // ~1200 tokens
	var sid string
	for i := range 6 {
		e.script(say("answer " + fmt.Sprint(i)))
		in := assistant.ChatInput{SessionID: sid, Message: fmt.Sprintf("question %d %s", i, big)}
		sid, _ = e.chat(as(alice), in)
	}
	req := e.requests()[5]
	if n := assistant.EstimateTokens(req.Messages, req.Tools); n > 3000 {
		t.Errorf("the request is %d tokens, over the budget", n)
	}
	if req.Messages[0].Role != ports.MessageSystem || !strings.Contains(req.Messages[1].Content, "left out") {
		t.Errorf("no note on what was left out: %+v", req.Messages[1])
	}
	if last := req.Messages[len(req.Messages)-1]; !strings.Contains(last.Content, "question 5") {
		t.Errorf("the last message is %q", last.Content[:40])
	}
	if strings.Contains(fmt.Sprint(req.Messages), "question 0") {
		t.Error("the oldest turn was kept")
	}
}

// TestContextLengthErrorRetriedOnce: a provider's context-length error is
// answered by trimming the history to half and calling once more; a second
// one ends the turn with the error.
func TestContextLengthErrorRetriedOnce(t *testing.T) {
	t.Parallel()
	tooLong := &ports.Error{Kind: ports.KindInvalid, Code: ports.CodeContextLength, Message: "too long"}
	e := newEnv(t, assistant.Config{})
	big := strings.Repeat("lorem ipsum ", 2000)
	var sid string
	for i := range 3 {
		e.script(say("answer"))
		sid, _ = e.chat(as(alice), assistant.ChatInput{SessionID: sid, Message: fmt.Sprintf("question %d %s", i, big)})
	}
	e.script(fail(tooLong), say("fits now"))
	_, evs := e.chat(as(alice), assistant.ChatInput{SessionID: sid, Message: "and now?"})
	reqs := e.requests()
	first, retry := reqs[3], reqs[4]
	a, b := assistant.EstimateTokens(first.Messages, first.Tools), assistant.EstimateTokens(retry.Messages, retry.Tools)
	if b > a/2 || !strings.HasSuffix(retry.Messages[len(retry.Messages)-1].Content, "and now?") {
		t.Errorf("retried with %d tokens after %d", b, a)
	}
	if done := decode[assistant.DoneData](t, evs[len(evs)-1]); done.FinishReason != "stop" {
		t.Errorf("done %+v", done)
	}

	e.script(fail(tooLong), fail(tooLong))
	_, evs = e.chat(as(alice), assistant.ChatInput{SessionID: sid, Message: "again?"})
	if got := names(evs); got[len(got)-2] != assistant.EventError {
		t.Errorf("events %v", got)
	}
}
