package httpapi

import (
	"bytes"
	"context"
	"net/http"
	"time"

	"github.com/devpilot/devpilot/core/scm"
	"github.com/devpilot/devpilot/ports"
)

// SCM is the repository integration as the transport calls it.
type SCM interface {
	Authorize(ctx context.Context, redirectAfter string) (string, error)
	Callback(ctx context.Context, in scm.CallbackInput) (scm.CallbackResult, error)
	ListRepos(ctx context.Context, page ports.Page) ([]ports.Repository, string, error)
	ListCommits(ctx context.Context, repoID string, page ports.Page) ([]ports.SCMCommit, string, error)
	ListPulls(ctx context.Context, repoID string, page ports.Page) ([]ports.SCMPull, string, error)
	SearchCommits(ctx context.Context, q string, page ports.Page) ([]ports.SCMCommit, string, error)
	Activity(ctx context.Context, repoID string, page ports.Page) ([]ports.SCMActivity, string, error)
	ReceiveWebhook(ctx context.Context, in scm.WebhookInput) (bool, error)
}

// webhookLimit is the largest delivery accepted, as GitHub's own cap.
const webhookLimit = 25 << 20

// scmRoutes serves §4.6 at the paths API.md names and under /api/v1. The
// OAuth callback and the webhook authenticate by state and by HMAC.
func (s *Server) scmRoutes() {
	for _, p := range []string{"", "/api/v1"} {
		s.handle(http.MethodGet, p+"/scm-oauth/authorize", s.scmAuthorize)
		s.handle(http.MethodGet, p+"/scm-oauth/callback", s.scmCallback, public)
		s.handle(http.MethodGet, p+"/scm/repos", s.listRepos)
		s.handle(http.MethodGet, p+"/scm/repos/:repo_id/commits", s.listCommits)
		s.handle(http.MethodGet, p+"/scm/repos/:repo_id/pulls", s.listPulls)
		s.handle(http.MethodGet, p+"/scm/repos/:repo_id/activity", s.repoActivity)
		s.handle(http.MethodGet, p+"/scm/commits/search", s.searchCommits)
		s.handle(http.MethodPost, p+"/webhooks/scm", s.webhook, public, maxBody(webhookLimit))
	}
}

func (s *Server) scmAuthorize(w http.ResponseWriter, r *http.Request) error {
	u, err := s.d.SCM.Authorize(r.Context(), r.URL.Query().Get("redirect_after"))
	if err != nil {
		return err
	}
	if acceptsJSON(r) {
		return writeJSON(w, http.StatusOK, map[string]string{"authorize_url": u})
	}
	http.Redirect(w, r, u, http.StatusFound)
	return nil
}

// acceptsJSON reports whether the client asked for a JSON answer rather
// than a redirect.
func acceptsJSON(r *http.Request) bool {
	return mediaTypeAccepted(r, "application/json")
}

func (s *Server) scmCallback(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	res, err := s.d.SCM.Callback(r.Context(), scm.CallbackInput{
		Code: q.Get("code"), State: q.Get("state"), Error: q.Get("error"), ErrorDescription: q.Get("error_description"),
	})
	if err != nil {
		return err
	}
	if res.RedirectAfter != "" && !acceptsJSON(r) {
		http.Redirect(w, r, res.RedirectAfter, http.StatusFound)
		return nil
	}
	return writeJSON(w, http.StatusOK, map[string]any{
		"connection":   map[string]string{"provider": res.Connection.Provider, "login": res.Connection.Login, "status": res.Connection.Status},
		"repositories": res.Repositories,
	})
}

func repoOut(r ports.Repository) map[string]any {
	return map[string]any{"id": r.ID, "provider_id": r.ProviderID, "full_name": r.FullName, "owner": r.Owner, "name": r.Name,
		"description": r.Description, "default_branch": r.DefaultBranch, "html_url": r.HTMLURL, "private": r.Private,
		"pushed_at": utc(r.PushedAt), "updated_at": r.UpdatedAt.UTC()}
}

func commitOut(c ports.SCMCommit) map[string]any {
	out := map[string]any{"sha": c.SHA, "message": c.Message, "author_name": c.AuthorName, "author_email": c.AuthorEmail,
		"author_login": c.AuthorLogin, "html_url": c.HTMLURL, "committed_at": c.CommittedAt.UTC()}
	if c.Repo != "" {
		out["repository"] = c.Repo
	}
	return out
}

