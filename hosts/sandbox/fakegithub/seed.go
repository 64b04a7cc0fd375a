package fakegithub

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// account is a user or an organisation that owns repositories.
type account struct {
	login string
	id    int64
	org   bool
}

func (a *account) typ() string {
	if a.org {
		return "Organization"
	}
	return "User"
}

// token is an access token the fake accepts.
type token struct {
	value   string
	user    *User
	scopes  string // as X-OAuth-Scopes lists them: "read:user, repo"
	revoked bool
}

// DefaultScopes are the scopes of a token registered with User.Token.
const DefaultScopes = "read:user, repo"

// User is a seeded GitHub user. Its methods may be called at any time and
// return the User so calls can be chained.
type User struct {
	s *Server
	account
	name  string
	email string
}

// AddUser seeds a user. Logins are case-insensitive, as on GitHub; adding a
// login again returns the existing user.
func (s *Server) AddUser(login string, id int64) *User {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := strings.ToLower(login)
	if u, ok := s.users[key]; ok {
		return u
	}
	u := &User{
		s:       s,
		account: account{login: login, id: id},
		name:    login,
		email:   fmt.Sprintf("%d+%s@users.noreply.github.com", id, login),
	}
	s.users[key] = u
	return u
}

// Login is the user's login.
func (u *User) Login() string { return u.login }

// ID is the user's numeric id.
func (u *User) ID() int64 { return u.id }

// Token registers an access token that authenticates as the user, with
// DefaultScopes.
func (u *User) Token(value string) *User {
	u.s.mu.Lock()
	defer u.s.mu.Unlock()
	u.s.tokens[value] = &token{value: value, user: u, scopes: DefaultScopes}
	return u
}

// Profile sets the name and email commits use for the user when a Commit
// names no author name or email.
func (u *User) Profile(name, email string) *User {
	u.s.mu.Lock()
	defer u.s.mu.Unlock()
	u.name, u.email = name, email
	return u
}

// Hook is the user as a webhook payload's sender or author.
func (u *User) Hook() HookUser { return HookUser{Login: u.login, ID: u.id} }

// lookupUser returns the seeded user with that login. Callers hold s.mu.
func (s *Server) lookupUser(login string) *User {
	return s.users[strings.ToLower(login)]
}

// RepoOption configures a repository that AddRepo seeds.
type RepoOption func(*Repo)

// Private makes the repository private: only its owner and the users given
// to VisibleTo see it.
func Private() RepoOption { return func(r *Repo) { r.private = true } }

// VisibleTo gives users access to the repository: as collaborators of a
// user's repository, as organisation members for an organisation's.
func VisibleTo(logins ...string) RepoOption {
	return func(r *Repo) {
		for _, l := range logins {
			r.members[strings.ToLower(l)] = true
		}
	}
}

// Description sets the repository's description.
func Description(d string) RepoOption { return func(r *Repo) { r.description = d } }

// DefaultBranch sets the repository's default branch ("main" by default).
func DefaultBranch(b string) RepoOption { return func(r *Repo) { r.defaultBranch = b } }

// RepoID sets the repository's numeric id (a fresh one by default).
func RepoID(id int64) RepoOption { return func(r *Repo) { r.id = id } }

// Repo is a seeded repository. Its methods may be called at any time.
type Repo struct {
	s             *Server
	id            int64
	owner         *account
	name          string
	private       bool
	description   string
	defaultBranch string
	members       map[string]bool
	createdAt     time.Time
	updatedAt     time.Time
	pushedAt      time.Time
	commits       []Commit
	pulls         []Pull
	activity      []Activity
	files         map[string]string // path → content, on the default branch
	issues        []*Issue
	labels        []Label
	fileCommits   []FileCommit // the commits of PUT .../contents, oldest first
}

// AddRepo seeds the repository owner/name. The owner is the seeded user of
// that login, or else an organisation of that name. The owner, the users
// given to VisibleTo and, unless it is Private, anyone can read it;
// /user/repos lists it for the owner and for the VisibleTo users.
func (s *Server) AddRepo(owner, name string, opts ...RepoOption) *Repo {
	s.mu.Lock()
	defer s.mu.Unlock()
	acc := s.owner(owner)
	now := s.tick()
	r := &Repo{
		s:             s,
		owner:         acc,
		name:          name,
		defaultBranch: "main",
		members:       map[string]bool{},
		createdAt:     now,
		updatedAt:     now,
	}
	for _, o := range opts {
		o(r)
	}
	if r.id == 0 {
		r.id = s.newID()
	}
	s.repos = append(s.repos, r)
	return r
}

