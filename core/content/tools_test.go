package content_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/core/assistant"
	"github.com/devpilot/devpilot/core/content"
	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/mocks"
)

const chatID = "00000000-0000-7000-8000-00000000c0de"

// toolEnv registers the content tools in a registry and an assistant
// service that carries out calls the way the chat loop does.
func toolEnv(t *testing.T) (*env, *tool.Registry, *assistant.Service) {
	t.Helper()
	e := newEnv(t, content.Config{})
	reg := tool.NewRegistry()
	if err := reg.Register(e.svc.Tools()...); err != nil {
		t.Fatalf("Register: %v", err)
	}
	ctrl := gomock.NewController(t)
	sessions := mocks.NewMockChatSessionStore(ctrl)
	sessions.EXPECT().GetSession(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, o ports.Owner, id string) (ports.ChatSession, error) {
			return ports.ChatSession{ID: id, OrgID: o.OrgID, UserID: o.UserID}, nil
		})
	confs := mocks.NewMockConfirmationStore(ctrl)
	confs.EXPECT().CreateConfirmation(gomock.Any(), gomock.Any()).AnyTimes().Return(nil)
	asst := assistant.New(assistant.Config{}, assistant.Deps{Sessions: sessions, Confirmations: confs, Clock: e.clock, IDs: e.ids, Registry: reg})
	return e, reg, asst
}

func TestToolsRegister(t *testing.T) {
	t.Parallel()
	_, reg, _ := toolEnv(t)
	want := map[string]tool.Effect{
		"get_brand": tool.EffectRead, "list_briefs": tool.EffectRead, "list_content": tool.EffectRead,
		"get_content": tool.EffectRead, "update_brand": tool.EffectWrite, "create_brief": tool.EffectWrite,
		"generate_content": tool.EffectWrite, "update_content": tool.EffectWrite, "delete_content": tool.EffectWrite,
		"list_publish_targets": tool.EffectRead, "publish_content": tool.EffectWrite,
	}
	defs := reg.Definitions()
	if len(defs) != len(want) {
		t.Fatalf("definitions %+v", defs)
	}
	for _, d := range defs {
		tl, ok := reg.Lookup(d.Name)
		if !ok || tl.Effect != want[d.Name] || d.Description == "" || !json.Valid(d.Parameters) {
			t.Errorf("tool %s: %+v", d.Name, tl)
		}
		var schema struct {
			AdditionalProperties *bool `json:"additionalProperties"`
		}
		if err := json.Unmarshal(d.Parameters, &schema); err != nil || schema.AdditionalProperties == nil || *schema.AdditionalProperties {
			t.Errorf("tool %s allows additional properties", d.Name)
		}
		if p := tool.StrictProblem(d.Parameters); p != "" || !d.Strict {
			t.Errorf("tool %s is not strict (%v): %s", d.Name, d.Strict, p)
		}
		if tl.Area != tool.AreaContent {
			t.Errorf("tool %s has area %q", d.Name, tl.Area)
		}
		if takesProject := strings.Contains(string(tl.Schema), `"project_id"`); takesProject != (tl.FillProject == "project_id") {
			t.Errorf("tool %s fills %q", d.Name, tl.FillProject)
		}
	}
}

