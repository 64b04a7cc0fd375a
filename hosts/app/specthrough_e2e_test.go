package app_test

import (
	"bytes"
	"testing"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// TestSpecGenerateThrough: one generate call with {"through":"prps"} takes
// a session through all five stages in the background, and a chain stops
// at the first stage that fails, with its reason; on both databases.
func TestSpecGenerateThrough(t *testing.T) {
	t.Parallel()
	for _, c := range stackCases() {
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			st := startStackOn(t, c, nil)
			member := st.token("dev@example.com")
			newSession := func() string {
				return st.noteSession(member, "Checkout revamp", "One-click checkout for returning customers.")
			}

			id := newSession()
			// The fake answers in order: stories one call per epic (2), PRPs
			// one per story (3).
			for _, stage := range []string{"scope", "prd", "epics", "stories", "stories", "prps", "prps", "prps"} {
				st.model.Enqueue(stageOutput(t, stage))
			}
			if code, body, _ := st.call(member, "POST", "/pse/sessions/"+id+"/generate", map[string]string{"through": "design"}); code != 422 || !bytes.Contains(body, []byte(`"through"`)) {
				t.Fatalf("through an unknown stage: %d %s", code, body)
			}
			code, body, _ := st.call(member, "POST", "/pse/sessions/"+id+"/generate", map[string]string{"through": "prps"})
			if code != 202 || !bytes.Contains(body, []byte(`"stage":"scope"`)) || !bytes.Contains(body, []byte(`"through":"prps"`)) {
				t.Fatalf("generate through prps: %d %s", code, body)
			}
			v := st.waitReady(member, id) // generating until the chain ends
			if v.Status != "ready" || v.CurrentStage == nil || *v.CurrentStage != "prps" || v.NextStage != nil {
				t.Fatalf("after the chain: %+v", v)
			}
			seen := map[string]bool{}
			for _, a := range v.Artifacts {
				if a.Stale {
					t.Errorf("%s is stale", a.Stage)
				}
				seen[a.Stage] = true
			}
			if len(seen) != 5 {
				t.Fatalf("artifacts of %v, want all five stages", seen)
			}
			if code, body, _ := st.call(member, "POST", "/pse/sessions/"+id+"/generate", map[string]string{"through": "prps"}); code != 409 || !bytes.Contains(body, []byte("pipeline_complete")) {
				t.Fatalf("generate after prps: %d %s", code, body)
			}

			// A chain stops at the first failure, with its reason.
			failing := newSession()
			st.model.Enqueue(stageOutput(t, "scope"), fakeopenai.Text("not json"), fakeopenai.Text("still not json"))
			if code, body, _ := st.call(member, "POST", "/pse/sessions/"+failing+"/generate", map[string]string{"through": "epics"}); code != 202 {
				t.Fatalf("generate through epics: %d %s", code, body)
			}
			f := st.waitReady(member, failing)
			if f.Status != "failed" || f.Error == nil || f.Error.Stage != "prd" || f.Error.Message == "" || f.CurrentStage == nil || *f.CurrentStage != "scope" {
				t.Fatalf("after a failing prd: %+v", f)
			}
		})
	}
}
