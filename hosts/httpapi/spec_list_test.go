package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/devpilot/devpilot/hosts/httpapi"
	"github.com/devpilot/devpilot/ports"
)

// listSpec is a Spec whose ListSessions returns sessions; the rest is unused.
type listSpec struct {
	httpapi.Spec
	sessions []ports.SpecSession
}

func (l listSpec) ListSessions(context.Context, ports.Page) ([]ports.SpecSession, string, error) {
	return l.sessions, "", nil
}

// TestSpecListNextStage holds GET /pse/sessions to the detail view: the
// next stage is what a generate without a stage would produce.
func TestSpecListNextStage(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	sessions := []ports.SpecSession{
		{ID: "new", Name: "n", Status: ports.SpecDraft, CreatedAt: now, UpdatedAt: now},
		{ID: "prd", Name: "p", Status: ports.SpecReady, CurrentStage: ports.Stages[1], CreatedAt: now, UpdatedAt: now},
		{ID: "done", Name: "d", Status: ports.SpecReady, CurrentStage: ports.Stages[len(ports.Stages)-1], CreatedAt: now, UpdatedAt: now},
	}
	e := newEnv(t, func(_ *httpapi.Config, d *httpapi.Deps) { d.Spec = listSpec{sessions: sessions} })
	rr := e.do(request(http.MethodGet, "/pse/sessions", goodToken, nil))
	if rr.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rr.Code, rr.Body)
	}
	var out struct {
		Items []struct {
			ID        string  `json:"id"`
			NextStage *string `json:"next_stage"`
		} `json:"items"`
	}
	if err := json.Unmarshal(rr.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"new": "scope", "prd": "epics", "done": ""}
	if len(out.Items) != len(want) {
		t.Fatalf("items: %s", rr.Body)
	}
	for _, it := range out.Items {
		got := ""
		if it.NextStage != nil {
			got = *it.NextStage
		}
		if got != want[it.ID] {
			t.Errorf("session %s: next_stage = %q, want %q", it.ID, got, want[it.ID])
		}
	}
}
