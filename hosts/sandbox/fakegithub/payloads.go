package fakegithub

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// HookUser is a user (or organisation) as webhook payloads name one:
// sender, pusher, author.
type HookUser struct {
	Login        string
	ID           int64
	Organization bool
}

// HookRepo is the repository a webhook payload is about.
type HookRepo struct {
	ID            int64
	Owner         HookUser
	Name          string
	Private       bool
	DefaultBranch string // "main" when empty
	// WebURL is the GitHub the repository lives on, https://github.com when
	// empty; API URLs in the payload are derived from it (api.github.com, or
	// WebURL/api/v3 for any other).
	WebURL string
}

// FullName is "owner/name".
func (r HookRepo) FullName() string { return r.Owner.Login + "/" + r.Name }

// HookCommit is a commit as a push payload lists it.
type HookCommit struct {
	// ID is the commit SHA, derived from the message when empty.
	ID          string
	Message     string
	AuthorName  string
	AuthorEmail string
	// AuthorLogin is the author's GitHub login ("username"), if GitHub
	// knows the email.
	AuthorLogin string
	// Timestamp is DefaultEpoch when zero.
	Timestamp time.Time
	Added     []string
	Removed   []string
	Modified  []string
}

// Event is a webhook payload builder: its EventName is the X-GitHub-Event
// value and its JSON the payload GitHub sends.
type Event interface {
	EventName() string
	json.Marshaler
}

func (r HookRepo) web() string {
	if r.WebURL == "" {
		return "https://github.com"
	}
	return strings.TrimSuffix(r.WebURL, "/")
}

func (r HookRepo) api() string {
	if r.web() == "https://github.com" {
		return "https://api.github.com"
	}
	return r.web() + "/api/v3"
}

func (r HookRepo) branch() string {
	if r.DefaultBranch == "" {
		return "main"
	}
	return r.DefaultBranch
}

func (r HookRepo) html(parts ...string) string {
	return r.web() + "/" + r.FullName() + strings.Join(parts, "")
}

