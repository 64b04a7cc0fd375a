package spec_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/ports"
)

func TestCreateSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t, spec.Config{})
	v, err := e.svc.CreateSession(as(alice), "  Expense approvals ", []spec.NewInput{
		{Kind: ports.InputDocument, Title: "Brief", ContentType: "text/markdown; charset=UTF-8", Content: "# Brief\nReimburse faster."},
		{Kind: ports.InputTranscript, Title: "Call", Content: "A: hello"},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := v.Session
	if s.Name != "Expense approvals" || s.Status != ports.SpecDraft || s.OrgID != alice.OrgID || s.UserID != alice.UserID || s.CurrentStage != "" {
		t.Errorf("session %+v", s)
	}
	if v.NextStage != ports.StageScope || len(v.Artifacts) != 0 || v.Artifacts == nil {
		t.Errorf("next %q, artifacts %v", v.NextStage, v.Artifacts)
	}
	if len(v.Inputs) != 2 || v.Inputs[0].Content != "" || v.Inputs[0].Size != int64(len("# Brief\nReimburse faster.")) ||
		v.Inputs[0].ContentType != "text/markdown; charset=UTF-8" || v.Inputs[1].ContentType != "text/plain" {
		t.Errorf("inputs %+v", v.Inputs)
	}
	stored, _ := e.svc.GetSession(as(alice), s.ID)
	if len(stored.Inputs) != 2 || stored.Inputs[1].Kind != ports.InputTranscript {
		t.Errorf("stored inputs %+v", stored.Inputs)
	}
	if e.inputs(s.ID)[0].Content != "# Brief\nReimburse faster." {
		t.Errorf("content stored as %q", e.inputs(s.ID)[0].Content)
	}
	if v, err := e.svc.CreateSession(as(alice), "Empty", nil); err != nil || len(v.Inputs) != 0 {
		t.Errorf("a session without inputs: %v, %+v", err, v)
	}
	if _, err := e.svc.CreateSession(context.Background(), "x", nil); !errors.Is(err, ports.ErrUnauthenticated) {
		t.Errorf("without a principal: %v", err)
	}
}

func TestCreateSessionInvalid(t *testing.T) {
	t.Parallel()
	note := spec.NewInput{Kind: ports.InputNote, Title: "n", Content: "text"}
	tests := []struct {
		name   string
		sname  string
		change func(*spec.NewInput)
		field  string
	}{
		{"no name", " ", nil, "name"},
		{"name too long", strings.Repeat("n", 201), nil, "name"},
		{"no kind", "s", func(in *spec.NewInput) { in.Kind = "" }, "inputs[0].kind"},
		{"unknown kind", "s", func(in *spec.NewInput) { in.Kind = "email" }, "inputs[0].kind"},
		{"NUL in the name", "a\x00b", nil, "name"},
		{"line break in the name", "a\nb", nil, "name"},
		{"escape in the name", "a\x1b[31mb", nil, "name"},
		{"title too long", "s", func(in *spec.NewInput) { in.Title = strings.Repeat("t", 201) }, "inputs[0].title"},
		{"empty content", "s", func(in *spec.NewInput) { in.Content = "" }, "inputs[0].content"},
		{"blank content", "s", func(in *spec.NewInput) { in.Content = " \n\t" }, "inputs[0].content"},
		{"not UTF-8", "s", func(in *spec.NewInput) { in.Content = "a\xffb" }, "inputs[0].content"},
		{"bad content type", "s", func(in *spec.NewInput) { in.ContentType = "not a type" }, "inputs[0].content_type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, spec.Config{})
			in := note
			if tt.change != nil {
				tt.change(&in)
			}
			_, err := e.svc.CreateSession(as(alice), tt.sname, []spec.NewInput{in})
			pe, ok := ports.AsError(err)
			if !ok || pe.Kind != ports.KindInvalid || len(pe.Fields) != 1 || pe.Fields[0].Field != tt.field {
				t.Fatalf("err = %#v, want invalid on %s", err, tt.field)
			}
			if len(e.sessions(alice)) != 0 {
				t.Error("a session was stored")
			}
		})
	}
}

