package eval

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// contentSuiteJSON is the content part: a brand and the briefs written
// under it.
//
//go:embed suites/content.json
var contentSuiteJSON []byte

// contentSuiteDoc is suites/content.json.
type contentSuiteDoc struct {
	ProjectID string          `json:"project_id"`
	Brand     json.RawMessage `json:"brand"`
	Briefs    []brief         `json:"briefs"`
}

type brief struct {
	Title    string          `json:"title"`
	Goal     string          `json:"goal"`
	Audience string          `json:"audience"`
	Channel  string          `json:"channel"`
	Format   string          `json:"format"`
	Keywords []string        `json:"keywords"`
	CTA      string          `json:"cta"`
	Length   json.RawMessage `json:"length"`
	Notes    string          `json:"notes"`
}

// bannedWords are the brand's banned words.
func (d contentSuiteDoc) bannedWords() []string {
	var b struct {
		BannedWords []string `json:"banned_words"`
	}
	_ = json.Unmarshal(d.Brand, &b)
	return b.BannedWords
}

var contentSuite = mustSuite[contentSuiteDoc](contentSuiteJSON)

func mustSuite[T any](raw []byte) T {
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		panic("eval: an embedded suite does not parse: " + err.Error())
	}
	return v
}

// contentItem is what the harness reads of a content item.
type contentItem struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Body   string `json:"body"`
	Status string `json:"status"`
	Checks []struct {
		Kind    string `json:"kind"`
		Term    string `json:"term"`
		Message string `json:"message"`
	} `json:"checks"`
	Error json.RawMessage `json:"error"`
}

// runContent sets the brand, then writes a draft of each brief not done yet
// and records its brand-check findings.
func (r *runner) runContent(ctx context.Context) error {
	var cs *contentState
	if err := r.st.update(func() {
		if r.st.Content == nil {
			r.st.Content = &contentState{}
		}
		cs = r.st.Content
	}); err != nil {
		return err
	}
	if cs.Done {
		return nil
	}
	err := r.contentDrafts(ctx, cs)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return r.st.update(func() {
		cs.Done = true
		if err != nil {
			cs.Error = err.Error()
		}
	})
}

func (r *runner) contentDrafts(ctx context.Context, cs *contentState) error {
	api := r.h.api
	project := contentSuite.ProjectID
	if err := api.do(ctx, http.MethodPut, "/api/v1/content/brands/"+url.PathEscape(project), contentSuite.Brand, nil); err != nil {
		return fmt.Errorf("setting the brand: %w", err)
	}
	banned := contentSuite.bannedWords()
	for i := len(cs.Drafts); i < len(contentSuite.Briefs); i++ {
		b := contentSuite.Briefs[i]
		r.progress.working("content", b.Title)
		d := r.draft(ctx, project, b, banned)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := r.st.update(func() { cs.Drafts = append(cs.Drafts, d) }); err != nil {
			return err
		}
		r.progress.advance(1, "content: "+b.Title+" "+d.Status)
	}
	return nil
}

// draft creates the brief, generates one draft and waits for it.
func (r *runner) draft(ctx context.Context, project string, b brief, banned []string) draftResult {
	api := r.h.api
	d := draftResult{Brief: b.Title, Checks: []string{}, BannedWords: []string{}}
	body := map[string]any{"project_id": project, "title": b.Title, "goal": b.Goal, "audience": b.Audience, "channel": b.Channel,
		"format": b.Format, "keywords": b.Keywords, "cta": b.CTA, "notes": b.Notes}
	if len(b.Length) > 0 {
		body["length"] = b.Length
	}
	var created struct {
		ID string `json:"id"`
	}
	if err := api.do(ctx, http.MethodPost, "/api/v1/content/briefs", body, &created); err != nil {
		d.Status, d.Error = "failed", err.Error()
		return d
	}
	d.BriefID = created.ID
	start := time.Now()
	var gen struct {
		Items []contentItem `json:"items"`
	}
	if err := api.do(ctx, http.MethodPost, "/api/v1/content/generate", map[string]any{"brief_id": created.ID, "variants": 1}, &gen); err != nil || len(gen.Items) == 0 {
		d.Status, d.Error = "failed", fmt.Sprint("generate: ", err)
		return d
	}
	item := gen.Items[0]
	d.ContentID = item.ID
	var wait poller
	for item.Status == "generating" {
		if err := wait.wait(ctx); err != nil {
			d.Status, d.Error = "failed", err.Error()
			return d
		}
		if err := api.do(ctx, http.MethodGet, "/api/v1/content/"+url.PathEscape(item.ID), nil, &item); err != nil {
			d.Status, d.Error = "failed", err.Error()
			return d
		}
	}
	ms := time.Since(start).Milliseconds()
	d.DurationMS = &ms
	d.Status = item.Status
	if item.Status == "failed" {
		d.Error = string(item.Error)
	}
	for _, c := range item.Checks {
		d.Checks = append(d.Checks, strings.TrimSpace(c.Kind+": "+cmpOr(c.Message, c.Term)))
	}
	d.BannedWords = append(d.BannedWords, BannedWordsIn(item.Title+"\n"+item.Body, banned)...)
	d.Words = len(strings.Fields(item.Body))
	return d
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
