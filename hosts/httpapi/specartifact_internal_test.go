package httpapi

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/ports"
)

// TestArtifactCarriesItsGeneration: each artifact of a session shows its
// prompt version and generation statistics in snake_case, as openapi.json
// describes them; an artifact made before they were recorded shows zeros,
// no findings and no sampling settings.
func TestArtifactCarriesItsGeneration(t *testing.T) {
	t.Parallel()
	zero, seed := 0.0, int64(42)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	v := spec.View{
		Session: ports.SpecSession{ID: "0190a6f0-0000-7000-8000-000000000001", Name: "s", Status: ports.SpecReady,
			CurrentStage: ports.StagePRD, CreatedAt: at, UpdatedAt: at},
		Artifacts: []ports.SpecArtifact{
			{Stage: ports.StageScope, Version: 1, Format: "markdown", Content: "# Scope", Data: json.RawMessage(`{}`), Model: "m", CreatedAt: at},
			{Stage: ports.StagePRD, Version: 1, Format: "markdown", Content: "# PRD", Data: json.RawMessage(`{}`), Model: "m", CreatedAt: at,
				Checks: []string{"a", "b", "c"}, PromptVersion: "0123456789ab",
				Generation: ports.SpecGeneration{Calls: 3, Batches: 1, InvalidAnswers: 1, RepairTurns: 1, PromptTokens: 300,
					CompletionTokens: 150, DurationMS: 4500, FindingsByKind: map[string]int{"dependency": 2, "uncovered": 1},
					Temperature: &zero, Seed: &seed}},
		},
	}
	raw, err := json.Marshal(specSessionOut(v))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Artifacts []map[string]json.RawMessage `json:"artifacts"`
	}
	if err := json.Unmarshal(raw, &got); err != nil || len(got.Artifacts) != 2 {
		t.Fatalf("%s: %v", raw, err)
	}
	want := []struct{ version, generation string }{
		{`""`, `{"calls":0,"batches":0,"first_try_valid":0,"invalid_answers":0,"repair_turns":0,"prompt_tokens":0,` +
			`"completion_tokens":0,"duration_ms":0,"findings_by_kind":{},"temperature":null,"seed":null}`},
		{`"0123456789ab"`, `{"calls":3,"batches":1,"first_try_valid":0,"invalid_answers":1,"repair_turns":1,"prompt_tokens":300,` +
			`"completion_tokens":150,"duration_ms":4500,"findings_by_kind":{"dependency":2,"uncovered":1},"temperature":0,"seed":42}`},
	}
	doc := loadOpenAPI(t)
	schema := doc.Components.Schemas["Artifact"].Value
	for i, a := range got.Artifacts {
		if string(a["prompt_version"]) != want[i].version || string(a["generation"]) != want[i].generation {
			t.Errorf("artifact %d: prompt_version %s generation %s\nwant %s %s", i, a["prompt_version"], a["generation"], want[i].version, want[i].generation)
		}
		var value any
		b, _ := json.Marshal(a)
		if err := json.Unmarshal(b, &value); err != nil {
			t.Fatal(err)
		}
		if err := schema.VisitJSON(value, openapi3.EnableFormatValidation()); err != nil {
			t.Errorf("artifact %d does not match openapi.json's Artifact: %v", i, err)
		}
	}
}