func TestInputSizeLimits(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 1258291) // 1.2 MiB
	t.Run("one input over the default limit", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, spec.Config{})
		_, err := e.svc.CreateSession(as(alice), "s", []spec.NewInput{{Kind: ports.InputDocument, Title: "x", Content: big}})
		if !errors.Is(err, ports.ErrPayloadTooLarge) || !strings.Contains(err.Error(), "input 'x' is 1.2 MiB; the limit is 1 MiB") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("exactly at the limit", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, spec.Config{})
		_, err := e.svc.CreateSession(as(alice), "s", []spec.NewInput{{Kind: ports.InputDocument, Title: "x", Content: strings.Repeat("x", 1<<20)}})
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Run("one byte over the limit does not read as the limit", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, spec.Config{MaxInputBytes: 1024})
		_, err := e.svc.CreateSession(as(alice), "s", []spec.NewInput{{Kind: ports.InputNote, Title: "n", Content: strings.Repeat("x", 1025)}})
		if !errors.Is(err, ports.ErrPayloadTooLarge) || !strings.Contains(err.Error(), "input 'n' is 1.1 KiB; the limit is 1 KiB") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("the session total at creation", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, spec.Config{MaxInputBytes: 100, MaxSessionBytes: 150})
		in := spec.NewInput{Kind: ports.InputNote, Title: "n", Content: strings.Repeat("x", 80)}
		_, err := e.svc.CreateSession(as(alice), "s", []spec.NewInput{in, in})
		if !errors.Is(err, ports.ErrPayloadTooLarge) || !strings.Contains(err.Error(), "160 bytes; the limit is 150 bytes") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("the session total when adding", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, spec.Config{MaxInputBytes: 100, MaxSessionBytes: 150})
		in := spec.NewInput{Kind: ports.InputNote, Title: "n", Content: strings.Repeat("x", 80)}
		v, err := e.svc.CreateSession(as(alice), "s", []spec.NewInput{in})
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.svc.AddInput(as(alice), v.Session.ID, in)
		if !errors.Is(err, ports.ErrPayloadTooLarge) || !strings.Contains(err.Error(), "160 bytes; the limit is 150 bytes") {
			t.Fatalf("err = %v", err)
		}
		if len(e.inputs(v.Session.ID)) != 1 {
			t.Errorf("%d inputs stored", len(e.inputs(v.Session.ID)))
		}
		in.Content = strings.Repeat("y", 70)
		if _, err := e.svc.AddInput(as(alice), v.Session.ID, in); err != nil {
			t.Errorf("up to the limit: %v", err)
		}
		if _, err := e.svc.AddInput(as(alice), v.Session.ID, spec.NewInput{Kind: ports.InputNote, Title: "big", Content: strings.Repeat("z", 101)}); !errors.Is(err, ports.ErrPayloadTooLarge) ||
			!strings.Contains(err.Error(), "input 'big' is 101 bytes; the limit is 100 bytes") {
			t.Errorf("one input over: %v", err)
		}
	})
}

func TestAddInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, spec.Config{})
	sid := e.newSession(alice)
	in, err := e.svc.AddInput(as(alice), sid, spec.NewInput{Kind: ports.InputTranscript, Title: " Standup ", Content: "Bo: the export is slow."})
	if err != nil {
		t.Fatal(err)
	}
	if in.ID == "" || in.SessionID != sid || in.Title != "Standup" || in.Content != "" || in.Size != 23 || in.ContentType != "text/plain" {
		t.Errorf("input %+v", in)
	}
	if _, err := e.svc.AddInput(as(bob), sid, spec.NewInput{Kind: ports.InputNote, Title: "n", Content: "x"}); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("another's session: %v", err)
	}
	if _, err := e.svc.AddInput(as(alice), "nope", spec.NewInput{Kind: ports.InputNote, Title: "n", Content: "x"}); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("a malformed id: %v", err)
	}
	_, err = e.svc.AddInput(as(alice), sid, spec.NewInput{Kind: "", Title: strings.Repeat("t", 201), Content: ""})
	if pe, ok := ports.AsError(err); !ok || pe.Kind != ports.KindInvalid || len(pe.Fields) != 3 || pe.Fields[0].Field != "kind" ||
		pe.Fields[1].Field != "title" || pe.Fields[2].Field != "content" {
		t.Errorf("invalid input: %#v", err)
	}
	v, _ := e.svc.GetSession(as(alice), sid)
	if len(v.Inputs) != 2 {
		t.Errorf("%d inputs", len(v.Inputs))
	}
}

