package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/devpilot/devpilot/hosts/eval/evalcorpus"
)

// A waiting run reads a session or a draft again after pollFirst, then
// less and less often, up to every pollMax.
const (
	pollFirst = 50 * time.Millisecond
	pollMax   = time.Second
)

// poller waits between two reads of something being generated.
type poller struct{ next time.Duration }

// wait waits the next interval, or until ctx ends (its error).
func (p *poller) wait(ctx context.Context) error {
	if p.next == 0 {
		p.next = pollFirst
	}
	t := time.NewTimer(p.next)
	defer t.Stop()
	p.next = min(p.next*3/2, pollMax)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// specSession is what the harness reads of a PSE session.
type specSession struct {
	ID           string          `json:"id"`
	Status       string          `json:"status"`
	CurrentStage *string         `json:"current_stage"`
	NextStage    *string         `json:"next_stage"`
	Error        json.RawMessage `json:"error"`
	Artifacts    []artifact      `json:"artifacts"`
}

// artifact is one stage's artifact as the API returns it.
type artifact struct {
	Stage         string          `json:"stage"`
	Version       int             `json:"version"`
	Content       string          `json:"content"`
	Data          json.RawMessage `json:"data"`
	Checks        []string        `json:"checks"`
	Stale         bool            `json:"stale"`
	Model         string          `json:"model"`
	PromptVersion string          `json:"prompt_version"`
	Generation    *Generation     `json:"generation"`
}

// latest returns the newest artifact of a stage.
func (s specSession) latest(stage string) (artifact, bool) {
	var best artifact
	found := false
	for _, a := range s.Artifacts {
		if a.Stage == stage && (!found || a.Version > best.Version) {
			best, found = a, true
		}
	}
	return best, found
}

// runCase runs one case through the five stages, continuing from the last
// stage its state records. A case that fails (the API refuses, a stage
// fails) is recorded as failed and the run goes on; only the end of ctx and
// a state that cannot be saved stop the run.
func (r *runner) runCase(ctx context.Context, c evalcorpus.Case) error {
	var cs *caseState
	if err := r.st.update(func() {
		if r.st.Spec[c.ID] == nil {
			r.st.Spec[c.ID] = &caseState{}
		}
		cs = r.st.Spec[c.ID]
	}); err != nil {
		return err
	}
	if cs.Done {
		return nil
	}
	err := r.specStages(ctx, c, cs)
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

func (r *runner) specStages(ctx context.Context, c evalcorpus.Case, cs *caseState) error {
	api := r.h.api
	if cs.SessionID == "" {
		id, err := createSession(ctx, api, c)
		if err != nil {
			return fmt.Errorf("creating the session: %w", err)
		}
		if err := r.st.update(func() { cs.SessionID = id }); err != nil {
			return err
		}
	}
	if c.Repo != nil && cs.RepoID == "" {
		repoID, err := linkRepo(ctx, api, cs.SessionID, r.h.repos[c.ID])
		if err != nil {
			return fmt.Errorf("linking the repository: %w", err)
		}
		if err := r.st.update(func() { cs.RepoID = repoID }); err != nil {
			return err
		}
	}
	for i := len(cs.Stages); i < len(Stages); i++ {
		stage := Stages[i]
		r.progress.working(c.ID, stage)
		res, err := r.stage(ctx, c, cs.SessionID, stage)
		if err != nil {
			return fmt.Errorf("stage %s: %w", stage, err)
		}
		if r.opts.Judge != nil && res.Status == "ready" {
			res.Judge = judgeStage(ctx, r.opts.Judge, c, stage, res.Content)
		}
		if err := r.st.update(func() { cs.Stages = append(cs.Stages, res) }); err != nil {
			return err
		}
		r.progress.advance(1, c.ID+": "+stage+" "+res.Status)
		if r.opts.AfterStage != nil {
			r.opts.AfterStage(c.ID, stage)
		}
		if res.Status != "ready" {
			r.progress.advance(len(Stages)-i-1, "")
			return fmt.Errorf("stage %s failed: %s", stage, res.Error)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// stage generates one stage and waits for it, or, in a resumed run, takes
// the stage as generated (or still generating) before the interruption
// without asking again.
func (r *runner) stage(ctx context.Context, c evalcorpus.Case, sessionID, stage string) (stageResult, error) {
	api := r.h.api
	var sess specSession
	if err := api.do(ctx, http.MethodGet, "/api/v1/pse/sessions/"+url.PathEscape(sessionID), nil, &sess); err != nil {
		return stageResult{}, err
	}
	_, had := sess.latest(stage)
	generated := false
	var before *usage
	start := time.Now()
	if !had && sess.Status != "generating" {
		if r.opts.Concurrency == 1 {
			if u, err := api.usage(ctx); err == nil {
				before = &u
			}
		}
		var accepted struct {
			Stage string `json:"stage"`
		}
		if err := api.do(ctx, http.MethodPost, "/api/v1/pse/sessions/"+url.PathEscape(sessionID)+"/generate", nil, &accepted); err != nil {
			return stageResult{}, err
		}
		if accepted.Stage != stage {
			return stageResult{}, fmt.Errorf("devpilot generates %s, the harness expected %s", accepted.Stage, stage)
		}
		generated = true
	}
	var wait poller
	for {
		if err := api.do(ctx, http.MethodGet, "/api/v1/pse/sessions/"+url.PathEscape(sessionID), nil, &sess); err != nil {
			return stageResult{}, err
		}
		if sess.Status != "generating" {
			break
		}
		if err := wait.wait(ctx); err != nil {
			return stageResult{}, err
		}
	}
	res := stageResult{Stage: stage, Status: sess.Status, Generated: generated}
	a, ok := sess.latest(stage)
	if sess.Status == "failed" || !ok {
		res.Status = "failed"
		res.Error = string(sess.Error)
		if !ok && res.Error == "" {
			res.Error = "no artifact for the stage"
		}
		return res, nil
	}
	res.Status = "ready"
	res.Version, res.Model, res.PromptVersion = a.Version, a.Model, a.PromptVersion
	res.Data, res.Content, res.Checks, res.Generation = a.Data, a.Content, a.Checks, a.Generation
	if res.Checks == nil {
		res.Checks = []string{}
	}
	if generated {
		ms := time.Since(start).Milliseconds()
		res.DurationMS = &ms
	} else if a.Generation != nil {
		res.DurationMS = a.Generation.DurationMS
	}
	switch {
	case a.Generation != nil && a.Generation.PromptTokens != nil:
		res.PromptTokens, res.CompletionTokens, res.TokensSource = a.Generation.PromptTokens, a.Generation.CompletionTokens, "generation"
	case before != nil:
		if after, err := api.usage(ctx); err == nil {
			p := after.Total.PromptTokens - before.Total.PromptTokens
			cmp := after.Total.CompletionTokens - before.Total.CompletionTokens
			res.PromptTokens, res.CompletionTokens, res.TokensSource = &p, &cmp, "usage"
		}
	}
	return res, nil
}

// createSession creates the case's session with its inputs: the JSON ones
// in the create call (or the first upload, as multipart, when every input
// is one), each other upload as a multipart input of its own.
func createSession(ctx context.Context, api *client, c evalcorpus.Case) (string, error) {
	name := "eval: " + c.Title
	type jsonInput struct {
		Kind    string `json:"kind"`
		Title   string `json:"title"`
		Content string `json:"content"`
	}
	var inline []jsonInput
	var uploads []evalcorpus.Input
	for _, in := range c.Inputs {
		if in.Upload {
			uploads = append(uploads, in)
			continue
		}
		inline = append(inline, jsonInput{Kind: in.Kind, Title: in.Title, Content: in.Content})
	}
	var sess specSession
	if len(inline) > 0 {
		if err := api.do(ctx, http.MethodPost, "/api/v1/pse/sessions", map[string]any{"name": name, "inputs": inline}, &sess); err != nil {
			return "", err
		}
	} else {
		first := uploads[0]
		uploads = uploads[1:]
		if err := api.upload(ctx, "/api/v1/pse/sessions", map[string]string{"name": name, "kind": first.Kind}, first.Name, first.ContentType, first.Content, &sess); err != nil {
			return "", err
		}
	}
	for _, in := range uploads {
		if err := api.upload(ctx, "/api/v1/pse/sessions/"+url.PathEscape(sess.ID)+"/inputs", map[string]string{"kind": in.Kind, "title": in.Title},
			in.Name, in.ContentType, in.Content, nil); err != nil {
			return sess.ID, err
		}
	}
	return sess.ID, nil
}

// linkRepo finds the repository fullName among the demo user's connected
// repositories and links the session to it; it returns devpilot's id of
// the repository.
func linkRepo(ctx context.Context, api *client, sessionID, fullName string) (string, error) {
	if fullName == "" {
		return "", fmt.Errorf("the case's repository was not added to the fake GitHub")
	}
	cursor := ""
	for {
		var page struct {
			Items []struct {
				ID       string `json:"id"`
				FullName string `json:"full_name"`
			} `json:"items"`
			NextCursor string `json:"next_cursor"`
		}
		q := "?limit=200"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		if err := api.do(ctx, http.MethodGet, "/api/v1/scm/repos"+q, nil, &page); err != nil {
			return "", err
		}
		for _, it := range page.Items {
			if it.FullName == fullName {
				err := api.do(ctx, http.MethodPut, "/api/v1/pse/sessions/"+url.PathEscape(sessionID)+"/repository", map[string]string{"repo_id": it.ID}, nil)
				return it.ID, err
			}
		}
		if page.NextCursor == "" {
			return "", fmt.Errorf("%s is not among the connected repositories", fullName)
		}
		cursor = page.NextCursor
	}
}