func TestToolArgumentsAreValidated(t *testing.T) {
	t.Parallel()
	e, _, asst := toolEnv(t)
	it := e.seedItem(alice, ports.ContentDraft)
	tests := []struct {
		tl, args string
	}{
		{"get_brand", `{}`},
		{"get_brand", `{"project_id":"a b"}`},
		{"list_briefs", `{"limit":0}`},
		{"list_briefs", `{"page":2}`},
		{"list_content", `{"status":"done"}`},
		{"list_content", `{"brief_id":"nope"}`},
		{"list_content", `{"limit":201}`},
		{"get_content", `{}`},
		{"get_content", `{"content_id":"nope"}`},
		{"update_brand", `{"name":"Acme"}`},
		{"update_brand", `{"project_id":"p","tone":"bold"}`},
		{"update_brand", `{"project_id":"p","preferred_terms":{"a":1}}`},
		{"update_brand", `{"project_id":"p","version":-1}`},
		{"create_brief", `{"project_id":"p"}`},
		{"create_brief", `{"project_id":"p","title":"T","length":{"min":3}}`},
		{"create_brief", `{"project_id":"p","title":"T","length":{"max_words":30000}}`},
		{"generate_content", `{"brief_id":"` + it.BriefID + `","variants":4}`},
		{"generate_content", `{}`},
		{"update_content", fmt.Sprintf(`{"content_id":%q,"title":"T"}`, it.ID)},
		{"update_content", fmt.Sprintf(`{"content_id":%q,"version":3,"status":"generating"}`, it.ID)},
		{"update_content", fmt.Sprintf(`{"content_id":%q,"version":3,"format":"email"}`, it.ID)},
		{"delete_content", `{"content_id":"nope"}`},
	}
	for _, tt := range tests {
		ex, err := asst.ExecuteTool(as(alice), chatID, ports.ToolCall{Name: tt.tl, Arguments: tt.args})
		if err != nil {
			t.Fatal(err)
		}
		if ex.Outcome == nil || ex.Outcome.OK || !strings.Contains(ex.Outcome.Error, "schema") {
			t.Errorf("%s %s: %+v, want refused for its schema", tt.tl, tt.args, ex.Outcome)
		}
	}
	if len(e.jobs()) != 0 || e.updates() != 0 {
		t.Error("a refused call changed something")
	}
}

func TestWriteToolSummaries(t *testing.T) {
	t.Parallel()
	e, _, asst := toolEnv(t)
	it := e.seedItem(alice, ports.ContentDraft)
	// Ids are named as people know them: the brief and the item by title.
	brief := "“Why expense approvals take three weeks” (" + it.BriefID[:8] + "…)"
	item := "“" + it.Title + "” (" + it.ID[:8] + "…)"
	tests := []struct {
		tl, args, want string
	}{
		{"update_brand", `{"project_id":"web-site","name":"Acme","banned_words":["cheap"],"preferred_terms":[{"avoid":"utilize","use":"use"},{"avoid":"e-mail","use":"email"}]}`,
			`Replace the brand settings of project web-site ("Acme") with 1 banned word and 2 preferred terms; settings left out are cleared.`},
		{"update_brand", `{"project_id":"web-site"}`,
			`Replace the brand settings of project web-site with 0 banned words and 0 preferred terms; settings left out are cleared.`},
		{"update_brand", `{"project_id":"web-site","banned_words":["cheap","free"],"banned_words_blocking":true}`,
			`Replace the brand settings of project web-site with 2 banned words (blocking approval and publishing) and 0 preferred terms; settings left out are cleared.`},
		{"create_brief", `{"project_id":"web-site","title":"Faster approvals","length":{"min_words":300}}`,
			`Create the article brief "Faster approvals" for project web-site.`},
		{"create_brief", `{"project_id":"blog","title":"Launch","format":"linkedin post"}`,
			`Create the linkedin post brief "Launch" for project blog.`},
		{"generate_content", `{"brief_id":"` + it.BriefID + `"}`, "Write a draft from content brief " + brief + "."},
		{"generate_content", `{"brief_id":"` + it.BriefID + `","variants":3}`, "Write 3 alternative drafts from content brief " + brief + "."},
		{"update_content", fmt.Sprintf(`{"content_id":%q,"version":3,"title":"New","body":"One two three.","status":"in_review"}`, it.ID),
			fmt.Sprintf(`Update content item %s (version 3): retitle it "New", replace its body (3 words) and move it to in_review.`, item)},
		{"update_content", fmt.Sprintf(`{"content_id":%q,"version":3,"status":"approved"}`, it.ID),
			fmt.Sprintf(`Update content item %s (version 3): move it to approved.`, item)},
		{"update_content", fmt.Sprintf(`{"content_id":%q,"version":3,"status":"published","published_url":"https://blog.example.com/a"}`, it.ID),
			fmt.Sprintf(`Update content item %s (version 3): move it to published and record it as published elsewhere at https://blog.example.com/a.`, item)},
		{"update_content", fmt.Sprintf(`{"content_id":%q,"version":3}`, it.ID),
			fmt.Sprintf(`Update content item %s (version 3): check it again against the brand settings.`, item)},
		{"delete_content", fmt.Sprintf(`{"content_id":%q}`, it.ID), fmt.Sprintf("Delete content item %s permanently.", item)},
	}
	for _, tt := range tests {
		ex, err := asst.ExecuteTool(as(alice), chatID, ports.ToolCall{Name: tt.tl, Arguments: tt.args})
		if err != nil || ex.Confirmation == nil {
			t.Fatalf("%s = %+v, %v; want a confirmation", tt.tl, ex, err)
		}
		if ex.Confirmation.Summary != tt.want {
			t.Errorf("%s summary\n%q\nwant\n%q", tt.tl, ex.Confirmation.Summary, tt.want)
		}
	}
	if len(e.jobs()) != 0 || e.updates() != 0 || len(e.items()) != 1 {
		t.Error("a write ran before confirmation")
	}
}

