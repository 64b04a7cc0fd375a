package github

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	gh "github.com/google/go-github/v84/github"

	"github.com/devpilot/devpilot/ports"
)

// Page sizes: GitHub's default and its maximum.
const (
	defaultPerPage = 30
	maxPerPage     = 100
)

// call runs one API call of operation op with the user's token under the
// per-call timeout, maps its failure and measures it; what names the
// resource a 404 is about.
func (c *Client) call(ctx context.Context, op operation, token, what string, fn func(context.Context, *gh.Client) (*gh.Response, error)) (*gh.Response, error) {
	if token == "" {
		return nil, ports.Errorf(ports.KindInternal, "github: no token given")
	}
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	start := time.Now()
	resp, err := fn(cctx, c.api.WithAuthToken(token))
	if err != nil {
		err = c.failed(ctx, token, what, err)
	}
	c.metrics.observe(op, time.Since(start), err)
	return resp, err
}

// listOptions turns a page into GitHub's offset paging: Limit is per_page
// (1..100, 30 by default) and the cursor is the page number.
func listOptions(p ports.Page) (gh.ListOptions, error) {
	opts := gh.ListOptions{PerPage: perPage(p.Limit)}
	if p.Cursor == "" {
		return opts, nil
	}
	n, err := strconv.Atoi(p.Cursor)
	if err != nil || n < 1 || strconv.Itoa(n) != p.Cursor {
		return opts, badCursor()
	}
	opts.Page = n
	return opts, nil
}

func perPage(limit int) int {
	switch {
	case limit <= 0:
		return defaultPerPage
	case limit > maxPerPage:
		return maxPerPage
	}
	return limit
}

func badCursor() error {
	return ports.Invalid("the page cursor is malformed", ports.FieldError{Field: "cursor", Reason: "malformed"})
}

// nextCursor is the cursor of the page after resp's, "" on the last page.
func nextCursor(resp *gh.Response) string {
	if resp == nil || resp.NextPage == 0 {
		return ""
	}
	return strconv.Itoa(resp.NextPage)
}

