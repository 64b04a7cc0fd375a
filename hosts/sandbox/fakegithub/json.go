package fakegithub

import (
	"fmt"
	"strings"
	"time"
)

// The REST API's JSON shapes, with the fields GitHub sends (a consumer may
// read any of them), in GitHub's order.

type userJSON struct {
	Login             string `json:"login"`
	ID                int64  `json:"id"`
	NodeID            string `json:"node_id"`
	AvatarURL         string `json:"avatar_url"`
	GravatarID        string `json:"gravatar_id"`
	URL               string `json:"url"`
	HTMLURL           string `json:"html_url"`
	FollowersURL      string `json:"followers_url"`
	FollowingURL      string `json:"following_url"`
	GistsURL          string `json:"gists_url"`
	StarredURL        string `json:"starred_url"`
	SubscriptionsURL  string `json:"subscriptions_url"`
	OrganizationsURL  string `json:"organizations_url"`
	ReposURL          string `json:"repos_url"`
	EventsURL         string `json:"events_url"`
	ReceivedEventsURL string `json:"received_events_url"`
	Type              string `json:"type"`
	UserViewType      string `json:"user_view_type"`
	SiteAdmin         bool   `json:"site_admin"`
}

func (c *call) userJSON(a *account) userJSON {
	api := c.api + "/users/" + a.login
	kind := "User"
	if a.org {
		kind = "Organization"
	}
	return userJSON{
		Login:             a.login,
		ID:                a.id,
		NodeID:            nodeID(kind, a.id),
		AvatarURL:         fmt.Sprintf("%s/avatars/u/%d?v=4", c.web, a.id),
		URL:               api,
		HTMLURL:           c.web + "/" + a.login,
		FollowersURL:      api + "/followers",
		FollowingURL:      api + "/following{/other_user}",
		GistsURL:          api + "/gists{/gist_id}",
		StarredURL:        api + "/starred{/owner}{/repo}",
		SubscriptionsURL:  api + "/subscriptions",
		OrganizationsURL:  api + "/orgs",
		ReposURL:          api + "/repos",
		EventsURL:         api + "/events{/privacy}",
		ReceivedEventsURL: api + "/received_events",
		Type:              a.typ(),
		UserViewType:      "public",
	}
}

type privateUserJSON struct {
	userJSON
	Name              string  `json:"name"`
	Company           *string `json:"company"`
	Blog              string  `json:"blog"`
	Location          *string `json:"location"`
	Email             string  `json:"email"`
	Hireable          *bool   `json:"hireable"`
	Bio               *string `json:"bio"`
	PublicRepos       int     `json:"public_repos"`
	PublicGists       int     `json:"public_gists"`
	Followers         int     `json:"followers"`
	Following         int     `json:"following"`
	CreatedAt         string  `json:"created_at"`
	UpdatedAt         string  `json:"updated_at"`
	PrivateGists      int     `json:"private_gists"`
	TotalPrivateRepos int     `json:"total_private_repos"`
	OwnedPrivateRepos int     `json:"owned_private_repos"`
	TwoFactor         bool    `json:"two_factor_authentication"`
}

type permissionsJSON struct {
	Admin    bool `json:"admin"`
	Maintain bool `json:"maintain"`
	Push     bool `json:"push"`
	Triage   bool `json:"triage"`
	Pull     bool `json:"pull"`
}