func (r HookRepo) apiURL(parts ...string) string {
	return r.api() + "/repos/" + r.FullName() + strings.Join(parts, "")
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func userPayload(r HookRepo, u HookUser) map[string]any {
	api := r.api() + "/users/" + u.Login
	kind := "User"
	if u.Organization {
		kind = "Organization"
	}
	return map[string]any{
		"login":               u.Login,
		"id":                  u.ID,
		"node_id":             nodeID(kind, u.ID),
		"avatar_url":          fmt.Sprintf("https://avatars.githubusercontent.com/u/%d?v=4", u.ID),
		"gravatar_id":         "",
		"url":                 api,
		"html_url":            r.web() + "/" + u.Login,
		"followers_url":       api + "/followers",
		"following_url":       api + "/following{/other_user}",
		"gists_url":           api + "/gists{/gist_id}",
		"starred_url":         api + "/starred{/owner}{/repo}",
		"subscriptions_url":   api + "/subscriptions",
		"organizations_url":   api + "/orgs",
		"repos_url":           api + "/repos",
		"events_url":          api + "/events{/privacy}",
		"received_events_url": api + "/received_events",
		"type":                kind,
		"user_view_type":      "public",
		"site_admin":          false,
	}
}

// repoPayload is the "repository" object of a payload. Push payloads differ
// from all others, as on GitHub: created_at and pushed_at are Unix seconds
// (not RFC 3339 strings), the owner carries name and email, and
// master_branch and stargazers are added.
func repoPayload(r HookRepo, push bool) map[string]any {
	host := strings.TrimPrefix(strings.TrimPrefix(r.web(), "https://"), "http://")
	visibility := "public"
	if r.Private {
		visibility = "private"
	}
	created := DefaultEpoch.Add(-30 * 24 * time.Hour)
	m := map[string]any{
		"id":                r.ID,
		"node_id":           nodeID("Repository", r.ID),
		"name":              r.Name,
		"full_name":         r.FullName(),
		"private":           r.Private,
		"owner":             userPayload(r, r.Owner),
		"html_url":          r.html(),
		"description":       nil,
		"fork":              false,
		"url":               r.apiURL(),
		"commits_url":       r.apiURL("/commits{/sha}"),
		"pulls_url":         r.apiURL("/pulls{/number}"),
		"issues_url":        r.apiURL("/issues{/number}"),
		"releases_url":      r.apiURL("/releases{/id}"),
		"created_at":        stamp(created),
		"updated_at":        stamp(DefaultEpoch),
		"pushed_at":         stamp(DefaultEpoch),
		"git_url":           "git://" + host + "/" + r.FullName() + ".git",
		"ssh_url":           "git@" + host + ":" + r.FullName() + ".git",
		"clone_url":         r.html(".git"),
		"homepage":          nil,
		"size":              128,
		"stargazers_count":  0,
		"watchers_count":    0,
		"language":          "Go",
		"has_issues":        true,
		"has_projects":      true,
		"has_wiki":          true,
		"forks_count":       0,
		"archived":          false,
		"disabled":          false,
		"open_issues_count": 0,
		"license":           nil,
		"allow_forking":     true,
		"is_template":       false,
		"topics":            []string{},
		"visibility":        visibility,
		"forks":             0,
		"open_issues":       0,
		"watchers":          0,
		"default_branch":    r.branch(),
	}
	if push {
		owner := userPayload(r, r.Owner)
		owner["name"] = r.Owner.Login
		owner["email"] = fmt.Sprintf("%d+%s@users.noreply.github.com", r.Owner.ID, r.Owner.Login)
		m["owner"] = owner
		m["created_at"] = created.Unix()
		m["pushed_at"] = DefaultEpoch.Unix()
		m["stargazers"] = 0
		m["master_branch"] = r.branch()
	}
	return m
}

// common adds the repository and sender every payload carries.
func common(m map[string]any, r HookRepo, sender HookUser, push bool) ([]byte, error) {
	m["repository"] = repoPayload(r, push)
	m["sender"] = userPayload(r, sender)
	return json.Marshal(m)
}

// PushEvent builds a "push" payload.
type PushEvent struct {
	Repo HookRepo
	// Sender pushed; also the payload's pusher.
	Sender HookUser
	// Ref is the full ref, "refs/heads/" + the default branch when empty.
	Ref string
	// Before and After are the ref's SHAs around the push. Before is derived
	// (zeros when Created); After is the last commit's id (zeros when
	// Deleted).
	Before  string
	After   string
	Commits []HookCommit
	Created bool
	Deleted bool
	Forced  bool
}

// EventName is "push".
func (PushEvent) EventName() string { return "push" }

// MarshalJSON encodes the payload as GitHub does.
func (e PushEvent) MarshalJSON() ([]byte, error) {
	ref := orDefault(e.Ref, "refs/heads/"+e.Repo.branch())
	commits := make([]map[string]any, len(e.Commits))
	var head any
	after := e.After
	for i, c := range e.Commits {
		commits[i] = commitPayload(e.Repo, c)
		head = commits[i]
		if e.After == "" {
			after = commits[i]["id"].(string)
		}
	}
	if e.Deleted {
		after, head = zeroSHA, nil
	}
	if after == "" {
		after = fakeSHA(e.Repo.FullName(), ref, "after")
	}
	before := e.Before
	if before == "" {
		before = fakeSHA(e.Repo.FullName(), ref, "before", after)
		if e.Created {
			before = zeroSHA
		}
	}
	compare := e.Repo.html("/compare/", short(before), "...", short(after))
	if e.Created {
		compare = e.Repo.html("/commit/", short(after))
	}
	return common(map[string]any{
		"ref":         ref,
		"before":      before,
		"after":       after,
		"pusher":      map[string]any{"name": e.Sender.Login, "email": fmt.Sprintf("%d+%s@users.noreply.github.com", e.Sender.ID, e.Sender.Login)},
		"created":     e.Created,
		"deleted":     e.Deleted,
		"forced":      e.Forced,
		"base_ref":    nil,
		"compare":     compare,
		"commits":     commits,
		"head_commit": head,
	}, e.Repo, e.Sender, true)
}

func commitPayload(r HookRepo, c HookCommit) map[string]any {
	id := orDefault(c.ID, fakeSHA(r.FullName(), c.Message))
	at := orDefault(c.Timestamp, DefaultEpoch)
	person := map[string]any{
		"name":  orDefault(c.AuthorName, orDefault(c.AuthorLogin, "A U Thor")),
		"email": orDefault(c.AuthorEmail, "author@example.com"),
	}
	if c.AuthorLogin != "" {
		person["username"] = c.AuthorLogin
	}
	return map[string]any{
		"id":        id,
		"tree_id":   fakeSHA("tree", id),
		"distinct":  true,
		"message":   c.Message,
		"timestamp": at.Format(time.RFC3339),
		"url":       r.html("/commit/", id),
		"author":    person,
		"committer": person,
		"added":     orEmpty(c.Added),
		"removed":   orEmpty(c.Removed),
		"modified":  orEmpty(c.Modified),
	}
}

func short(sha string) string { return sha[:min(12, len(sha))] }

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// PullRequestEvent builds a "pull_request" payload.
type PullRequestEvent struct {
	// Action is "opened" when empty; "closed" with Merged is a merge.
	Action string
	Repo   HookRepo
	Sender HookUser
	Number int // 1 when zero
	// ID is the pull request's global id, derived from Number when zero.
	ID     int64
	Title  string
	Body   string
	Author HookUser // Sender when zero
	// Head is "feature-N" and Base the default branch when empty.
	Head  string
	Base  string
	Draft bool
	// Merged marks a merged pull request: state closed, merged true,
	// merged_at and merged_by (the Sender) set.
	Merged bool
	// At is when it was last updated (and closed or merged), DefaultEpoch
	// when zero; it was created an hour before.
	At time.Time
}

// EventName is "pull_request".
func (PullRequestEvent) EventName() string { return "pull_request" }

// MarshalJSON encodes the payload as GitHub does.
func (e PullRequestEvent) MarshalJSON() ([]byte, error) {
	action := orDefault(e.Action, "opened")
	number := orDefault(e.Number, 1)
	author := orDefault(e.Author, e.Sender)
	at := orDefault(e.At, DefaultEpoch).UTC()
	head := orDefault(e.Head, fmt.Sprintf("feature-%d", number))
	base := orDefault(e.Base, e.Repo.branch())
	state := "open"
	var closedAt, mergedAt, mergedBy, mergeSHA any
	if action == "closed" || e.Merged {
		state = "closed"
		closedAt = stamp(at)
	}
	if e.Merged {
		mergedAt = stamp(at)
		mergedBy = userPayload(e.Repo, e.Sender)
		mergeSHA = fakeSHA(e.Repo.FullName(), "merge", fmt.Sprint(number))
	}
	n := fmt.Sprint(number)
	headSHA := fakeSHA(e.Repo.FullName(), "head", head)
	branch := func(ref, sha string) map[string]any {
		return map[string]any{
			"label": e.Repo.Owner.Login + ":" + ref, "ref": ref, "sha": sha,
			"user": userPayload(e.Repo, e.Repo.Owner), "repo": repoPayload(e.Repo, false),
		}
	}
	var body any
	if e.Body != "" {
		body = e.Body
	}
	pr := map[string]any{
		"url":                   e.Repo.apiURL("/pulls/", n),
		"id":                    orDefault(e.ID, 1_800_000_000+int64(number)),
		"node_id":               "PR_" + nodeID("PullRequest", int64(number)),
		"html_url":              e.Repo.html("/pull/", n),
		"diff_url":              e.Repo.html("/pull/", n, ".diff"),
		"patch_url":             e.Repo.html("/pull/", n, ".patch"),
		"issue_url":             e.Repo.apiURL("/issues/", n),
		"number":                number,
		"state":                 state,
		"locked":                false,
		"title":                 e.Title,
		"user":                  userPayload(e.Repo, author),
		"body":                  body,
		"created_at":            stamp(at.Add(-time.Hour)),
		"updated_at":            stamp(at),
		"closed_at":             closedAt,
		"merged_at":             mergedAt,
		"merge_commit_sha":      mergeSHA,
		"assignee":              nil,
		"assignees":             []any{},
		"requested_reviewers":   []any{},
		"requested_teams":       []any{},
		"labels":                []any{},
		"milestone":             nil,
		"draft":                 e.Draft,
		"commits_url":           e.Repo.apiURL("/pulls/", n, "/commits"),
		"review_comments_url":   e.Repo.apiURL("/pulls/", n, "/comments"),
		"comments_url":          e.Repo.apiURL("/issues/", n, "/comments"),
		"statuses_url":          e.Repo.apiURL("/statuses/", headSHA),
		"head":                  branch(head, headSHA),
		"base":                  branch(base, fakeSHA(e.Repo.FullName(), "base", base)),
		"author_association":    "CONTRIBUTOR",
		"auto_merge":            nil,
		"active_lock_reason":    nil,
		"merged":                e.Merged,
		"mergeable":             nil,
		"rebaseable":            nil,
		"mergeable_state":       "unknown",
		"merged_by":             mergedBy,
		"comments":              0,
		"review_comments":       0,
		"maintainer_can_modify": false,
		"commits":               1,
		"additions":             10,
		"deletions":             2,
		"changed_files":         1,
	}
	return common(map[string]any{"action": action, "number": number, "pull_request": pr}, e.Repo, e.Sender, false)
}

// CreateEvent builds a "create" payload: a branch or tag was created.
type CreateEvent struct {
	Repo   HookRepo
	Sender HookUser
	// Ref is the short name of the branch or tag (no refs/heads/).
	Ref string
	// RefType is "branch" (when empty) or "tag".
	RefType string
}

// EventName is "create".
func (CreateEvent) EventName() string { return "create" }

// MarshalJSON encodes the payload as GitHub does.
func (e CreateEvent) MarshalJSON() ([]byte, error) {
	return common(map[string]any{
		"ref": e.Ref, "ref_type": orDefault(e.RefType, "branch"), "master_branch": e.Repo.branch(),
		"description": nil, "pusher_type": "user",
	}, e.Repo, e.Sender, false)
}

// DeleteEvent builds a "delete" payload: a branch or tag was deleted.
type DeleteEvent struct {
	Repo   HookRepo
	Sender HookUser
	// Ref is the short name of the branch or tag (no refs/heads/).
	Ref string
	// RefType is "branch" (when empty) or "tag".
	RefType string
}

// EventName is "delete".
func (DeleteEvent) EventName() string { return "delete" }

// MarshalJSON encodes the payload as GitHub does.
func (e DeleteEvent) MarshalJSON() ([]byte, error) {
	return common(map[string]any{
		"ref": e.Ref, "ref_type": orDefault(e.RefType, "branch"), "pusher_type": "user",
	}, e.Repo, e.Sender, false)
}

// ReleaseEvent builds a "release" payload.
type ReleaseEvent struct {
	// Action is "published" when empty.
	Action  string
	Repo    HookRepo
	Sender  HookUser
	ID      int64 // derived from TagName when zero
	TagName string
	// Name is TagName when empty.
	Name       string
	Body       string
	Draft      bool
	Prerelease bool
	// At is when it was published, DefaultEpoch when zero.
	At time.Time
}

// EventName is "release".
func (ReleaseEvent) EventName() string { return "release" }

// MarshalJSON encodes the payload as GitHub does.
func (e ReleaseEvent) MarshalJSON() ([]byte, error) {
	at := orDefault(e.At, DefaultEpoch).UTC()
	id := orDefault(e.ID, 190_000_000+int64(len(e.TagName)))
	var published any = stamp(at)
	if e.Draft {
		published = nil
	}
	rel := map[string]any{
		"url":              e.Repo.apiURL("/releases/", fmt.Sprint(id)),
		"assets_url":       e.Repo.apiURL("/releases/", fmt.Sprint(id), "/assets"),
		"upload_url":       e.Repo.apiURL("/releases/", fmt.Sprint(id), "/assets{?name,label}"),
		"html_url":         e.Repo.html("/releases/tag/", e.TagName),
		"id":               id,
		"author":           userPayload(e.Repo, e.Sender),
		"node_id":          "RE_" + nodeID("Release", id),
		"tag_name":         e.TagName,
		"target_commitish": e.Repo.branch(),
		"name":             orDefault(e.Name, e.TagName),
		"draft":            e.Draft,
		"immutable":        false,
		"prerelease":       e.Prerelease,
		"created_at":       stamp(at.Add(-time.Minute)),
		"updated_at":       stamp(at),
		"published_at":     published,
		"assets":           []any{},
		"tarball_url":      e.Repo.apiURL("/tarball/", e.TagName),
		"zipball_url":      e.Repo.apiURL("/zipball/", e.TagName),
		"body":             e.Body,
	}
	return common(map[string]any{"action": orDefault(e.Action, "published"), "release": rel}, e.Repo, e.Sender, false)
}

// IssueCommentEvent builds an "issue_comment" payload: a comment on an issue
// or, with OnPullRequest, on a pull request's conversation.
type IssueCommentEvent struct {
	// Action is "created" when empty.
	Action        string
	Repo          HookRepo
	Sender        HookUser // the comment's author
	IssueNumber   int      // 1 when zero
	IssueTitle    string
	OnPullRequest bool
	CommentID     int64 // derived when zero
	Body          string
	// At is when the comment was made, DefaultEpoch when zero.
	At time.Time
}

// EventName is "issue_comment".
func (IssueCommentEvent) EventName() string { return "issue_comment" }

// MarshalJSON encodes the payload as GitHub does.
func (e IssueCommentEvent) MarshalJSON() ([]byte, error) {
	number := orDefault(e.IssueNumber, 1)
	n := fmt.Sprint(number)
	at := orDefault(e.At, DefaultEpoch).UTC()
	id := orDefault(e.CommentID, 2_400_000_000+int64(number))
	kind := "/issues/"
	if e.OnPullRequest {
		kind = "/pull/"
	}
	issue := map[string]any{
		"url":                e.Repo.apiURL("/issues/", n),
		"repository_url":     e.Repo.apiURL(),
		"comments_url":       e.Repo.apiURL("/issues/", n, "/comments"),
		"html_url":           e.Repo.html(kind, n),
		"id":                 1_700_000_000 + int64(number),
		"node_id":            "I_" + nodeID("Issue", int64(number)),
		"number":             number,
		"title":              e.IssueTitle,
		"user":               userPayload(e.Repo, e.Sender),
		"labels":             []any{},
		"state":              "open",
		"locked":             false,
		"assignee":           nil,
		"assignees":          []any{},
		"milestone":          nil,
		"comments":           1,
		"created_at":         stamp(at.Add(-time.Hour)),
		"updated_at":         stamp(at),
		"closed_at":          nil,
		"author_association": "OWNER",
		"body":               nil,
	}
	if e.OnPullRequest {
		issue["pull_request"] = map[string]any{
			"url":       e.Repo.apiURL("/pulls/", n),
			"html_url":  e.Repo.html("/pull/", n),
			"diff_url":  e.Repo.html("/pull/", n, ".diff"),
			"patch_url": e.Repo.html("/pull/", n, ".patch"),
			"merged_at": nil,
		}
	}
	comment := map[string]any{
		"url":                      e.Repo.apiURL("/issues/comments/", fmt.Sprint(id)),
		"html_url":                 e.Repo.html(kind, n, fmt.Sprintf("#issuecomment-%d", id)),
		"issue_url":                e.Repo.apiURL("/issues/", n),
		"id":                       id,
		"node_id":                  "IC_" + nodeID("IssueComment", id),
		"user":                     userPayload(e.Repo, e.Sender),
		"created_at":               stamp(at),
		"updated_at":               stamp(at),
		"author_association":       "OWNER",
		"body":                     e.Body,
		"reactions":                map[string]any{"url": e.Repo.apiURL("/issues/comments/", fmt.Sprint(id), "/reactions"), "total_count": 0},
		"performed_via_github_app": nil,
	}
	return common(map[string]any{"action": orDefault(e.Action, "created"), "issue": issue, "comment": comment}, e.Repo, e.Sender, false)
}

// StarEvent builds a "star" payload, an event devpilot does not use.
type StarEvent struct {
	// Action is "created" (when empty) or "deleted".
	Action string
	Repo   HookRepo
	Sender HookUser
	// At is when it was starred, DefaultEpoch when zero.
	At time.Time
}

// EventName is "star".
func (StarEvent) EventName() string { return "star" }

// MarshalJSON encodes the payload as GitHub does.
func (e StarEvent) MarshalJSON() ([]byte, error) {
	action := orDefault(e.Action, "created")
	var at any = stamp(orDefault(e.At, DefaultEpoch))
	if action == "deleted" {
		at = nil
	}
	return common(map[string]any{"action": action, "starred_at": at}, e.Repo, e.Sender, false)
}

// PingEvent builds the "ping" payload GitHub sends when a webhook is created.
type PingEvent struct {
	Repo   HookRepo
	Sender HookUser
	// URL is the webhook's payload URL.
	URL string
}

// EventName is "ping".
func (PingEvent) EventName() string { return "ping" }

// MarshalJSON encodes the payload as GitHub does.
func (e PingEvent) MarshalJSON() ([]byte, error) {
	hook := map[string]any{
		"type":           "Repository",
		"id":             HookID,
		"name":           "web",
		"active":         true,
		"events":         []string{"*"},
		"config":         map[string]any{"content_type": "json", "insecure_ssl": "0", "url": e.URL},
		"updated_at":     stamp(DefaultEpoch),
		"created_at":     stamp(DefaultEpoch),
		"url":            e.Repo.apiURL("/hooks/", fmt.Sprint(HookID)),
		"test_url":       e.Repo.apiURL("/hooks/", fmt.Sprint(HookID), "/test"),
		"ping_url":       e.Repo.apiURL("/hooks/", fmt.Sprint(HookID), "/pings"),
		"deliveries_url": e.Repo.apiURL("/hooks/", fmt.Sprint(HookID), "/deliveries"),
		"last_response":  map[string]any{"code": nil, "status": "unused", "message": nil},
	}
	return common(map[string]any{"zen": "Design for failure.", "hook_id": HookID, "hook": hook}, e.Repo, e.Sender, false)
}