// owner returns the account of a login: the user, or an organisation made on
// first use. Callers hold s.mu.
func (s *Server) owner(login string) *account {
	if u := s.lookupUser(login); u != nil {
		return &u.account
	}
	key := strings.ToLower(login)
	if o, ok := s.orgs[key]; ok {
		return o
	}
	o := &account{login: login, id: s.newID(), org: true}
	s.orgs[key] = o
	return o
}

// ID is the repository's numeric id.
func (r *Repo) ID() int64 { return r.id }

// FullName is "owner/name".
func (r *Repo) FullName() string { return r.owner.login + "/" + r.name }

// Owner is the owner's login.
func (r *Repo) Owner() string { return r.owner.login }

// Name is the repository's name.
func (r *Repo) Name() string { return r.name }

// Grant gives users access to the repository, as VisibleTo does.
func (r *Repo) Grant(logins ...string) *Repo {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	VisibleTo(logins...)(r)
	return r
}

// Hook is the repository as a webhook payload names it, on the fake's URL()
// (https://github.com for a NewHandler fake).
func (r *Repo) Hook() HookRepo {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	return HookRepo{
		ID:            r.id,
		Owner:         HookUser{Login: r.owner.login, ID: r.owner.id, Organization: r.owner.org},
		Name:          r.name,
		Private:       r.private,
		DefaultBranch: r.defaultBranch,
		WebURL:        r.s.URL(),
	}
}

// visibleTo reports whether the user (nil for anonymous) can read the
// repository. Callers hold s.mu.
func (r *Repo) visibleTo(u *User) bool {
	return !r.private || r.affiliated(u)
}

// affiliated reports whether the repository is the user's or the user was
// given access. Callers hold s.mu.
func (r *Repo) affiliated(u *User) bool {
	return u != nil && (r.owner == &u.account || r.members[strings.ToLower(u.login)])
}

// lookupRepo returns the repository owner/name, case-insensitively. Callers
// hold s.mu.
func (s *Server) lookupRepo(owner, name string) *Repo {
	for _, r := range s.repos {
		if strings.EqualFold(r.owner.login, owner) && strings.EqualFold(r.name, name) {
			return r
		}
	}
	return nil
}

// Commit is a commit to seed with Repo.Commit, which returns it with its
// defaults filled in.
type Commit struct {
	// SHA is the commit's id: 40 hex digits, derived from the repository and
	// the message when empty.
	SHA     string
	Message string
	// Author is the login of the seeded user GitHub links the commit to;
	// empty for a commit whose email matches no GitHub account (the REST
	// API then answers "author": null).
	Author string
	// AuthorName and AuthorEmail are the git author; by default the
	// Author's profile, or "A U Thor" <author@example.com>.
	AuthorName  string
	AuthorEmail string
	// Date is the author and committer date; the next seeded time when zero.
	Date time.Time
	// Parent is the parent commit's SHA; by default the commit seeded
	// before it.
	Parent string
}

// Commit seeds a commit (the newest of the repository's default branch) and
// returns it with its defaults filled in. It also moves the repository's
// pushed_at and updated_at to the commit's date.
func (r *Repo) Commit(c Commit) Commit {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.Date.IsZero() {
		c.Date = s.tick()
	}
	c.Date = c.Date.UTC()
	if c.Author != "" {
		if u := s.lookupUser(c.Author); u != nil {
			c.Author = u.login
			if c.AuthorName == "" {
				c.AuthorName = u.name
			}
			if c.AuthorEmail == "" {
				c.AuthorEmail = u.email
			}
		}
	}
	if c.AuthorName == "" {
		c.AuthorName = "A U Thor"
	}
	if c.AuthorEmail == "" {
		c.AuthorEmail = "author@example.com"
	}
	if c.Parent == "" && len(r.commits) > 0 {
		c.Parent = r.commits[len(r.commits)-1].SHA
	}
	if c.SHA == "" {
		c.SHA = fakeSHA(r.FullName(), c.Message, c.Parent, c.Date.String())
	}
	r.commits = append(r.commits, c)
	r.pushedAt = latest(r.pushedAt, c.Date)
	r.updatedAt = latest(r.updatedAt, c.Date)
	return c
}

// Hook is the commit as a push payload lists it.
func (c Commit) Hook() HookCommit {
	return HookCommit{
		ID: c.SHA, Message: c.Message, AuthorName: c.AuthorName, AuthorEmail: c.AuthorEmail,
		AuthorLogin: c.Author, Timestamp: c.Date,
	}
}