type repoJSON struct {
	ID              int64            `json:"id"`
	NodeID          string           `json:"node_id"`
	Name            string           `json:"name"`
	FullName        string           `json:"full_name"`
	Private         bool             `json:"private"`
	Owner           userJSON         `json:"owner"`
	HTMLURL         string           `json:"html_url"`
	Description     *string          `json:"description"`
	Fork            bool             `json:"fork"`
	URL             string           `json:"url"`
	CommitsURL      string           `json:"commits_url"`
	PullsURL        string           `json:"pulls_url"`
	CreatedAt       string           `json:"created_at"`
	UpdatedAt       string           `json:"updated_at"`
	PushedAt        *string          `json:"pushed_at"`
	GitURL          string           `json:"git_url"`
	SSHURL          string           `json:"ssh_url"`
	CloneURL        string           `json:"clone_url"`
	Homepage        *string          `json:"homepage"`
	Size            int              `json:"size"`
	StargazersCount int              `json:"stargazers_count"`
	WatchersCount   int              `json:"watchers_count"`
	Language        *string          `json:"language"`
	HasIssues       bool             `json:"has_issues"`
	ForksCount      int              `json:"forks_count"`
	Archived        bool             `json:"archived"`
	Disabled        bool             `json:"disabled"`
	OpenIssuesCount int              `json:"open_issues_count"`
	AllowForking    bool             `json:"allow_forking"`
	IsTemplate      bool             `json:"is_template"`
	Topics          []string         `json:"topics"`
	Visibility      string           `json:"visibility"`
	Forks           int              `json:"forks"`
	OpenIssues      int              `json:"open_issues"`
	Watchers        int              `json:"watchers"`
	DefaultBranch   string           `json:"default_branch"`
	Permissions     *permissionsJSON `json:"permissions,omitempty"`
}

// repoJSON describes r; for a user, with the user's permissions.
func (c *call) repoJSON(r *Repo, u *User) repoJSON {
	api := c.api + "/repos/" + r.FullName()
	host := strings.TrimPrefix(strings.TrimPrefix(c.web, "http://"), "https://")
	visibility := "public"
	if r.private {
		visibility = "private"
	}
	open := 0
	for _, p := range r.pulls {
		if p.State == "open" {
			open++
		}
	}
	out := repoJSON{
		ID:              r.id,
		NodeID:          nodeID("Repository", r.id),
		Name:            r.name,
		FullName:        r.FullName(),
		Private:         r.private,
		Owner:           c.userJSON(r.owner),
		HTMLURL:         c.web + "/" + r.FullName(),
		Description:     optional(r.description),
		URL:             api,
		CommitsURL:      api + "/commits{/sha}",
		PullsURL:        api + "/pulls{/number}",
		CreatedAt:       stamp(r.createdAt),
		UpdatedAt:       stamp(r.updatedAt),
		GitURL:          "git://" + host + "/" + r.FullName() + ".git",
		SSHURL:          "git@" + host + ":" + r.FullName() + ".git",
		CloneURL:        c.web + "/" + r.FullName() + ".git",
		Size:            len(r.commits) * 12,
		HasIssues:       true,
		OpenIssuesCount: open,
		AllowForking:    true,
		Topics:          []string{},
		Visibility:      visibility,
		OpenIssues:      open,
		DefaultBranch:   r.defaultBranch,
	}
	if !r.pushedAt.IsZero() {
		out.PushedAt = optional(stamp(r.pushedAt))
	}
	if u != nil {
		owner := r.owner == &u.account
		out.Permissions = &permissionsJSON{Admin: owner, Maintain: owner, Push: true, Triage: true, Pull: true}
	}
	return out
}

type gitActorJSON struct {
	Name  string `json:"name"`
	Email string `json:"email"`
	Date  string `json:"date"`
}

type refJSON struct {
	SHA     string `json:"sha"`
	URL     string `json:"url"`
	HTMLURL string `json:"html_url,omitempty"`
}

type verificationJSON struct {
	Verified   bool    `json:"verified"`
	Reason     string  `json:"reason"`
	Signature  *string `json:"signature"`
	Payload    *string `json:"payload"`
	VerifiedAt *string `json:"verified_at"`
}

type gitCommitJSON struct {
	Author       gitActorJSON     `json:"author"`
	Committer    gitActorJSON     `json:"committer"`
	Message      string           `json:"message"`
	Tree         refJSON          `json:"tree"`
	URL          string           `json:"url"`
	CommentCount int              `json:"comment_count"`
	Verification verificationJSON `json:"verification"`
}

