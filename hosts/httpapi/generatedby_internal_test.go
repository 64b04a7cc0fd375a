package httpapi

import (
	"encoding/json"
	"testing"

	"github.com/devpilot/devpilot/ports"
)

func TestContentGeneratedBy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		it   ports.ContentItem
		want string
	}{
		{"being written", ports.ContentItem{}, `null`},
		{"a real model", ports.ContentItem{Model: "gpt-4o-mini"}, `{"kind":"model","model":"gpt-4o-mini","sandbox":false}`},
		{"the sandbox model", ports.ContentItem{Model: ports.SandboxModel}, `{"kind":"model","model":"devpilot-sandbox-model","sandbox":true}`},
		{"edited by hand", ports.ContentItem{Model: ports.SandboxModel, EditedBy: "u1", EditedByName: "demo@example.com"},
			`{"kind":"user","user_id":"u1","user_name":"demo@example.com"}`},
	} {
		raw, err := json.Marshal(contentItemOut(tc.it))
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			GeneratedBy json.RawMessage `json:"generated_by"`
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
		if string(out.GeneratedBy) != tc.want {
			t.Errorf("%s: generated_by %s, want %s", tc.name, out.GeneratedBy, tc.want)
		}
	}
}