// GitHub's rules for names, loosened to what is safe in a URL path: owners
// (users and organisations; GHES allows more than github.com) and
// repositories.
var (
	ownerShape = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$`)
	repoShape  = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)
)

// checkRepo returns an invalid Error unless owner and repo are names GitHub
// could have given.
func checkRepo(owner, repo string) error {
	var fields []ports.FieldError
	if !ownerShape.MatchString(owner) {
		fields = append(fields, ports.FieldError{Field: "owner", Reason: "invalid"})
	}
	if !repoShape.MatchString(repo) || repo == "." || repo == ".." {
		fields = append(fields, ports.FieldError{Field: "repo", Reason: "invalid"})
	}
	if fields != nil {
		return ports.Invalid("not a GitHub repository name", fields...)
	}
	return nil
}

// User returns who the token belongs to.
func (c *Client) User(ctx context.Context, token string) (ports.SCMUser, error) {
	var u *gh.User
	_, err := c.call(ctx, opUser, token, "GitHub user", func(ctx context.Context, api *gh.Client) (resp *gh.Response, err error) {
		u, resp, err = api.Users.Get(ctx, "")
		return resp, err
	})
	if err != nil {
		return ports.SCMUser{}, err
	}
	return ports.SCMUser{ID: u.GetID(), Login: u.GetLogin()}, nil
}

// ListRepos returns the repositories the token's user owns, collaborates on
// or sees as an organisation member, most recently updated first.
func (c *Client) ListRepos(ctx context.Context, token string, page ports.Page) ([]ports.SCMRepo, string, error) {
	lo, err := listOptions(page)
	if err != nil {
		return nil, "", err
	}
	opts := &gh.RepositoryListByAuthenticatedUserOptions{
		Affiliation: "owner,collaborator,organization_member",
		Sort:        "updated",
		Direction:   "desc",
		ListOptions: lo,
	}
	var repos []*gh.Repository
	resp, err := c.call(ctx, opListRepos, token, "GitHub repositories", func(ctx context.Context, api *gh.Client) (resp *gh.Response, err error) {
		repos, resp, err = api.Repositories.ListByAuthenticatedUser(ctx, opts)
		return resp, err
	})
	if err != nil {
		return nil, "", err
	}
	out := make([]ports.SCMRepo, 0, len(repos))
	for _, r := range repos {
		out = append(out, ports.SCMRepo{
			ProviderID:    r.GetID(),
			FullName:      r.GetFullName(),
			Owner:         r.GetOwner().GetLogin(),
			Name:          r.GetName(),
			Description:   r.GetDescription(),
			DefaultBranch: r.GetDefaultBranch(),
			HTMLURL:       r.GetHTMLURL(),
			Private:       r.GetPrivate(),
			PushedAt:      timePtr(r.PushedAt),
		})
	}
	return out, nextCursor(resp), nil
}

// ListCommits returns the commits of the repository's default branch,
// newest first; an empty repository has none (GitHub answers 409 for it).
func (c *Client) ListCommits(ctx context.Context, token, owner, repo string, page ports.Page) ([]ports.SCMCommit, string, error) {
	if err := checkRepo(owner, repo); err != nil {
		return nil, "", err
	}
	lo, err := listOptions(page)
	if err != nil {
		return nil, "", err
	}
	var commits []*gh.RepositoryCommit
	resp, err := c.call(ctx, opListCommits, token, "GitHub repository "+owner+"/"+repo, func(ctx context.Context, api *gh.Client) (resp *gh.Response, err error) {
		commits, resp, err = api.Repositories.ListCommits(ctx, owner, repo, &gh.CommitsListOptions{ListOptions: lo})
		return resp, err
	})
	if err != nil {
		if emptyRepository(resp) {
			return []ports.SCMCommit{}, "", nil
		}
		return nil, "", err
	}
	out := make([]ports.SCMCommit, 0, len(commits))
	for _, rc := range commits {
		out = append(out, commitOf(owner+"/"+repo, rc.GetSHA(), rc.GetHTMLURL(), rc.GetCommit(), rc.GetAuthor()))
	}
	return out, nextCursor(resp), nil
}

// emptyRepository reports whether GitHub answered 409 "Git Repository is
// empty." to a commits listing.
func emptyRepository(resp *gh.Response) bool {
	return resp != nil && resp.Response != nil && resp.StatusCode == http.StatusConflict
}

// ListPulls returns the repository's pull requests in every state, most
// recently updated first.
func (c *Client) ListPulls(ctx context.Context, token, owner, repo string, page ports.Page) ([]ports.SCMPull, string, error) {
	if err := checkRepo(owner, repo); err != nil {
		return nil, "", err
	}
	lo, err := listOptions(page)
	if err != nil {
		return nil, "", err
	}
	opts := &gh.PullRequestListOptions{State: "all", Sort: "updated", Direction: "desc", ListOptions: lo}
	var pulls []*gh.PullRequest
	resp, err := c.call(ctx, opListPulls, token, "GitHub repository "+owner+"/"+repo, func(ctx context.Context, api *gh.Client) (resp *gh.Response, err error) {
		pulls, resp, err = api.PullRequests.List(ctx, owner, repo, opts)
		return resp, err
	})
	if err != nil {
		return nil, "", err
	}
	out := make([]ports.SCMPull, 0, len(pulls))
	for _, p := range pulls {
		out = append(out, ports.SCMPull{
			Number:      p.GetNumber(),
			Title:       p.GetTitle(),
			State:       p.GetState(),
			AuthorLogin: p.GetUser().GetLogin(),
			HTMLURL:     p.GetHTMLURL(),
			HeadRef:     p.GetHead().GetRef(),
			BaseRef:     p.GetBase().GetRef(),
			Draft:       p.GetDraft(),
			Merged:      p.GetMerged() || p.MergedAt != nil,
			CreatedAt:   p.GetCreatedAt().UTC(),
			UpdatedAt:   p.GetUpdatedAt().UTC(),
			MergedAt:    timePtr(p.MergedAt),
			ClosedAt:    timePtr(p.ClosedAt),
		})
	}
	return out, nextCursor(resp), nil
}

// maxQuery is the longest search query GitHub accepts.
const maxQuery = 256

// SearchCommits runs GitHub's commit search (q syntax with qualifiers such
// as repo:, author: and org:) over the repositories the token can see, best
// match first; each result names its repository. Errors: invalid (field
// "q") for an empty or overlong query, or one GitHub rejects.
func (c *Client) SearchCommits(ctx context.Context, token, query string, page ports.Page) ([]ports.SCMCommit, string, error) {
	query = strings.TrimSpace(query)
	if query == "" {
		return nil, "", ports.Invalid("the search query is empty", ports.FieldError{Field: "q", Reason: "required"})
	}
	if len(query) > maxQuery {
		return nil, "", ports.Invalid("the search query is longer than 256 characters", ports.FieldError{Field: "q", Reason: "too_long"})
	}
	lo, err := listOptions(page)
	if err != nil {
		return nil, "", err
	}
	var res *gh.CommitsSearchResult
	resp, err := c.call(ctx, opSearchCommits, token, "GitHub search", func(ctx context.Context, api *gh.Client) (resp *gh.Response, err error) {
		res, resp, err = api.Search.Commits(ctx, query, &gh.SearchOptions{ListOptions: lo})
		return resp, err
	})
	if err != nil {
		if e := searchRejected(err); e != nil {
			return nil, "", e
		}
		return nil, "", err
	}
	out := make([]ports.SCMCommit, 0, len(res.Commits))
	for _, r := range res.Commits {
		out = append(out, commitOf(r.GetRepository().GetFullName(), r.GetSHA(), r.GetHTMLURL(), r.GetCommit(), r.GetAuthor()))
	}
	return out, nextCursor(resp), nil
}

// searchRejected is the invalid Error for a search GitHub refused with 422
// (a bad qualifier, a repository one cannot see, paging past 1000 results),
// or nil.
func searchRejected(err error) error {
	a, ok := answerOf(err)
	if !ok || a.status != http.StatusUnprocessableEntity {
		return nil
	}
	msg := "GitHub rejected the search query"
	if len(a.messages) > 0 {
		msg += ": " + a.messages[0]
	}
	e := ports.Invalid(msg, ports.FieldError{Field: "q", Reason: "invalid"})
	e.Err = err
	return e
}

func commitOf(repo, sha, htmlURL string, gc *gh.Commit, author *gh.User) ports.SCMCommit {
	at := gc.GetCommitter().GetDate().Time
	if at.IsZero() {
		at = gc.GetAuthor().GetDate().Time
	}
	return ports.SCMCommit{
		SHA:         sha,
		Repo:        repo,
		Message:     gc.GetMessage(),
		AuthorName:  gc.GetAuthor().GetName(),
		AuthorEmail: gc.GetAuthor().GetEmail(),
		AuthorLogin: author.GetLogin(),
		HTMLURL:     htmlURL,
		CommittedAt: at.UTC(),
	}
}

// activityCursor is the shape of GitHub's activity cursors (base64).
var activityCursor = regexp.MustCompile(`^[A-Za-z0-9+/=_-]{1,512}$`)

// ListActivity returns the repository's activity (pushes, force pushes,
// branch creations and deletions, pull request and merge queue merges),
// newest first, from GitHub's repository activity API. Kind is GitHub's
// activity_type, ID is "api:" and GitHub's id, Source is "api". RepoID is 0:
// the activity API does not name the repository's id, which the caller
// knows. The cursor is GitHub's opaque "after" cursor.
func (c *Client) ListActivity(ctx context.Context, token, owner, repo string, page ports.Page) ([]ports.SCMActivity, string, error) {
	if err := checkRepo(owner, repo); err != nil {
		return nil, "", err
	}
	if page.Cursor != "" && !activityCursor.MatchString(page.Cursor) {
		return nil, "", badCursor()
	}
	opts := &gh.ListRepositoryActivityOptions{Direction: "desc", PerPage: perPage(page.Limit), After: page.Cursor}
	var acts []*gh.RepositoryActivity
	resp, err := c.call(ctx, opListActivity, token, "GitHub repository "+owner+"/"+repo, func(ctx context.Context, api *gh.Client) (resp *gh.Response, err error) {
		acts, resp, err = api.Repositories.ListRepositoryActivities(ctx, owner, repo, opts)
		return resp, err
	})
	if err != nil {
		if page.Cursor != "" && isStatus(err, http.StatusUnprocessableEntity) {
			return nil, "", badCursor()
		}
		return nil, "", err
	}
	out := make([]ports.SCMActivity, 0, len(acts))
	for _, a := range acts {
		out = append(out, c.activityOf(owner+"/"+repo, a))
	}
	next := ""
	if resp != nil {
		next = resp.After
	}
	return out, next, nil
}

func (c *Client) activityOf(fullName string, a *gh.RepositoryActivity) ports.SCMActivity {
	actor := "ghost" // GitHub's name for a deleted account
	if a.Actor != nil && a.Actor.GetLogin() != "" {
		actor = a.Actor.GetLogin()
	}
	repoURL := c.webURL + "/" + fullName
	what := refName(a.Ref)
	// The short name, as entries recorded from webhooks have it.
	name := strings.TrimPrefix(strings.TrimPrefix(a.Ref, "refs/heads/"), "refs/tags/")
	var summary, link string
	switch a.ActivityType {
	case "push":
		summary = actor + " pushed to " + what
		link = repoURL + "/compare/" + short(a.Before) + "..." + short(a.After)
	case "force_push":
		summary = actor + " force-pushed " + what
		link = repoURL + "/compare/" + short(a.Before) + "..." + short(a.After)
	case "branch_creation":
		summary = actor + " created " + what
		link = repoURL + "/tree/" + name
	case "branch_deletion":
		summary = actor + " deleted " + what
		link = repoURL + "/branches"
	case "pr_merge":
		summary = actor + " merged a pull request into " + what
		link = repoURL + "/commit/" + a.After
	case "merge_queue_merge":
		summary = "the merge queue merged into " + what
		link = repoURL + "/commit/" + a.After
	default:
		summary = actor + ": " + strings.ReplaceAll(a.ActivityType, "_", " ") + " on " + what
		link = repoURL + "/activity"
	}
	var at time.Time
	if a.Timestamp != nil {
		at = a.Timestamp.UTC()
	}
	return ports.SCMActivity{
		ID:      "api:" + strconv.FormatInt(a.ID, 10),
		Kind:    a.ActivityType,
		Actor:   actor,
		Ref:     name,
		Summary: summary,
		URL:     link,
		At:      at,
		Source:  "api",
	}
}

// refName describes a ref for people: "branch main", "tag v1.2".
func refName(ref string) string {
	if b, ok := strings.CutPrefix(ref, "refs/heads/"); ok {
		return "branch " + b
	}
	if t, ok := strings.CutPrefix(ref, "refs/tags/"); ok {
		return "tag " + t
	}
	return ref
}

func short(sha string) string { return sha[:min(12, len(sha))] }

func timePtr(t *gh.Timestamp) *time.Time {
	if t == nil || t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}
