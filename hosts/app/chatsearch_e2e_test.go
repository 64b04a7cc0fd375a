package app_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
)

// TestChatSearchAPI: GET /api/v1/agent/sessions?q= finds the caller's chats
// by a word of an answer or of the title, case-insensitively, pages, and
// refuses a q with a control character or too long with 422 naming q.
func TestChatSearchAPI(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			h := startSandboxOn(t, d)
			token := h.sb.Token()
			h.chat(token, "hello there")              // the demo model's help names "demo model"
			h.chat(token, "what runs in production?") // an answer about clusters
			search := func(q string, extra string) (ids []string, next *string) {
				t.Helper()
				var out struct {
					Items []struct {
						ID string `json:"id"`
					} `json:"items"`
					NextCursor *string `json:"next_cursor"`
				}
				h.get(token, "/api/v1/agent/sessions?q="+url.QueryEscape(q)+extra, &out)
				for _, it := range out.Items {
					ids = append(ids, it.ID)
				}
				return ids, out.NextCursor
			}
			all, _ := search("", "")
			if len(all) != 2 {
				t.Fatalf("sessions %v, want 2", all)
			}
			if got, _ := search("DEMO MODEL", ""); len(got) != 1 || got[0] != all[1] {
				t.Errorf("q=DEMO MODEL finds %v, want the first chat %s", got, all[1])
			}
			if got, _ := search("no such words anywhere", ""); len(got) != 0 {
				t.Errorf("q=no such words finds %v", got)
			}
			first, next := search("e", "&limit=1")
			if len(first) != 1 || next == nil {
				t.Fatalf("first page %v, next %v", first, next)
			}
			if rest, last := search("e", "&limit=1&cursor="+url.QueryEscape(*next)); len(rest) != 1 || rest[0] == first[0] || last != nil {
				t.Errorf("second page %v (first %v), next %v", rest, first, last)
			}
			for _, q := range []string{"tab\there", strings.Repeat("x", 201)} {
				code, body := h.send(token, http.MethodGet, "/api/v1/agent/sessions?q="+url.QueryEscape(q), nil)
				var p struct {
					Detail string `json:"detail"`
					Errors []struct {
						Field string `json:"field"`
					} `json:"errors"`
				}
				_ = json.Unmarshal(body, &p)
				if code != http.StatusUnprocessableEntity || len(p.Errors) != 1 || p.Errors[0].Field != "q" || p.Detail == "" {
					t.Errorf("q=%.20q: %d %s, want 422 naming q", q, code, body)
				}
			}
		})
	}
}