type commitJSON struct {
	SHA         string        `json:"sha"`
	NodeID      string        `json:"node_id"`
	Commit      gitCommitJSON `json:"commit"`
	URL         string        `json:"url"`
	HTMLURL     string        `json:"html_url"`
	CommentsURL string        `json:"comments_url"`
	Author      *userJSON     `json:"author"`
	Committer   *userJSON     `json:"committer"`
	Parents     []refJSON     `json:"parents"`
}

// commitJSON describes a commit of r. Callers hold s.mu.
func (s *Server) commitJSON(c *call, r *Repo, cm Commit) commitJSON {
	api := c.api + "/repos/" + r.FullName()
	actor := gitActorJSON{Name: cm.AuthorName, Email: cm.AuthorEmail, Date: stamp(cm.Date)}
	out := commitJSON{
		SHA:    cm.SHA,
		NodeID: "C_kwDO" + cm.SHA[:20],
		Commit: gitCommitJSON{
			Author:       actor,
			Committer:    actor,
			Message:      cm.Message,
			Tree:         refJSON{SHA: fakeSHA("tree", cm.SHA), URL: api + "/git/trees/" + fakeSHA("tree", cm.SHA)},
			URL:          api + "/git/commits/" + cm.SHA,
			Verification: verificationJSON{Reason: "unsigned"},
		},
		URL:         api + "/commits/" + cm.SHA,
		HTMLURL:     c.web + "/" + r.FullName() + "/commit/" + cm.SHA,
		CommentsURL: api + "/commits/" + cm.SHA + "/comments",
		Parents:     []refJSON{},
	}
	if u := s.lookupUser(cm.Author); u != nil {
		j := c.userJSON(&u.account)
		out.Author, out.Committer = &j, &j
	}
	if cm.Parent != "" {
		out.Parents = append(out.Parents, refJSON{SHA: cm.Parent, URL: api + "/commits/" + cm.Parent,
			HTMLURL: c.web + "/" + r.FullName() + "/commit/" + cm.Parent})
	}
	return out
}

type branchJSON struct {
	Label string   `json:"label"`
	Ref   string   `json:"ref"`
	SHA   string   `json:"sha"`
	User  userJSON `json:"user"`
	Repo  repoJSON `json:"repo"`
}

type pullJSON struct {
	URL                string     `json:"url"`
	ID                 int64      `json:"id"`
	NodeID             string     `json:"node_id"`
	HTMLURL            string     `json:"html_url"`
	DiffURL            string     `json:"diff_url"`
	PatchURL           string     `json:"patch_url"`
	IssueURL           string     `json:"issue_url"`
	Number             int        `json:"number"`
	State              string     `json:"state"`
	Locked             bool       `json:"locked"`
	Title              string     `json:"title"`
	User               *userJSON  `json:"user"`
	Body               *string    `json:"body"`
	CreatedAt          string     `json:"created_at"`
	UpdatedAt          string     `json:"updated_at"`
	ClosedAt           *string    `json:"closed_at"`
	MergedAt           *string    `json:"merged_at"`
	MergeCommitSHA     *string    `json:"merge_commit_sha"`
	Assignee           *userJSON  `json:"assignee"`
	Assignees          []userJSON `json:"assignees"`
	RequestedReviewers []userJSON `json:"requested_reviewers"`
	Labels             []any      `json:"labels"`
	Milestone          any        `json:"milestone"`
	Draft              bool       `json:"draft"`
	CommitsURL         string     `json:"commits_url"`
	ReviewCommentsURL  string     `json:"review_comments_url"`
	CommentsURL        string     `json:"comments_url"`
	StatusesURL        string     `json:"statuses_url"`
	Head               branchJSON `json:"head"`
	Base               branchJSON `json:"base"`
	AuthorAssociation  string     `json:"author_association"`
	AutoMerge          any        `json:"auto_merge"`
	ActiveLockReason   *string    `json:"active_lock_reason"`
}

