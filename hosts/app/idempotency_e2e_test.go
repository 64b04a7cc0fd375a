package app_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/app"
)

// A brief created twice with one Idempotency-Key is created once; the key
// with another body is refused; another user's same key is their own.
func TestIdempotencyEndToEnd(t *testing.T) {
	t.Parallel()
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

// No secret shown once is kept in plain text for a replay: after a new API
// token (a member's and an admin's), an invitation and a publishing webhook
// are created with an Idempotency-Key, no column of any table holds their
// secret, and a retry with the key still gets the same response.
func TestIdempotencyKeepsNoSecret(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			dbURL := sqlstoretest.URL(t, sqlstoreDialect(string(d)))
			st := startStackWith(t, string(d), map[string]string{app.EnvDatabaseURL: dbURL})
			member := st.token("writer@example.com")
			admin := st.admin("boss@example.com")

			for _, tc := range []struct {
				name, token, path, field, prefix string
				body                             map[string]any
			}{
				{"a member's API token", member, "/api/v1/tokens", "token", "dp_", map[string]any{"name": "ci", "expires_in_days": 30}},
				{"an admin's API token", admin, "/api/v1/tokens", "token", "dp_", map[string]any{"name": "deploy", "expires_in_days": 30}},
				{"an invitation", admin, "/api/v1/invitations", "secret", "dpi_", map[string]any{"role": "member"}},
				{"a publishing webhook", admin, "/content/targets", "secret", "whsec_", map[string]any{"project_id": "web", "name": "hook",
					"kind": "webhook", "config": map[string]string{"url": "https://hooks.example.com/in"}}},
			} {
				key := "key-" + tc.path
				code, first, _ := st.call(tc.token, "POST", tc.path, tc.body, "Idempotency-Key", key)
				var out map[string]any
				_ = json.Unmarshal(first, &out)
				secret, _ := out[tc.field].(string)
				if code != 201 || !strings.HasPrefix(secret, tc.prefix) {
					t.Fatalf("%s: %d %s", tc.name, code, first)
				}
				if where := findInTables(t, dbURL, secret, strings.TrimPrefix(secret, tc.prefix)); len(where) > 0 {
					t.Errorf("%s: the secret is kept in plain text in %v", tc.name, where)
				}
				code, again, _ := st.call(tc.token, "POST", tc.path, tc.body, "Idempotency-Key", key)
				if code != 201 || !bytes.Equal(again, first) {
					t.Errorf("%s: the retry got %d %s, want 201 %s", tc.name, code, again, first)
				}
			}
		})
	}
}

// findInTables returns "table.column" for every column of every table of
// the database at dbURL holding one of needles in some row, whatever the
// column's type (text, JSON, bytes).
func findInTables(t *testing.T, dbURL string, needles ...string) []string {
	t.Helper()
	db := sqlstoretest.OpenURL(t, dbURL)
	ctx := t.Context()
	q := "SELECT name FROM sqlite_master WHERE type = 'table'"
	if db.Dialect == sqlstore.DialectPostgres {
		q = "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
	}
	var tables []string
	if err := db.Writer.SelectContext(ctx, &tables, q); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"idempotency_keys", "api_tokens", "invitations", "content_targets", "audit_log", "river_job"} {
		if !slices.Contains(tables, want) {
			t.Fatalf("the tables %v lack %s", tables, want)
		}
	}
	var found []string
	for _, table := range tables {
		rows, err := db.Writer.QueryContext(ctx, `SELECT * FROM "`+table+`"`)
		if err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		cols, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatalf("%s: %v", table, err)
			}
			for i, v := range vals {
				var text []byte
				switch v := v.(type) {
				case string:
					text = []byte(v)
				case []byte:
					text = v
				default:
					continue
				}
				for _, n := range needles {
					if where := table + "." + cols[i]; bytes.Contains(text, []byte(n)) && !slices.Contains(found, where) {
						found = append(found, where)
					}
				}
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		_ = rows.Close()
	}
	return found
}