func TestReadTools(t *testing.T) {
	t.Parallel()
	e, _, asst := toolEnv(t)
	it := e.seedItem(alice, ports.ContentDraft, func(it *ports.ContentItem) { it.Body = strings.Repeat("word ", 3000) }) // 15000 bytes
	e.seedItem(olga, ports.ContentDraft)
	run := func(p ports.Principal, tl, args string) *ports.ToolOutcome {
		t.Helper()
		ex, err := asst.ExecuteTool(as(p), chatID, ports.ToolCall{Name: tl, Arguments: args})
		if err != nil || ex.Outcome == nil {
			t.Fatalf("%s = %+v, %v", tl, ex, err)
		}
		return ex.Outcome
	}

	out := run(alice, "get_brand", `{"project_id":"web-site"}`)
	if !out.OK || !strings.Contains(string(out.Result), `"version":0`) || !strings.Contains(string(out.Result), `"banned_words":[]`) ||
		strings.Contains(string(out.Result), "updated_at") {
		t.Errorf("get_brand %s", out.Result)
	}

	out = run(alice, "list_content", `{"project_id":"web-site","status":"draft"}`)
	var list struct {
		Items []struct {
			ID, Title, Status string
			Words             int
			Body              *string
		} `json:"items"`
		NextCursor string `json:"next_cursor"`
	}
	if err := json.Unmarshal(out.Result, &list); err != nil || !out.OK {
		t.Fatal(out, err)
	}
	if len(list.Items) != 1 || list.Items[0].ID != it.ID || list.Items[0].Words != 3000 || list.Items[0].Body != nil {
		t.Errorf("list_content %s", out.Result)
	}

	out = run(alice, "get_content", fmt.Sprintf(`{"content_id":%q}`, it.ID))
	var got struct {
		ID        string `json:"id"`
		Body      string `json:"body"`
		Truncated bool   `json:"truncated"`
		Version   int    `json:"version"`
		Checks    []ports.ContentCheck
	}
	if err := json.Unmarshal(out.Result, &got); err != nil || !out.OK {
		t.Fatal(out, err)
	}
	if got.ID != it.ID || len(got.Body) != 8000 || !got.Truncated || got.Version != 3 || got.Checks == nil {
		t.Errorf("get_content: %d bytes, truncated %v, %+v", len(got.Body), got.Truncated, got)
	}

	out = run(alice, "list_briefs", `{"project_id":"web-site","limit":1}`)
	if !out.OK || !strings.Contains(string(out.Result), `"length":{"min_words":0,"max_words":0}`) || !strings.Contains(string(out.Result), `"next_cursor":""`) {
		t.Errorf("list_briefs %s", out.Result)
	}

	if out := run(olga, "get_content", fmt.Sprintf(`{"content_id":%q}`, it.ID)); out.OK || !strings.Contains(out.Error, "not found") {
		t.Errorf("olga reads alice's item: %+v", out)
	}
}

