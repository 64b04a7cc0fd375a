package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/devpilot/devpilot/core/scm"
	"github.com/devpilot/devpilot/ports"
)

// SCM is the repository integration as the transport calls it.
type SCM interface {
	Authorize(ctx context.Context, redirectAfter string) (scm.Authorization, error)
	Callback(ctx context.Context, in scm.CallbackInput) (scm.CallbackResult, error)
	Connection(ctx context.Context) (scm.ConnectionState, error)
	ListRepos(ctx context.Context, page ports.Page) ([]ports.Repository, string, error)
	ListCommits(ctx context.Context, repoID string, page ports.Page) ([]ports.SCMCommit, string, error)
	ListPulls(ctx context.Context, repoID string, page ports.Page) ([]ports.SCMPull, string, error)
	SearchCommits(ctx context.Context, q string, page ports.Page) ([]ports.SCMCommit, string, error)
	Activity(ctx context.Context, repoID string, page ports.Page) ([]ports.SCMActivity, string, error)
	ReceiveWebhook(ctx context.Context, in scm.WebhookInput) (bool, error)
	// CallbackURL is where the provider sends browsers back; its scheme
	// says which binding cookie the callback reads.
	CallbackURL() string
}

// webhookLimit is the largest delivery accepted, as GitHub's own cap.
const webhookLimit = 25 << 20

// scmRoutes serves the repository integration at /scm/…, /scm-oauth/… and
// /webhooks/scm, and under /api/v1 (docs/api.md, "Repository integration"). The
// OAuth callback and the webhook authenticate by state and by HMAC.
func (s *Server) scmRoutes() {
	for _, p := range []string{"", "/api/v1"} {
		s.handle(http.MethodGet, p+"/scm-oauth/authorize", s.scmAuthorize)
		s.handle(http.MethodGet, p+"/scm-oauth/callback", s.scmCallback, public)
		s.handle(http.MethodGet, p+"/scm/connection", s.scmConnection)
		s.handle(http.MethodGet, p+"/scm/repos", s.listRepos)
		s.handle(http.MethodGet, p+"/scm/repos/:repo_id/commits", s.listCommits)
		s.handle(http.MethodGet, p+"/scm/repos/:repo_id/pulls", s.listPulls)
		s.handle(http.MethodGet, p+"/scm/repos/:repo_id/activity", s.repoActivity)
		s.handle(http.MethodGet, p+"/scm/commits/search", s.searchCommits)
		s.handle(http.MethodPost, p+"/webhooks/scm", s.webhook, public, maxBody(webhookLimit), bodyTimeoutAtMost(webhookBodyTimeout))
	}
}

// scmOAuthCookie holds the secret that binds an OAuth flow to the browser
// that started it (see scm.Authorization.Binding), on a plain-http
// deployment; secureSCMOAuthCookie holds it on an https one, where the
// __Host- prefix (Secure, Path=/, no Domain) keeps a sibling subdomain, or
// a page of this host served over http, from planting a binding of its own
// in a browser (which would connect the victim's GitHub account to the
// planter's flow). The callback reads only the name of the deployment's
// scheme.
const (
	scmOAuthCookie       = "devpilot_scm_oauth"
	secureSCMOAuthCookie = "__Host-devpilot_scm_oauth"
)

func (s *Server) scmAuthorize(w http.ResponseWriter, r *http.Request) error {
	a, err := s.d.SCM.Authorize(r.Context(), r.URL.Query().Get("redirect_after"))
	if err != nil {
		return err
	}
	http.SetCookie(w, bindingCookie(a.CallbackURL, a.Binding, a.TTL))
	if acceptsJSON(r) {
		return writeJSON(w, http.StatusOK, map[string]string{"authorize_url": a.URL})
	}
	http.Redirect(w, r, a.URL, http.StatusFound)
	return nil
}

