package app_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/app"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// publishedView is what a content item says of its publication.
type publishedView struct {
	Status       string
	Version      int
	PublishedURL string `json:"published_url"`
	PublishedVia string `json:"published_via"`
	Override     *struct {
		Reason, By, At string
	}
}

func (st *stack) publishedView(token, id string) publishedView {
	st.t.Helper()
	code, body, _ := st.call(token, "GET", "/content/"+id, nil)
	var v publishedView
	if err := json.Unmarshal(body, &v); code != 200 || err != nil {
		st.t.Fatalf("GET content: %d %s", code, body)
	}
	return v
}

// problemView is a problem response's code, detail and fields.
type problemView struct {
	Code   string
	Detail string
	Errors []struct{ Field, Reason string }
}

func problemOf(t *testing.T, body []byte) problemView {
	t.Helper()
	var p problemView
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("problem %s: %v", body, err)
	}
	return p
}

// cheapItem generates an item whose text uses the banned word "cheap"
// and moves it to in_review.
func (st *stack) cheapItem(token string) contentView {
	st.t.Helper()
	code, body, _ := st.call(token, "POST", "/content/briefs", map[string]any{"project_id": "web", "title": "Cheap"})
	var brief struct{ ID string }
	if err := json.Unmarshal(body, &brief); code != 201 || err != nil {
		st.t.Fatalf("create brief: %d %s", code, body)
	}
	cheap := `{"title":"Spring plans","body":"Our cheap plans help every team ship faster."}`
	st.model.Enqueue(fakeopenai.Text(cheap), fakeopenai.Text(cheap))
	v := st.waitDrafted(token, st.generate(token, brief.ID))
	if !hasCheck(v.Checks, "banned_word", "cheap") {
		st.t.Fatalf("drafted without the finding: %+v", v)
	}
	code, v, body = st.update(token, v.ID, v.Version, map[string]any{"status": "in_review"})
	if code != 200 {
		st.t.Fatalf("to review: %d %s", code, body)
	}
	return v
}