func TestWriteToolsRun(t *testing.T) {
	t.Parallel()
	e, reg, _ := toolEnv(t)
	tl := func(name string) tool.Tool {
		tl, ok := reg.Lookup(name)
		if !ok {
			t.Fatalf("no tool %s", name)
		}
		return tl
	}
	encode := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	res, err := tl("update_brand").Run(as(alice), json.RawMessage(`{"project_id":"web-site","name":"Acme","banned_words":["cheap"],"preferred_terms":{"utilize":"use"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if s := encode(res); !strings.Contains(s, `"version":1`) || !strings.Contains(s, `"banned_words":["cheap"]`) {
		t.Errorf("update_brand %s", s)
	}
	if _, err := tl("update_brand").Run(as(alice), json.RawMessage(`{"project_id":"web-site","version":0}`)); errCode(err) != content.CodeStaleVersion {
		t.Errorf("update_brand from a stale version: %v", err)
	}
	// Blocking banned words are a setting the assistant reads and writes
	// like the others, so that a replacement it makes can keep them.
	res, err = tl("update_brand").Run(as(alice), json.RawMessage(`{"project_id":"web-site","name":"Acme","banned_words":["cheap"],"banned_words_blocking":true,"version":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if s := encode(res); !strings.Contains(s, `"version":2`) || !strings.Contains(s, `"banned_words_blocking":true`) {
		t.Errorf("update_brand with blocking banned words %s", s)
	}
	if b, err := e.svc.Brand(as(alice), "web-site"); err != nil || !b.BannedWordsBlocking {
		t.Errorf("the brand after update_brand made banned words blocking: %+v %v", b, err)
	}
	res, err = tl("get_brand").Run(as(alice), json.RawMessage(`{"project_id":"web-site"}`))
	if s := encode(res); err != nil || !strings.Contains(s, `"banned_words_blocking":true`) {
		t.Errorf("get_brand %s %v", s, err)
	}

	res, err = tl("create_brief").Run(as(alice), json.RawMessage(`{"project_id":"web-site","title":"Faster approvals","keywords":["expenses"],"length":{"min_words":3,"max_words":500}}`))
	if err != nil {
		t.Fatal(err)
	}
	var brief struct {
		ID     string `json:"id"`
		Format string `json:"format"`
		Length struct {
			MinWords int `json:"min_words"`
			MaxWords int `json:"max_words"`
		} `json:"length"`
	}
	if err := json.Unmarshal([]byte(encode(res)), &brief); err != nil || brief.Format != "article" || brief.Length.MinWords != 3 || brief.Length.MaxWords != 500 {
		t.Errorf("create_brief %s", encode(res))
	}

	res, err = tl("generate_content").Run(as(alice), json.RawMessage(`{"brief_id":"`+brief.ID+`","variants":2}`))
	if err != nil {
		t.Fatal(err)
	}
	var gen struct {
		BriefID string `json:"brief_id"`
		Items   []struct {
			ID      string `json:"id"`
			Variant int    `json:"variant"`
			Status  string `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(encode(res)), &gen); err != nil || gen.BriefID != brief.ID || len(gen.Items) != 2 ||
		gen.Items[1].Variant != 2 || gen.Items[0].Status != "generating" || len(e.jobs()) != 2 {
		t.Fatalf("generate_content %s", encode(res))
	}

	id := gen.Items[0].ID
	e.script(answer(`{"title":"Approvals","body":"Approve it on your phone."}`))
	if err := e.svc.RunGeneration(t.Context(), e.jobs()[0].args.(content.GenerateContentArgs), false); err != nil {
		t.Fatal(err)
	}
	res, err = tl("update_content").Run(as(alice), json.RawMessage(fmt.Sprintf(`{"content_id":%q,"version":2,"body":"A cheap way to approve.","status":"in_review"}`, id)))
	if err != nil {
		t.Fatal(err)
	}
	if s := encode(res); !strings.Contains(s, `"status":"in_review"`) || !strings.Contains(s, `"version":3`) || !strings.Contains(s, `"kind":"banned_word"`) {
		t.Errorf("update_content %s", s)
	}
	if _, err := tl("update_content").Run(as(alice), json.RawMessage(fmt.Sprintf(`{"content_id":%q,"version":2,"status":"approved"}`, id))); errCode(err) != content.CodeStaleVersion {
		t.Errorf("update_content from a stale version: %v", err)
	}
	if _, err := tl("update_content").Run(as(alice), json.RawMessage(fmt.Sprintf(`{"content_id":%q,"version":3,"status":"published"}`, id))); errCode(err) != content.CodeInvalidTransition {
		t.Errorf("update_content in_review → published: %v", err)
	}

	if _, err := tl("delete_content").Run(as(olga), json.RawMessage(fmt.Sprintf(`{"content_id":%q}`, id))); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("olga deletes alice's item: %v", err)
	}
	res, err = tl("delete_content").Run(as(alice), json.RawMessage(fmt.Sprintf(`{"content_id":%q}`, id)))
	if err != nil || encode(res) != fmt.Sprintf(`{"deleted":%q}`, id) {
		t.Errorf("delete_content = %s, %v", encode(res), err)
	}
	if _, ok := e.item(id); ok {
		t.Error("the item is still stored")
	}
}