// bindingCookie is the cookie holding an OAuth flow's browser binding for
// ttl (deleting it when ttl is not positive): HttpOnly, SameSite=Lax (sent
// on GitHub's top-level redirect back); where the callback is https, the
// Secure __Host- cookie on every path (as the prefix requires), else the
// plain one scoped to the callback's path.
func bindingCookie(callbackURL, value string, ttl time.Duration) *http.Cookie {
	c := &http.Cookie{Name: scmOAuthCookie, Value: value, Path: scm.CallbackPath, HttpOnly: true, SameSite: http.SameSiteLaxMode}
	if u, err := url.Parse(callbackURL); err == nil {
		c.Path = u.Path
		if u.Scheme == "https" {
			c.Name, c.Path, c.Secure = secureSCMOAuthCookie, "/", true
		}
	}
	if c.MaxAge = int(ttl / time.Second); c.MaxAge <= 0 {
		c.Value, c.MaxAge = "", -1
	}
	return c
}

// acceptsJSON reports whether the client asked for a JSON answer rather
// than a redirect.
func acceptsJSON(r *http.Request) bool {
	return mediaTypeAccepted(r, "application/json")
}

// scmCallback completes a connection in the browser that started it (its
// binding cookie), and clears that cookie whatever the outcome.
func (s *Server) scmCallback(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	in := scm.CallbackInput{
		Code: q.Get("code"), State: q.Get("state"), Error: q.Get("error"), ErrorDescription: q.Get("error_description"),
	}
	gone := bindingCookie(s.d.SCM.CallbackURL(), "", 0)
	if !gone.Secure {
		gone.Path = r.URL.Path // the plain cookie of whichever callback path this is
	}
	if c, err := r.Cookie(gone.Name); err == nil {
		in.Binding = c.Value
	}
	http.SetCookie(w, gone)
	res, err := s.d.SCM.Callback(r.Context(), in)
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

// connectionJSON is GET /scm/connection's answer. Setup (what an admin
// must set) is there only when not configured; Status and Error only when
// connected.
type connectionJSON struct {
	Configured   bool     `json:"configured"`
	Setup        string   `json:"setup,omitempty"`
	Connected    bool     `json:"connected"`
	Status       string   `json:"status,omitempty"`
	Error        string   `json:"error,omitempty"`
	Login        *string  `json:"login"`
	Scopes       []string `json:"scopes"`
	Repositories int      `json:"repositories"`
}

// scmConnection answers the state of the caller's GitHub connection: one of
// not configured, not connected and connected (login, scopes, how many
// repositories).
func (s *Server) scmConnection(w http.ResponseWriter, r *http.Request) error {
	st, err := s.d.SCM.Connection(r.Context())
	if err != nil {
		return err
	}
	out := connectionJSON{Configured: st.Configured, Setup: st.Setup, Connected: st.Connected, Status: st.Status,
		Error: st.Error, Scopes: st.Scopes, Repositories: st.Repositories}
	if st.Connected {
		out.Login = &st.Login
	}
	if out.Scopes == nil {
		out.Scopes = []string{}
	}
	return writeJSON(w, http.StatusOK, out)
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
		"url": a.URL, "sha": a.SHA, "at": a.At.UTC(), "source": a.Source}
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
// processes it. A repeat is 202 too, and is not processed again. The body is
// streamed to the core, which verifies the signature as it reads; while it
// does, the delivery holds one of its client address's reads
// (Config.WebhookReadsPerClient), so that slow unsigned bodies from one
// address cannot take every read the core allows and starve deliveries
// from elsewhere.
func (s *Server) webhook(w http.ResponseWriter, r *http.Request) error {
	client := clientAddr(r)
	dup, err := s.d.SCM.ReceiveWebhook(r.Context(), scm.WebhookInput{
		Event: r.Header.Get("X-GitHub-Event"), DeliveryID: r.Header.Get("X-GitHub-Delivery"),
		Signature: r.Header.Get("X-Hub-Signature-256"), ContentType: r.Header.Get("Content-Type"), Body: r.Body,
		Admit: func(ctx context.Context) (func(), error) { return s.webhookReads.acquire(ctx, client) },
	})
	if tooBig := (*http.MaxBytesError)(nil); errors.As(err, &tooBig) {
		return tooLarge(tooBig.Limit)
	}
	if err != nil {
		return err
	}
	status := "accepted"
	if dup {
		status = "duplicate"
	}
	return writeJSON(w, http.StatusAccepted, map[string]any{"status": status, "received_at": time.Now().UTC()})
}