func TestPublishOnlyForRealEndToEnd(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st, _ := startApp(t, map[string]string{app.EnvDatabaseURL: stackDBURL(t, sqlstoreDialect(string(d))), app.EnvDataDir: t.TempDir()})
			member := st.operator("publisher@example.com")

			// A status change alone no longer publishes: it needs the URL
			// the item was published at elsewhere.
			item := st.approvedItem(member)
			v := st.publishedView(member, item)
			code, _, body := st.update(member, item, v.Version, map[string]any{"status": "published"})
			p := problemOf(t, body)
			if code != 422 || len(p.Errors) != 1 || p.Errors[0].Field != "published_url" ||
				!strings.Contains(p.Detail, "POST /content/"+item+"/publish") || !strings.Contains(p.Detail, "published_url") {
				t.Fatalf("published without a URL: %d %s", code, body)
			}
			if code, _, body := st.update(member, item, v.Version, map[string]any{"status": "published", "published_url": "javascript:alert(1)"}); code != 422 {
				t.Fatalf("published with a bad URL: %d %s", code, body)
			}
			if code, _, body := st.update(member, item, v.Version, map[string]any{"status": "published", "published_url": "https://" + strings.Repeat("a", 2048) + ".example"}); code != 422 {
				t.Fatalf("published with a long URL: %d %s", code, body)
			}
			code, _, body = st.update(member, item, v.Version, map[string]any{"status": "published", "published_url": "https://blog.example.com/spring"})
			if code != 200 || !containsAll(body, `"status":"published"`, `"published_url":"https://blog.example.com/spring"`, `"published_via":"elsewhere"`, `"published_at":"`) {
				t.Fatalf("marked published elsewhere: %d %s", code, body)
			}

			// Brand findings need an override to approve and to publish.
			if code, body, _ := st.call(member, "PUT", "/content/brands/web", map[string]any{"banned_words": []string{"cheap"}}); code != 200 || !containsAll(body, `"banned_words_blocking":false`) {
				t.Fatalf("put brand: %d %s", code, body)
			}
			cheap := st.cheapItem(member)
			code, _, body = st.update(member, cheap.ID, cheap.Version, map[string]any{"status": "approved"})
			if p := problemOf(t, body); code != 409 || p.Code != "brand_findings" || !strings.Contains(p.Detail, `uses the banned word "cheap" once`) || len(p.Errors) != 1 {
				t.Fatalf("approve with findings: %d %s", code, body)
			}
			if code, _, body := st.update(member, cheap.ID, cheap.Version, map[string]any{"status": "approved", "override": map[string]any{"reason": "ok"}}); code != 422 || !containsAll(body, "override.reason") {
				t.Fatalf("approve with a short reason: %d %s", code, body)
			}
			code, _, body = st.update(member, cheap.ID, cheap.Version, map[string]any{"status": "approved", "override": map[string]any{"reason": "Legal approved the wording"}})
			if code != 200 || !containsAll(body, `"status":"approved"`, `"reason":"Legal approved the wording"`) {
				t.Fatalf("approve with an override: %d %s", code, body)
			}

			rc := newReceiver(t, 0)
			target := st.createTarget(member, map[string]any{"project_id": "web", "name": "hook", "kind": "webhook",
				"config": map[string]string{"url": rc.srv.URL + "/in"}})
			rc.mu.Lock()
			rc.secret, _ = target["secret"].(string)
			rc.mu.Unlock()
			targetID := target["id"].(string)
			code, _, body = st.publish(member, cheap.ID, map[string]any{"target_id": targetID})
			if p := problemOf(t, body); code != 409 || p.Code != "brand_findings" || !strings.Contains(p.Detail, "cheap") {
				t.Fatalf("publish with findings: %d %s", code, body)
			}
			before := st.publishedView(member, cheap.ID)
			code, out, body := st.publish(member, cheap.ID, map[string]any{"target_id": targetID, "override": map[string]any{"reason": "Publish anyway, campaign"}})
			if code != 202 {
				t.Fatalf("publish with an override: %d %s", code, body)
			}
			pubID, _ := out["publication_id"].(string)
			if pub := st.waitPublished(member, cheap.ID, pubID); pub.Status != "succeeded" {
				t.Fatalf("publication %+v", pub)
			}
			after := st.publishedView(member, cheap.ID)
			if after.Status != "published" || after.PublishedVia != "target" || after.PublishedURL != "https://hooks.example.com/posts/"+pubID ||
				after.Override == nil || after.Override.Reason != "Publish anyway, campaign" || after.Override.By == "" || after.Override.At == "" ||
				after.Version != before.Version+2 {
				t.Fatalf("item after publishing through the target: %+v (before %+v)", after, before)
			}

			// Blocking banned words: no override helps.
			if code, body, _ := st.call(member, "PUT", "/content/brands/web", map[string]any{"banned_words": []string{"cheap"}, "banned_words_blocking": true}); code != 200 || !containsAll(body, `"banned_words_blocking":true`) {
				t.Fatalf("put blocking brand: %d %s", code, body)
			}
			blocked := st.cheapItem(member)
			code, _, body = st.update(member, blocked.ID, blocked.Version, map[string]any{"status": "approved", "override": map[string]any{"reason": "Legal approved the wording"}})
			if p := problemOf(t, body); code != 409 || p.Code != "banned_words" || !strings.Contains(p.Detail, `"cheap"`) {
				t.Fatalf("approve with a blocking banned word: %d %s", code, body)
			}
			if v := st.publishedView(member, blocked.ID); v.Status != "in_review" || v.Override != nil {
				t.Fatalf("the blocked item changed: %+v", v)
			}

			// Marking published elsewhere and each decision to let the
			// findings through are in the audit log, with the URL and the
			// reasons.
			code, body, _ = st.call(st.admin("auditor@example.com"), "GET", "/api/v1/audit?limit=200", nil)
			var audit struct {
				Items []struct {
					Action, Resource string
					Arguments        map[string]any
				}
			}
			if err := json.Unmarshal(body, &audit); code != 200 || err != nil {
				t.Fatalf("audit: %d %s", code, body)
			}
			found := map[string]bool{}
			for _, e := range audit.Items {
				switch {
				case e.Action == "content.mark_published" && strings.HasSuffix(e.Resource, item) && e.Arguments["published_url"] == "https://blog.example.com/spring":
					found["marked published elsewhere"] = true
				case e.Action == "content.override_brand_findings" && strings.HasSuffix(e.Resource, cheap.ID) && e.Arguments["reason"] == "Legal approved the wording":
					found["approved anyway"] = true
				case e.Action == "content.publish" && strings.HasSuffix(e.Resource, cheap.ID) && e.Arguments["override_reason"] == "Publish anyway, campaign":
					found["published anyway"] = true
				}
			}
			for _, want := range []string{"marked published elsewhere", "approved anyway", "published anyway"} {
				if !found[want] {
					t.Errorf("the audit log lacks %q: %s", want, body)
				}
			}
		})
	}
}
