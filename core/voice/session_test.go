package voice_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/core/assistant"
	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/core/voice"
	"github.com/devpilot/devpilot/ports"
)

func TestStartSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t, voice.Config{Voice: "verse", Model: "gpt-realtime-mini", Expiry: 5 * time.Minute})
	at := e.clock.Now()
	err := errors.Join(
		e.store.ReplacePreferences(context.Background(), alice.Owner(), []ports.Preference{
			{ID: "p1", Instruction: "Answer in French.", CreatedAt: at},
			{ID: "p2", Instruction: "Call me\n  Captain.", CreatedAt: at},
		}, at),
		e.store.ReplacePreferences(context.Background(), bob.Owner(), []ports.Preference{{ID: "p3", Instruction: "Not alice's.", CreatedAt: at}}, at))
	if err != nil {
		t.Fatal(err)
	}
	secret := ports.RealtimeSecret{Value: "ek_123", ExpiresAt: at.Add(5 * time.Minute), Model: "gpt-realtime-mini"}
	e.realtime.EXPECT().CreateClientSecret(gomock.Any(), gomock.Any()).DoAndReturn(
		func(_ context.Context, cfg ports.RealtimeSessionConfig) (ports.RealtimeSecret, error) {
			want := voice.DefaultInstructions + "\n\n" + assistant.GroundRules + "\n\nToday is " + at.Weekday().String() + ", " + at.Format("2006-01-02") +
				". Times are in UTC unless the user says otherwise.\n\nThe user's standing instructions (follow them unless they conflict with the above):" +
				"\n- Answer in French.\n- Call me Captain."
			if cfg.Instructions != want {
				t.Errorf("instructions:\n%s\nwant:\n%s", cfg.Instructions, want)
			}
			var names []string
			for _, d := range cfg.Tools {
				names = append(names, d.Name)
				if d.Description == "" || len(d.Parameters) == 0 || tool.StrictProblem(d.Parameters) != "" {
					t.Errorf("tool %+v is not fully described", d)
				}
			}
			if want := []string{"deploy_project", "get_project", "list_projects"}; !slices.Equal(names, want) {
				t.Errorf("tools %v, want %v", names, want)
			}
			if cfg.Voice != "verse" || cfg.Model != "gpt-realtime-mini" || cfg.ExpiresIn != 5*time.Minute {
				t.Errorf("config %+v", cfg)
			}
			return secret, nil
		})

	got, err := e.svc.StartSession(as(alice))
	if err != nil {
		t.Fatal(err)
	}
	created := e.sessions(alice)
	if got.Secret != secret || got.SessionID == "" || len(created) != 1 || got.SessionID != created[0].ID {
		t.Fatalf("session %+v, created %+v", got, created)
	}
	if c := created[0]; c.Title != "Voice session" || c.OrgID != alice.OrgID || c.UserID != alice.UserID ||
		!c.CreatedAt.Equal(at) || !c.UpdatedAt.Equal(at) {
		t.Errorf("created %+v", c)
	}
	e.checkWrites(0, "CreateSession")
}

func TestStartSessionWithoutPreferences(t *testing.T) {
	t.Parallel()
	e := newEnv(t, voice.Config{Instructions: "  Be terse.  "})
	e.realtime.EXPECT().CreateClientSecret(gomock.Any(), gomock.Any()).DoAndReturn(
		func(_ context.Context, cfg ports.RealtimeSessionConfig) (ports.RealtimeSecret, error) {
			if !strings.HasPrefix(cfg.Instructions, "Be terse.\n\n"+assistant.GroundRules) || cfg.Model != "" || cfg.Voice != "" || cfg.ExpiresIn != 0 {
				t.Errorf("config %+v", cfg)
			}
			return ports.RealtimeSecret{Value: "ek_1"}, nil
		})
	if _, err := e.svc.StartSession(as(alice)); err != nil {
		t.Fatal(err)
	}
	e.checkWrites(0, "CreateSession")
}

func TestStartSessionProviderErrorsPassThrough(t *testing.T) {
	t.Parallel()
	e := newEnv(t, voice.Config{})
	limited := &ports.Error{Kind: ports.KindRateLimited, Message: "slow down", RetryAfter: 3 * time.Second}
	e.realtime.EXPECT().CreateClientSecret(gomock.Any(), gomock.Any()).Return(ports.RealtimeSecret{}, limited)
	_, err := e.svc.StartSession(as(alice))
	if err != limited {
		t.Fatalf("err %v, want the provider's", err)
	}
	if e.checkWrites(0); len(e.sessions(alice)) != 0 {
		t.Error("a session was created")
	}
}

func TestStartSessionNeedsPrincipal(t *testing.T) {
	t.Parallel()
	e := newEnv(t, voice.Config{})
	if _, err := e.svc.StartSession(context.Background()); !errors.Is(err, ports.ErrUnauthenticated) {
		t.Fatalf("err %v", err)
	}
	e.checkWrites(0)
}

// TestStartSessionRoutesTools: a voice session started on a page is offered
// the tools the chat would offer there, at most 20; one started without a
// page every tool (docs/api.md, "Voice and audio").
func TestStartSessionRoutesTools(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		page *tool.PageContext
		max  int
		want func(tool.Tool) bool
	}{
		{"cloud page", &tool.PageContext{CurrentPage: "/cloud"}, tool.DefaultMaxTools, func(t tool.Tool) bool { return t.Area == tool.AreaCloud || t.Core || t.Area == "" }},
		{"no page: every tool", nil, 0, func(tool.Tool) bool { return true }},
		{"empty page: every tool", &tool.PageContext{}, 0, func(tool.Tool) bool { return true }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, voice.Config{})
			var tools []tool.Tool
			for _, a := range []tool.Area{tool.AreaCloud, tool.AreaContent, tool.AreaSpec, tool.AreaSCM} {
				for i := range 8 {
					effect := tool.EffectRead
					if i >= 5 {
						effect = tool.EffectWrite
					}
					tools = append(tools, tool.Tool{Name: fmt.Sprintf("%s_%d", a, i), Description: "x", Area: a, Effect: effect,
						Schema: json.RawMessage(`{"type":"object"}`), Summary: func(json.RawMessage) string { return "x" },
						Run: func(context.Context, json.RawMessage) (any, error) { return nil, nil }})
				}
			}
			if err := e.reg.Register(tools...); err != nil {
				t.Fatal(err)
			}
			e.realtime.EXPECT().CreateClientSecret(gomock.Any(), gomock.Any()).DoAndReturn(
				func(_ context.Context, cfg ports.RealtimeSessionConfig) (ports.RealtimeSecret, error) {
					n := len(cfg.Tools)
					if all := len(e.reg.Definitions()); tt.max == 0 && n != all {
						t.Errorf("%d tools offered, want all %d", n, all)
					} else if tt.max > 0 && (n == 0 || n > tt.max) {
						t.Errorf("%d tools offered, want 1 to %d", n, tt.max)
					}
					for _, d := range cfg.Tools {
						tl, _ := e.reg.Lookup(d.Name)
						if !tt.want(tl) {
							t.Errorf("tool %s (area %q, %s) offered", d.Name, tl.Area, tl.Effect)
						}
					}
					return ports.RealtimeSecret{Value: "ek_1"}, nil
				})
			if _, err := e.svc.StartSessionOn(as(alice), tt.page); err != nil {
				t.Fatal(err)
			}
			e.checkWrites(0, "CreateSession")
		})
	}
}