func pullOut(p ports.SCMPull) map[string]any {
	return map[string]any{"number": p.Number, "title": p.Title, "state": p.State, "author_login": p.AuthorLogin, "html_url": p.HTMLURL,
		"head_ref": p.HeadRef, "base_ref": p.BaseRef, "draft": p.Draft, "merged": p.Merged, "created_at": p.CreatedAt.UTC(),
		"updated_at": p.UpdatedAt.UTC(), "merged_at": utc(p.MergedAt), "closed_at": utc(p.ClosedAt)}
}

func activityOut(a ports.SCMActivity) map[string]any {
	return map[string]any{"id": a.ID, "kind": a.Kind, "action": a.Action, "actor": a.Actor, "ref": a.Ref, "summary": a.Summary,
		"url": a.URL, "at": a.At.UTC(), "source": a.Source}
}

// scmList answers a paged list from the repository integration.
func scmList[T any](w http.ResponseWriter, r *http.Request, load func(ports.Page) ([]T, string, error), out func(T) map[string]any) error {
	page, err := pageParams(r)
	if err != nil {
		return err
	}
	items, next, err := load(page)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, list(mapSlice(items, out), next))
}

func (s *Server) listRepos(w http.ResponseWriter, r *http.Request) error {
	return scmList(w, r, func(p ports.Page) ([]ports.Repository, string, error) { return s.d.SCM.ListRepos(r.Context(), p) }, repoOut)
}

func (s *Server) listCommits(w http.ResponseWriter, r *http.Request) error {
	return scmList(w, r, func(p ports.Page) ([]ports.SCMCommit, string, error) {
		return s.d.SCM.ListCommits(r.Context(), pathParam(r, "repo_id"), p)
	}, commitOut)
}

func (s *Server) listPulls(w http.ResponseWriter, r *http.Request) error {
	return scmList(w, r, func(p ports.Page) ([]ports.SCMPull, string, error) {
		return s.d.SCM.ListPulls(r.Context(), pathParam(r, "repo_id"), p)
	}, pullOut)
}

func (s *Server) repoActivity(w http.ResponseWriter, r *http.Request) error {
	return scmList(w, r, func(p ports.Page) ([]ports.SCMActivity, string, error) {
		return s.d.SCM.Activity(r.Context(), pathParam(r, "repo_id"), p)
	}, activityOut)
}

func (s *Server) searchCommits(w http.ResponseWriter, r *http.Request) error {
	return scmList(w, r, func(p ports.Page) ([]ports.SCMCommit, string, error) {
		return s.d.SCM.SearchCommits(r.Context(), r.URL.Query().Get("q"), p)
	}, commitOut)
}

// webhook stores a signed delivery and answers 202 at once; the worker
// processes it. A repeat is 202 too, and is not processed again.
func (s *Server) webhook(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return bodyError(err, "reading the delivery")
	}
	dup, err := s.d.SCM.ReceiveWebhook(r.Context(), scm.WebhookInput{
		Event: r.Header.Get("X-GitHub-Event"), DeliveryID: r.Header.Get("X-GitHub-Delivery"),
		Signature: r.Header.Get("X-Hub-Signature-256"), Body: body,
	})
	if err != nil {
		return err
	}
	status := "accepted"
	if dup {
		status = "duplicate"
	}
	return writeJSON(w, http.StatusAccepted, map[string]any{"status": status, "received_at": time.Now().UTC()})
}

// bodySizeHint bounds the buffer readBody sizes from Content-Length before
// reading, so that a false length costs little.
const bodySizeHint = 1 << 20

// readBody reads the request's body into one buffer of the size
// Content-Length announces (io.ReadAll would grow one from 512 bytes,
// leaving twice the body as garbage), growing it past bodySizeHint or
// without a length. It returns the body reader's error.
func readBody(r *http.Request) ([]byte, error) {
	n := r.ContentLength
	if n < 0 || n > bodySizeHint {
		n = 0
	}
	buf := bytes.NewBuffer(make([]byte, 0, n+bytes.MinRead))
	_, err := buf.ReadFrom(r.Body)
	return buf.Bytes(), err
}
