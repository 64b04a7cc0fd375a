package voice_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/core/voice"
	"github.com/devpilot/devpilot/ports"
)

func TestToolCallRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t, voice.Config{})
	e.session(alice, aliceVoice)

	res, err := e.svc.ToolCall(as(alice), voice.ToolCallInput{SessionID: aliceVoice, Name: "get_project",
		Arguments: json.RawMessage(projectArgs), CallID: "call_rt_1"})
	if err != nil {
		t.Fatal(err)
	}
	if res.SessionID != aliceVoice || res.Confirmation != nil || res.Summary != "" {
		t.Errorf("result %+v", res)
	}
	const want = `{"ok":true,"result":{"name":"Apollo"}}`
	if out, ok := res.Output.(json.RawMessage); !ok || string(out) != want {
		t.Errorf("output %#v, want %s", res.Output, want)
	}
	if n := e.reads.Load(); n != 1 {
		t.Errorf("the tool ran %d times", n)
	}
	e.checkWrites(1, "AppendMessages (tx)", "TouchSession (tx)")
	e.checkTouched(alice, aliceVoice)
	msgs := e.messages(aliceVoice)
	if len(msgs) != 2 {
		t.Fatalf("stored %+v", msgs)
	}
	call, answer := msgs[0], msgs[1]
	wantCall := ports.ToolCall{ID: "call_rt_1", Name: "get_project", Arguments: projectArgs}
	if call.Role != ports.MessageAssistant || call.Content != "" || len(call.ToolCalls) != 1 || call.ToolCalls[0] != wantCall ||
		call.SessionID != aliceVoice || call.ID == "" || !call.CreatedAt.Equal(e.clock.Now()) {
		t.Errorf("call message %+v", call)
	}
	if answer.Role != ports.MessageTool || answer.Content != want || answer.ToolCallID != "call_rt_1" || answer.Name != "get_project" ||
		answer.SessionID != aliceVoice || answer.ID == "" || answer.ID == call.ID {
		t.Errorf("answer message %+v", answer)
	}
}

func TestToolCallReadFailureIsAnOutput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, voice.Config{})
	e.session(alice, aliceVoice)

	other := "0193a1b2-c3d4-7e5f-8a9b-000000000000"
	res, err := e.svc.ToolCall(as(alice), voice.ToolCallInput{SessionID: aliceVoice, Name: "get_project",
		Arguments: json.RawMessage(`{"project_id":"` + other + `"}`)})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"ok":false,"error":"project ` + other + ` not found"}`
	if out, _ := res.Output.(json.RawMessage); string(out) != want {
		t.Errorf("output %s, want %s", out, want)
	}
	e.checkWrites(1, "AppendMessages (tx)", "TouchSession (tx)")
	msgs := e.messages(aliceVoice)
	if len(msgs) != 2 || msgs[1].Content != want {
		t.Fatalf("stored %+v", msgs)
	}
	// Without a call id, one is made up, and the answer names it.
	if id := msgs[0].ToolCalls[0].ID; !strings.HasPrefix(id, "call_") || msgs[1].ToolCallID != id {
		t.Errorf("call id %q, answer for %q", id, msgs[1].ToolCallID)
	}
}

func TestToolCallWrite(t *testing.T) {
	t.Parallel()
	e := newEnv(t, voice.Config{})
	e.session(alice, aliceVoice)

	res, err := e.svc.ToolCall(as(alice), voice.ToolCallInput{SessionID: aliceVoice, Name: "deploy_project",
		Arguments: json.RawMessage(projectArgs), CallID: "call_rt_2"})
	if err != nil {
		t.Fatal(err)
	}
	if n := e.writes.Load(); n != 0 {
		t.Errorf("the write ran %d times before approval", n)
	}
	c := res.Confirmation
	if c == nil || res.Output != nil || res.SessionID != aliceVoice || res.Summary != "Deploy project Apollo." {
		t.Fatalf("result %+v", res)
	}
	e.checkWrites(1, "CreateConfirmation (tx)", "AppendMessages (tx)", "TouchSession (tx)")
	e.checkTouched(alice, aliceVoice)
	created, err := e.store.GetConfirmation(context.Background(), alice.Owner(), c.ID)
	if err != nil || created.Status != ports.ConfirmationPending || created.ToolCallID != "call_rt_2" || string(created.Arguments) != projectArgs {
		t.Errorf("stored confirmation %+v, %v", created, err)
	}
	if c.ID != created.ID || c.Status != ports.ConfirmationPending || c.SessionID != aliceVoice || c.UserID != alice.UserID ||
		c.ToolCallID != "call_rt_2" || c.ToolName != "deploy_project" || string(c.Arguments) != projectArgs ||
		c.Summary != res.Summary || !c.ExpiresAt.Equal(e.clock.Now().Add(15*time.Minute)) {
		t.Errorf("confirmation %+v", c)
	}
	msgs := e.messages(aliceVoice)
	if len(msgs) != 1 || msgs[0].Role != ports.MessageAssistant || len(msgs[0].ToolCalls) != 1 ||
		msgs[0].ToolCalls[0] != (ports.ToolCall{ID: "call_rt_2", Name: "deploy_project", Arguments: projectArgs}) {
		t.Errorf("stored %+v, want only the call", msgs)
	}
}

func TestToolCallArguments(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, tool, args, want string
	}{
		{"object", "get_project", projectArgs, projectArgs},
		{"object with spaces", "get_project", "{ \"project_id\" :\n \"" + projectID + "\" }", projectArgs},
		{"string-wrapped", "get_project", `"{\"project_id\":\"` + projectID + `\"}"`, projectArgs},
		{"string-wrapped with spaces", "get_project", `" {\"project_id\": \"` + projectID + `\"} "`, projectArgs},
		{"absent", "list_projects", ``, `{}`},
		{"null", "list_projects", `null`, `{}`},
		{"empty string", "list_projects", `""`, `{}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, voice.Config{})
			e.session(alice, aliceVoice)
			res, err := e.svc.ToolCall(as(alice), voice.ToolCallInput{SessionID: aliceVoice, Name: c.tool, Arguments: json.RawMessage(c.args)})
			if err != nil {
				t.Fatal(err)
			}
			if out, _ := res.Output.(json.RawMessage); !strings.HasPrefix(string(out), `{"ok":true`) {
				t.Errorf("output %s", out)
			}
			e.checkWrites(1, "AppendMessages (tx)", "TouchSession (tx)")
			if got := e.messages(aliceVoice)[0].ToolCalls[0].Arguments; got != c.want {
				t.Errorf("stored arguments %s, want %s", got, c.want)
			}
		})
	}
}

