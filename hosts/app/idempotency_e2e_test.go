package app_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
)

// A brief created twice with one Idempotency-Key is created once; the key
// with another body is refused; another user's same key is their own.
func TestIdempotencyEndToEnd(t *testing.T) {
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStack(t, string(d))
			writer := st.token("writer@example.com")
			colleague := st.token("colleague@example.com")
			brief := map[string]any{"project_id": "web", "title": "Spring sale", "goal": "Announce the spring plans."}

			create := func(token string, body map[string]any, key string) (int, []byte, string) {
				t.Helper()
				code, raw, _ := st.call(token, "POST", "/content/briefs", body, "Idempotency-Key", key)
				var out struct{ ID string }
				_ = json.Unmarshal(raw, &out)
				return code, raw, out.ID
			}
			code, first, id := create(writer, brief, "brief-spring-1")
			if code != 201 || id == "" {
				t.Fatalf("create brief: %d %s", code, first)
			}
			code, again, againID := create(writer, brief, "brief-spring-1")
			if code != 201 || againID != id || !bytes.Equal(again, first) {
				t.Fatalf("retry with the key: %d %s, want 201 %s", code, again, first)
			}
			code, body, _ := st.call(writer, "GET", "/content/briefs?project_id=web", nil)
			var list struct{ Items []struct{ ID string } }
			if err := json.Unmarshal(body, &list); code != 200 || err != nil || len(list.Items) != 1 || list.Items[0].ID != id {
				t.Fatalf("briefs after a retry: %d %s, want just %s", code, body, id)
			}

			changed := map[string]any{"project_id": "web", "title": "Summer sale"}
			code, body, _ = create(writer, changed, "brief-spring-1")
			var p struct{ Code string }
			if err := json.Unmarshal(body, &p); code != 422 || err != nil || p.Code != "idempotency_key_reused" {
				t.Fatalf("the key with another body: %d %s, want 422 idempotency_key_reused", code, body)
			}

			code, body, otherID := create(colleague, brief, "brief-spring-1")
			if code != 201 || otherID == "" || otherID == id {
				t.Fatalf("another user's request with the same key: %d %s", code, body)
			}
		})
	}
}