// Pull is a pull request to seed with Repo.Pull, which returns it with its
// defaults filled in.
type Pull struct {
	// Number is the next free number when zero.
	Number int
	Title  string
	Body   string
	// State is "open" or "closed"; "open" when empty, "closed" when Merged.
	State string
	// Author is the login of the user who opened it.
	Author string
	// Head is the branch it merges, "feature-N" by default; Base is the
	// branch it merges into, the repository's default branch by default.
	Head  string
	Base  string
	Draft bool
	// Merged marks a pull request closed by merging it.
	Merged bool
	// CreatedAt is the next seeded time when zero; UpdatedAt is CreatedAt
	// when zero; MergedAt and ClosedAt are UpdatedAt when the pull request
	// is merged or closed and they are zero.
	CreatedAt time.Time
	UpdatedAt time.Time
	MergedAt  time.Time
	ClosedAt  time.Time
	// HeadSHA is the head commit; derived from the title when empty.
	HeadSHA string
	// ID is the pull request's global id; a fresh one when zero.
	ID int64
}

// Pull seeds a pull request and returns it with its defaults filled in.
func (r *Repo) Pull(p Pull) Pull {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.Number == 0 {
		p.Number = 1
		for _, q := range r.pulls {
			p.Number = max(p.Number, q.Number+1)
		}
	}
	if p.ID == 0 {
		p.ID = s.newID()
	}
	if p.Merged {
		p.State = "closed"
	}
	if p.State == "" {
		p.State = "open"
	}
	if p.Head == "" {
		p.Head = fmt.Sprintf("feature-%d", p.Number)
	}
	if p.Base == "" {
		p.Base = r.defaultBranch
	}
	if p.CreatedAt.IsZero() {
		p.CreatedAt = s.tick()
	}
	if p.UpdatedAt.IsZero() {
		p.UpdatedAt = p.CreatedAt
	}
	if p.Merged && p.MergedAt.IsZero() {
		p.MergedAt = p.UpdatedAt
	}
	if p.State == "closed" && p.ClosedAt.IsZero() {
		p.ClosedAt = p.UpdatedAt
	}
	if p.HeadSHA == "" {
		p.HeadSHA = fakeSHA(r.FullName(), "pull", p.Title, p.Head)
	}
	p.CreatedAt, p.UpdatedAt = p.CreatedAt.UTC(), p.UpdatedAt.UTC()
	r.pulls = append(r.pulls, p)
	r.updatedAt = latest(r.updatedAt, p.UpdatedAt)
	return p
}

// The activity types of GitHub's repository activity API.
const (
	ActivityPush            = "push"
	ActivityForcePush       = "force_push"
	ActivityBranchCreation  = "branch_creation"
	ActivityBranchDeletion  = "branch_deletion"
	ActivityPRMerge         = "pr_merge"
	ActivityMergeQueueMerge = "merge_queue_merge"
)

// zeroSHA is the SHA GitHub gives a ref that does not exist (before a
// creation, after a deletion).
const zeroSHA = "0000000000000000000000000000000000000000"

// Activity is a repository activity to seed with Repo.Activity, which
// returns it with its defaults filled in.
type Activity struct {
	// ID is a fresh id when zero.
	ID int64
	// Type is the activity_type, ActivityPush when empty.
	Type string
	// Actor is the login of the user who did it.
	Actor string
	// Ref is "refs/heads/" + the default branch when empty.
	Ref string
	// Before and After are the ref's SHAs around the activity; derived when
	// empty (zeros before a creation and after a deletion).
	Before string
	After  string
	// At is the next seeded time when zero.
	At time.Time
}

// Activity seeds a repository activity and returns it with its defaults
// filled in.
func (r *Repo) Activity(a Activity) Activity {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if a.ID == 0 {
		a.ID = 20_000_000_000 + s.newID()
	}
	if a.Type == "" {
		a.Type = ActivityPush
	}
	if a.Ref == "" {
		a.Ref = "refs/heads/" + r.defaultBranch
	}
	if a.At.IsZero() {
		a.At = s.tick()
	}
	a.At = a.At.UTC()
	if a.Before == "" {
		a.Before = fakeSHA(r.FullName(), "before", fmt.Sprint(a.ID))
		if a.Type == ActivityBranchCreation {
			a.Before = zeroSHA
		}
	}
	if a.After == "" {
		a.After = fakeSHA(r.FullName(), "after", fmt.Sprint(a.ID))
		if a.Type == ActivityBranchDeletion {
			a.After = zeroSHA
		}
	}
	r.activity = append(r.activity, a)
	return a
}

// fakeSHA is a stable 40-hex-digit id made of parts.
func fakeSHA(parts ...string) string {
	h := sha1.Sum([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:])
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