// A refused call runs nothing and stores nothing, though the caller has a
// voice session to record it in.
func TestToolCallRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		in        voice.ToolCallInput
		field     string
		reasonHas string
	}{
		{"no name", voice.ToolCallInput{Arguments: json.RawMessage(projectArgs)}, "name", "required"},
		{"unknown tool", voice.ToolCallInput{Name: "drop_database"}, "name", `unknown tool "drop_database"`},
		{"array", voice.ToolCallInput{Name: "get_project", Arguments: json.RawMessage(`[1]`)}, "arguments", "JSON object"},
		{"number", voice.ToolCallInput{Name: "get_project", Arguments: json.RawMessage(`42`)}, "arguments", "JSON object"},
		{"string holding an array", voice.ToolCallInput{Name: "get_project", Arguments: json.RawMessage(`"[1]"`)}, "arguments", "JSON object"},
		{"string holding no JSON", voice.ToolCallInput{Name: "get_project", Arguments: json.RawMessage(`"project one"`)}, "arguments", "JSON object"},
		{"broken JSON", voice.ToolCallInput{Name: "get_project", Arguments: json.RawMessage(`{"project_id":`)}, "arguments", "JSON object"},
		{"missing property", voice.ToolCallInput{Name: "get_project", Arguments: json.RawMessage(`{}`)}, "arguments", "do not match the tool's schema"},
		{"bad format", voice.ToolCallInput{Name: "get_project", Arguments: json.RawMessage(`{"project_id":"nope"}`)}, "arguments", "do not match the tool's schema"},
		{"write with bad arguments", voice.ToolCallInput{Name: "deploy_project", Arguments: json.RawMessage(`"{\"project_id\":1}"`)}, "arguments", "do not match the tool's schema"},
		{"extra property", voice.ToolCallInput{Name: "deploy_project", SessionID: aliceVoice,
			Arguments: json.RawMessage(`{"project_id":"` + projectID + `","force":true}`)}, "arguments", "do not match the tool's schema"},
		{"long call id", voice.ToolCallInput{Name: "get_project", Arguments: json.RawMessage(projectArgs), CallID: strings.Repeat("c", 201)}, "call_id", "at most 200"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, voice.Config{})
			e.session(alice, aliceVoice)
			_, err := e.svc.ToolCall(as(alice), c.in)
			if !errors.Is(err, ports.ErrInvalid) {
				t.Fatalf("err %v, want invalid", err)
			}
			fs := fields(err)
			if len(fs) != 1 || fs[0].Field != c.field || !strings.Contains(fs[0].Reason, c.reasonHas) {
				t.Errorf("fields %+v, want %s: …%s…", fs, c.field, c.reasonHas)
			}
			if e.reads.Load()+e.writes.Load() != 0 {
				t.Error("a refused call ran")
			}
			e.checkWrites(0)
			if n := len(e.sessions(alice)); n != 1 || len(e.messages(aliceVoice)) != 0 {
				t.Errorf("%d sessions, messages %+v", n, e.messages(aliceVoice))
			}
		})
	}
}