// pullJSON describes a pull request of r as the list endpoint does: without
// "merged" (only merged_at says it was). Callers hold s.mu.
func (s *Server) pullJSON(c *call, r *Repo, p Pull) pullJSON {
	api := c.api + "/repos/" + r.FullName()
	html := c.web + "/" + r.FullName() + "/pull/" + fmt.Sprint(p.Number)
	repo := c.repoJSON(r, nil)
	owner := c.userJSON(r.owner)
	out := pullJSON{
		URL:                api + "/pulls/" + fmt.Sprint(p.Number),
		ID:                 p.ID,
		NodeID:             "PR_" + nodeID("PullRequest", p.ID),
		HTMLURL:            html,
		DiffURL:            html + ".diff",
		PatchURL:           html + ".patch",
		IssueURL:           api + "/issues/" + fmt.Sprint(p.Number),
		Number:             p.Number,
		State:              p.State,
		Title:              p.Title,
		Body:               optional(p.Body),
		CreatedAt:          stamp(p.CreatedAt),
		UpdatedAt:          stamp(p.UpdatedAt),
		Assignees:          []userJSON{},
		RequestedReviewers: []userJSON{},
		Labels:             []any{},
		Draft:              p.Draft,
		CommitsURL:         api + "/pulls/" + fmt.Sprint(p.Number) + "/commits",
		ReviewCommentsURL:  api + "/pulls/" + fmt.Sprint(p.Number) + "/comments",
		CommentsURL:        api + "/issues/" + fmt.Sprint(p.Number) + "/comments",
		StatusesURL:        api + "/statuses/" + p.HeadSHA,
		Head:               branchJSON{Label: r.owner.login + ":" + p.Head, Ref: p.Head, SHA: p.HeadSHA, User: owner, Repo: repo},
		Base:               branchJSON{Label: r.owner.login + ":" + p.Base, Ref: p.Base, SHA: fakeSHA(r.FullName(), "base", p.Base), User: owner, Repo: repo},
		AuthorAssociation:  "CONTRIBUTOR",
	}
	if u := s.lookupUser(p.Author); u != nil {
		j := c.userJSON(&u.account)
		out.User = &j
		if r.owner == &u.account {
			out.AuthorAssociation = "OWNER"
		} else if r.members[strings.ToLower(u.login)] {
			out.AuthorAssociation = "MEMBER"
		}
	}
	if !p.ClosedAt.IsZero() {
		out.ClosedAt = optional(stamp(p.ClosedAt))
	}
	if !p.MergedAt.IsZero() {
		out.MergedAt = optional(stamp(p.MergedAt))
		out.MergeCommitSHA = optional(fakeSHA(r.FullName(), "merge", fmt.Sprint(p.Number)))
	}
	return out
}

type activityJSON struct {
	ID           int64     `json:"id"`
	NodeID       string    `json:"node_id"`
	Before       string    `json:"before"`
	After        string    `json:"after"`
	Ref          string    `json:"ref"`
	Timestamp    string    `json:"timestamp"`
	ActivityType string    `json:"activity_type"`
	Actor        *userJSON `json:"actor"`
}

// activityJSON describes an activity. Callers hold s.mu.
func (s *Server) activityJSON(c *call, a Activity) activityJSON {
	out := activityJSON{
		ID:           a.ID,
		NodeID:       "RA_" + nodeID("RepositoryActivity", a.ID),
		Before:       a.Before,
		After:        a.After,
		Ref:          a.Ref,
		Timestamp:    stamp(a.At),
		ActivityType: a.Type,
	}
	if u := s.lookupUser(a.Actor); u != nil {
		j := c.userJSON(&u.account)
		out.Actor = &j
	}
	return out
}

type searchJSON struct {
	TotalCount        int              `json:"total_count"`
	IncompleteResults bool             `json:"incomplete_results"`
	Items             []searchItemJSON `json:"items"`
}

type searchItemJSON struct {
	commitJSON
	Repository repoJSON `json:"repository"`
	Score      float64  `json:"score"`
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func optional[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}