func TestGetAndListSessions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, spec.Config{})
	sid := e.newSession(alice)
	e.newSession(alice)
	e.newSession(bob)
	e.seed(sid, ports.StageScope, ports.StagePRD)

	v, err := e.svc.GetSession(as(alice), sid)
	if err != nil {
		t.Fatal(err)
	}
	if v.NextStage != ports.StageEpics || len(v.Artifacts) != 2 || v.Artifacts[1].Stage != ports.StagePRD || v.Inputs[0].Content != "" {
		t.Errorf("view %+v", v)
	}
	for _, p := range []ports.Principal{bob, other} {
		if _, err := e.svc.GetSession(as(p), sid); !errors.Is(err, ports.ErrNotFound) {
			t.Errorf("%s reads alice's session: %v", p.UserID, err)
		}
	}
	if _, err := e.svc.GetSession(as(alice), "x"); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("a malformed id: %v", err)
	}

	list, next, err := e.svc.ListSessions(as(alice), ports.Page{})
	if err != nil || len(list) != 2 || next != "" {
		t.Errorf("list = %d sessions, %q, %v", len(list), next, err)
	}
	if list, next, _ := e.svc.ListSessions(as(alice), ports.Page{Limit: 1}); len(list) != 1 || next == "" {
		t.Errorf("page of 1 = %d sessions, %q", len(list), next)
	}
	for _, limit := range []int{-1, 201} {
		_, _, err := e.svc.ListSessions(as(alice), ports.Page{Limit: limit})
		if pe, ok := ports.AsError(err); !ok || pe.Kind != ports.KindInvalid || pe.Fields[0].Field != "limit" {
			t.Errorf("limit %d: %v", limit, err)
		}
	}
}

func TestNextStage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ current, want ports.Stage }{
		{"", ports.Stages[0]},
		{ports.Stages[0], ports.Stages[1]},
		{ports.Stages[len(ports.Stages)-1], ""},
	} {
		if got := spec.NextStage(tc.current); got != tc.want {
			t.Errorf("NextStage(%q) = %q, want %q", tc.current, got, tc.want)
		}
	}
}

func TestInputCounts(t *testing.T) {
	t.Parallel()
	note := spec.NewInput{Kind: ports.InputNote, Title: "n", Content: "x"}
	inputs := func(n int) []spec.NewInput {
		out := make([]spec.NewInput, n)
		for i := range out {
			out[i] = note
		}
		return out
	}
	t.Run("per request", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, spec.Config{})
		if _, err := e.svc.CreateSession(as(alice), "s", inputs(spec.MaxInputsPerRequest)); err != nil {
			t.Fatalf("%d inputs: %v", spec.MaxInputsPerRequest, err)
		}
		// Too many invalid ones: one error, not one per input.
		bad := inputs(20000)
		for i := range bad {
			bad[i].Kind = "poem"
		}
		_, err := e.svc.CreateSession(as(alice), "s", bad)
		pe, ok := ports.AsError(err)
		if !ok || pe.Kind != ports.KindInvalid || len(pe.Fields) != 1 || pe.Fields[0].Field != "inputs" ||
			!strings.Contains(pe.Message, "at most 50") {
			t.Fatalf("20000 inputs: %v", err)
		}
	})
	t.Run("per session", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, spec.Config{})
		v, err := e.svc.CreateSession(as(alice), "s", inputs(spec.MaxInputsPerRequest))
		if err != nil {
			t.Fatal(err)
		}
		for i := spec.MaxInputsPerRequest; i < spec.MaxInputsPerSession; i++ {
			if _, err := e.svc.AddInput(as(alice), v.Session.ID, note); err != nil {
				t.Fatalf("input %d: %v", i+1, err)
			}
		}
		_, err = e.svc.AddInput(as(alice), v.Session.ID, note)
		if !errors.Is(err, &ports.Error{Kind: ports.KindConflict, Code: spec.CodeTooManyInputs}) || !strings.Contains(err.Error(), "200 inputs") {
			t.Fatalf("input %d: %v", spec.MaxInputsPerSession+1, err)
		}
		if got, _ := e.svc.GetSession(as(alice), v.Session.ID); len(got.Inputs) != spec.MaxInputsPerSession {
			t.Errorf("the session holds %d inputs", len(got.Inputs))
		}
	})
}