func TestToolCallAnotherUsersSession(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"get_project", "deploy_project"} {
		t.Run(tool, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, voice.Config{})
			e.session(bob, bobSession)
			_, err := e.svc.ToolCall(as(alice), voice.ToolCallInput{SessionID: bobSession, Name: tool, Arguments: json.RawMessage(projectArgs)})
			if !errors.Is(err, ports.ErrNotFound) {
				t.Fatalf("err %v, want not_found", err)
			}
			if e.reads.Load()+e.writes.Load() != 0 {
				t.Error("the tool ran")
			}
			if msgs := e.messages(bobSession); len(msgs) != 0 || len(e.sessions(alice)) != 0 {
				t.Errorf("stored %+v", msgs)
			}
		})
	}
}

func TestToolCallSessionNotAUUID(t *testing.T) {
	t.Parallel()
	e := newEnv(t, voice.Config{})
	_, err := e.svc.ToolCall(as(alice), voice.ToolCallInput{SessionID: "voice-1", Name: "get_project", Arguments: json.RawMessage(projectArgs)})
	if !errors.Is(err, ports.ErrNotFound) {
		t.Fatalf("err %v, want not_found", err)
	}
	e.checkWrites(0)
}

func TestToolCallFindsTheLatestVoiceSession(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"get_project", "deploy_project"} {
		t.Run(tool, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, voice.Config{})
			now := e.clock.Now()
			e.sessionTitled(alice, "0193a1b2-0000-7000-8000-0000000000c1", "Deploy plans", now.Add(-time.Minute))
			e.sessionTitled(alice, aliceVoice, voice.SessionTitle, now.Add(-time.Hour))
			e.sessionTitled(alice, "0193a1b2-0000-7000-8000-0000000000a1", voice.SessionTitle, now.Add(-2*time.Hour))
			e.sessionTitled(bob, bobSession, voice.SessionTitle, now)
			res, err := e.svc.ToolCall(as(alice), voice.ToolCallInput{Name: tool, Arguments: json.RawMessage(projectArgs)})
			if err != nil {
				t.Fatal(err)
			}
			if res.SessionID != aliceVoice {
				t.Errorf("session %s, want %s", res.SessionID, aliceVoice)
			}
			if e.spy.pages[0] != (ports.Page{Limit: 50}) || len(e.messages(aliceVoice)) == 0 {
				t.Errorf("listed %+v, stored %+v", e.spy.pages, e.messages(aliceVoice))
			}
			e.checkTouched(alice, aliceVoice)
			if tool == "deploy_project" {
				e.checkWrites(1, "CreateConfirmation (tx)", "AppendMessages (tx)", "TouchSession (tx)")
			} else {
				e.checkWrites(1, "AppendMessages (tx)", "TouchSession (tx)")
			}
		})
	}
}

func TestToolCallCreatesAVoiceSession(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"get_project", "deploy_project"} {
		t.Run(tool, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, voice.Config{})
			plans := "0193a1b2-0000-7000-8000-0000000000c1"
			e.sessionTitled(alice, plans, "Deploy plans", e.clock.Now().Add(-time.Minute))
			e.sessionTitled(bob, bobSession, voice.SessionTitle, e.clock.Now())
			res, err := e.svc.ToolCall(as(alice), voice.ToolCallInput{Name: tool, Arguments: json.RawMessage(projectArgs)})
			if err != nil {
				t.Fatal(err)
			}
			// A write is recorded in one transaction with its session.
			if tool == "deploy_project" {
				e.checkWrites(1, "CreateSession (tx)", "CreateConfirmation (tx)", "AppendMessages (tx)", "TouchSession (tx)")
			} else {
				e.checkWrites(1, "CreateSession", "AppendMessages (tx)", "TouchSession (tx)")
			}
			sessions := e.sessions(alice)
			if len(sessions) != 2 || sessions[0].ID == plans {
				t.Fatalf("sessions %+v", sessions)
			}
			created := sessions[0]
			if created.Title != "Voice session" || created.UserID != alice.UserID || created.OrgID != alice.OrgID ||
				res.SessionID != created.ID || len(e.messages(created.ID)) == 0 || len(e.messages(plans)) != 0 {
				t.Errorf("created %+v, result %+v", created, res)
			}
		})
	}
}

func TestToolCallNeedsPrincipal(t *testing.T) {
	t.Parallel()
	e := newEnv(t, voice.Config{})
	_, err := e.svc.ToolCall(context.Background(), voice.ToolCallInput{Name: "get_project", Arguments: json.RawMessage(projectArgs)})
	if !errors.Is(err, ports.ErrUnauthenticated) {
		t.Fatalf("err %v", err)
	}
	e.checkWrites(0)
}
