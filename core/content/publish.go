package content

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/devpilot/devpilot/ports"
)

// The limits of publishing.
const (
	MaxTargetNameLen   = 100
	MaxTargetConfigLen = 2000 // characters of one config value
	MaxTargetsPerProj  = 50
	MaxPublishAhead    = 366 * 24 * time.Hour
	// DefaultPublishTries is how often one run of a publish job tries the
	// target before it leaves the rest to the job's own retry.
	DefaultPublishTries = 3
	// DefaultPublishBackoff is the wait before the second try of a run; it
	// doubles for each try after.
	DefaultPublishBackoff = 500 * time.Millisecond
	// DefaultPublishJobAttempts is how often the queue runs a publish job.
	DefaultPublishJobAttempts = 3
)

// Codes of publishing errors set as ports.Error.Code.
const (
	// CodeNotApproved (conflict): only an approved item can be published.
	CodeNotApproved = "not_approved"
	// CodeStarted (conflict): the publication has started or finished and
	// can no longer be cancelled.
	CodeStarted = "publication_started"
	// CodeTargetCreatorOnly (forbidden): a github_file target commits with
	// its creator's GitHub connection; only an admin or its creator may
	// publish through it or delete it.
	CodeTargetCreatorOnly = "target_creator_only"
)

// The config keys of each kind of target; secretKey is the key of a
// secret given at creation (the WordPress application password), never
// stored in Config.
var targetKeys = map[string]struct {
	required, optional []string
	secretKey          string
}{
	ports.TargetWebhook:    {required: []string{"url"}},
	ports.TargetWordPress:  {required: []string{"site_url", "username"}, secretKey: "application_password"},
	ports.TargetGitHubFile: {required: []string{"repo_id", "path_template"}, optional: []string{"branch"}},
}

// PublishContentArgs is the background job that publishes one publication.
type PublishContentArgs struct {
	OrgID         string `json:"org_id"`
	PublicationID string `json:"publication_id"`
}

// Kind names the job for the queue.
func (PublishContentArgs) Kind() string { return "content.publish" }

// TargetInput is a new publishing target. Config holds the kind's settings
// and, for WordPress, the application password (application_password).
type TargetInput struct {
	ProjectID string
	Name      string
	Kind      string
	Config    map[string]string
}

// NewTarget is a created target and its secret, shown this once: the
// webhook's signing secret ("" for other kinds).
type NewTarget struct {
	Target ports.PublishTarget
	Secret string
}

// CreateTarget stores a publishing target of a project of the caller's
// organisation. A webhook target gets a new signing secret; a WordPress
// target's application password is sealed; a github_file target must name
// a repository of the caller's GitHub connection.
//
// Errors: invalid (fields project_id, name, kind, config.*) for bad input,
// including a URL that is not http(s) or that names a private address
// when those are not allowed; conflict when the project has a target of
// that name, or has MaxTargetsPerProj; the store's errors.
func (s *Service) CreateTarget(ctx context.Context, in TargetInput) (NewTarget, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return NewTarget{}, err
	}
	var f fieldErrors
	if fe := checkProjectID(in.ProjectID); fe != nil {
		f = append(f, *fe)
	}
	name := f.text("name", in.Name, MaxTargetNameLen, true)
	keys, ok := targetKeys[in.Kind]
	if !ok {
		f.add("kind", "must be webhook, wordpress or github_file")
	}
	cfg := map[string]string{}
	secret := ""
	if ok {
		for k, v := range in.Config {
			field := "config." + k
			if !utf8.ValidString(k) || len(k) > 50 {
				field = "config"
			}
			switch {
			case k == keys.secretKey && k != "":
				secret = v
			case !slices.Contains(keys.required, k) && !slices.Contains(keys.optional, k):
				f.add(field, "unknown setting for a "+in.Kind+" target")
				continue
			default:
				cfg[k] = strings.TrimSpace(v)
			}
			if len(v) > MaxTargetConfigLen && utf8.RuneCountInString(v) > MaxTargetConfigLen {
				f.add(field, tooLong(MaxTargetConfigLen))
			}
		}
		for _, k := range keys.required {
			if cfg[k] == "" {
				f.add("config."+k, "required")
			}
		}
		if keys.secretKey != "" && secret == "" {
			f.add("config."+keys.secretKey, "required")
		}
	}
	if len(f) == 0 {
		s.checkTargetConfig(in.Kind, cfg, &f)
	}
	if err := f.err(); err != nil {
		return NewTarget{}, err
	}
	if in.Kind == ports.TargetGitHubFile {
		if s.d.Repos == nil {
			return NewTarget{}, ports.Errorf(ports.KindUnavailable, "publishing to GitHub is not configured")
		}
		if _, err := s.d.Repos.CheckRepo(ctx, p.Owner(), cfg["repo_id"]); errors.Is(err, ports.ErrNotFound) {
			return NewTarget{}, ports.Invalid("unknown repository", ports.FieldError{Field: "config.repo_id", Reason: "must be a repository of your GitHub connection (GET /scm/repos)"})
		} else if err != nil {
			return NewTarget{}, err
		}
	}
	existing, err := s.d.Publish.ListTargets(ctx, p.OrgID, in.ProjectID)
	if err != nil {
		return NewTarget{}, err
	}
	if len(existing) >= MaxTargetsPerProj {
		return NewTarget{}, ports.Errorf(ports.KindConflict, "project %s has %d publishing targets, the most it may have", in.ProjectID, MaxTargetsPerProj)
	}
	t := ports.PublishTarget{ID: s.d.IDs.NewID(), OrgID: p.OrgID, ProjectID: in.ProjectID, Name: name, Kind: in.Kind,
		Config: cfg, CreatedBy: p.UserID, CreatedAt: s.d.Clock.Now()}
	if in.Kind == ports.TargetWebhook {
		if secret, err = s.newSecret(); err != nil {
			return NewTarget{}, err
		}
	}
	if secret != "" {
		if t.SealedSecret, err = s.d.Cipher.Seal([]byte(secret), []byte(t.ID)); err != nil {
			return NewTarget{}, err
		}
	}
	err = s.d.Publish.CreateTarget(ctx, t)
	s.audit(ctx, p.UserID, p.OrgID, "content.create_target", t.ID, map[string]any{"project_id": t.ProjectID, "name": t.Name, "kind": t.Kind, "config": t.Config}, err)
	if errors.Is(err, ports.ErrConflict) {
		return NewTarget{}, &ports.Error{Kind: ports.KindConflict, Err: err,
			Message: fmt.Sprintf("project %s has a publishing target named %q already", in.ProjectID, name)}
	}
	if err != nil {
		return NewTarget{}, err
	}
	out := NewTarget{Target: t}
	if in.Kind == ports.TargetWebhook {
		out.Secret = secret
	}
	return out, nil
}

func (s *Service) newSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := io.ReadFull(s.random(), b); err != nil {
		return "", ports.Wrap(ports.KindInternal, err, "cannot make a secret")
	}
	return "whsec_" + hex.EncodeToString(b), nil
}

func (s *Service) random() io.Reader {
	if s.d.Random != nil {
		return s.d.Random
	}
	return rand.Reader
}

var (
	branchPattern = regexp.MustCompile(`^[A-Za-z0-9._/-]{1,200}$`)
	slugPattern   = regexp.MustCompile(`[^a-z0-9]+`)
)

// checkTargetConfig checks the settings of a kind of target.
func (s *Service) checkTargetConfig(kind string, cfg map[string]string, f *fieldErrors) {
	switch kind {
	case ports.TargetWebhook:
		if reason := CheckTargetURL(cfg["url"], s.cfg.AllowPrivateTargets); reason != "" {
			f.add("config.url", reason)
		}
	case ports.TargetWordPress:
		if reason := CheckTargetURL(cfg["site_url"], s.cfg.AllowPrivateTargets); reason != "" {
			f.add("config.site_url", reason)
		}
		cfg["site_url"] = strings.TrimRight(cfg["site_url"], "/")
		if strings.ContainsAny(cfg["username"], ":\r\n") {
			f.add("config.username", "must not contain ':' or line breaks")
		}
	case ports.TargetGitHubFile:
		if !ports.IsID(cfg["repo_id"]) {
			f.add("config.repo_id", "must be a repository id (GET /scm/repos)")
		}
		tpl := cfg["path_template"]
		if tpl != path.Clean(tpl) || strings.HasPrefix(tpl, "/") || strings.HasPrefix(tpl, "..") || strings.ContainsAny(tpl, "\\\x00") || len(tpl) > 500 {
			f.add("config.path_template", "must be a relative path in the repository, such as content/{slug}.md")
		} else if reason := CheckFilePath(tpl); reason != "" {
			f.add("config.path_template", reason)
		}
		if b, ok := cfg["branch"]; ok && b != "" && (!branchPattern.MatchString(b) || strings.Contains(b, "..")) {
			f.add("config.branch", "must be a branch name")
		}
	}
}

// CheckTargetURL returns why raw cannot be a target's URL, or "": it must
// be an absolute http or https URL without credentials and, unless
// allowPrivate, its host must pass ports.CheckPublicHost: a plain ASCII
// name that is not the machine's own (localhost and its kin), or a public
// IP address in its canonical spelling. Host names are resolved when the
// target is called, where ports.PublicAddr applies to the addresses found.
func CheckTargetURL(raw string, allowPrivate bool) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return "must be an absolute http or https URL"
	}
	if u.User != nil {
		return "must not hold credentials"
	}
	if allowPrivate {
		return ""
	}
	return ports.CheckPublicHost(u.Hostname())
}

// Targets returns the publishing targets of a project of the caller's
// organisation, by name. Errors: invalid (field project_id); the store's.
func (s *Service) Targets(ctx context.Context, projectID string) ([]ports.PublishTarget, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return nil, err
	}
	if err := projectIDError(projectID); err != nil {
		return nil, err
	}
	return s.d.Publish.ListTargets(ctx, p.OrgID, projectID)
}

// DeleteTarget deletes a publishing target of the caller's organisation;
// its publications are kept, and a scheduled one fails when its time
// comes. A github_file target, which commits with its creator's GitHub
// connection, may be deleted only by an admin or its creator. Errors:
// not_found; forbidden for another member's github_file target; the
// store's.
func (s *Service) DeleteTarget(ctx context.Context, id string) error {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return err
	}
	if !ports.IsID(id) {
		return ports.NotFound("publishing target", id)
	}
	t, err := s.d.Publish.GetTarget(ctx, p.OrgID, id)
	if err != nil {
		return err
	}
	if err := mayUseTarget(p, t, "delete"); err != nil {
		s.audit(ctx, p.UserID, p.OrgID, "content.delete_target", id, map[string]any{}, err)
		return err
	}
	err = s.d.Publish.DeleteTarget(ctx, p.OrgID, id)
	if !errors.Is(err, ports.ErrNotFound) {
		s.audit(ctx, p.UserID, p.OrgID, "content.delete_target", id, map[string]any{}, err)
	}
	return err
}

// Publish publishes an approved content item of the caller's organisation
// to one of its project's targets: now (at nil: the publication is queued)
// or at a time (scheduled). The publication and its job are stored in one
// transaction, so a scheduled publish survives restarts.
//
// A github_file target commits with its creator's GitHub connection, so
// only an admin or its creator may publish through it.
//
// Errors: not_found for the item or the target; forbidden for another
// member's github_file target; invalid (field target_id) for a target of
// another project, (field at) for a time not in the future
// or more than MaxPublishAhead ahead; conflict (not_approved) when the
// item is not approved.
//
// An item whose latest brand checks have findings is published only with
// an override: overrideReason, 3 to 500 characters (nil: none), recorded
// on the item with the caller and the time, as its next version, in the
// same transaction as the publication. Without one it is a conflict
// (brand_findings) listing the findings; an item using a banned word of a
// brand that makes banned words blocking is a conflict (banned_words)
// whatever the override. Further errors: invalid (field override.reason);
// precondition_failed (stale_version) when the item changed meanwhile; the
// store's and the queue's errors.
func (s *Service) Publish(ctx context.Context, itemID, targetID string, at *time.Time, overrideReason *string) (ports.Publication, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return ports.Publication{}, err
	}
	now := s.d.Clock.Now()
	reason := ""
	if overrideReason != nil {
		var f fieldErrors
		reason = checkOverrideReason(&f, "override.reason", *overrideReason)
		if err := f.err(); err != nil {
			return ports.Publication{}, err
		}
	}
	if at != nil {
		switch {
		case !at.After(now):
			return ports.Publication{}, ports.Invalid("the publishing time has passed", ports.FieldError{Field: "at", Reason: "must be in the future"})
		case at.Sub(now) > MaxPublishAhead:
			return ports.Publication{}, ports.Invalid("the publishing time is too far ahead", ports.FieldError{Field: "at", Reason: "must be within a year"})
		}
	}
	if !ports.IsID(itemID) {
		return ports.Publication{}, itemNotFound(itemID)
	}
	it, err := s.d.Store.GetContentItem(ctx, p.OrgID, itemID)
	if err != nil {
		return ports.Publication{}, err
	}
	if !ports.IsID(targetID) {
		return ports.Publication{}, ports.NotFound("publishing target", targetID)
	}
	t, err := s.d.Publish.GetTarget(ctx, p.OrgID, targetID)
	if err != nil {
		return ports.Publication{}, err
	}
	if err := mayUseTarget(p, t, "publish through"); err != nil {
		return ports.Publication{}, err
	}
	if t.ProjectID != it.ProjectID {
		return ports.Publication{}, ports.Invalid("the target is another project's",
			ports.FieldError{Field: "target_id", Reason: "must be a target of the item's project " + it.ProjectID})
	}
	if it.Status != ports.ContentApproved {
		return ports.Publication{}, &ports.Error{Kind: ports.KindConflict, Code: CodeNotApproved,
			Message: fmt.Sprintf("content item %s is %s; only an approved item can be published", it.ID, it.Status)}
	}
	brand, err := s.brand(ctx, p.OrgID, it.ProjectID)
	if err != nil {
		return ports.Publication{}, err
	}
	override, err := gate(brand, it.Checks, it.ID, "published", reason, p.UserID, now)
	if err != nil {
		return ports.Publication{}, err
	}
	pub := ports.Publication{ID: s.d.IDs.NewID(), OrgID: p.OrgID, ItemID: it.ID, TargetID: t.ID, TargetName: t.Name,
		TargetKind: t.Kind, Status: ports.PublicationQueued, RunAt: now, Attempts: []ports.PublishAttempt{},
		CreatedBy: p.UserID, CreatedAt: now, UpdatedAt: now}
	opts := ports.EnqueueOptions{MaxAttempts: s.cfg.PublishJobAttempts}
	if at != nil {
		pub.Status, pub.RunAt, opts.RunAt = ports.PublicationScheduled, at.UTC(), at.UTC()
	}
	err = s.d.Tx.WithinTx(ctx, func(ctx context.Context) error {
		if override != nil {
			cur := it.Version
			it.Override, it.Version, it.UpdatedAt = override, it.Version+1, now
			if err := s.d.Store.UpdateContentItem(ctx, it); errors.Is(err, ports.ErrPreconditionFailed) {
				return &ports.Error{Kind: ports.KindPreconditionFailed, Code: CodeStaleVersion, Err: err,
					Message: fmt.Sprintf("content item %s changed meanwhile (it is past version %d); reload it and publish it again", it.ID, cur)}
			} else if err != nil {
				return err
			}
		}
		if err := s.d.Publish.CreatePublication(ctx, pub); err != nil {
			return err
		}
		return s.d.Jobs.Enqueue(ctx, PublishContentArgs{OrgID: p.OrgID, PublicationID: pub.ID}, opts)
	})
	args := map[string]any{"target_id": t.ID, "at": pub.RunAt, "publication_id": pub.ID}
	if override != nil {
		args["override_reason"], args["findings"] = override.Reason, it.Checks
	}
	s.audit(ctx, p.UserID, p.OrgID, "content.publish", it.ID, args, err)
	if err != nil {
		return ports.Publication{}, err
	}
	return pub, nil
}

// mayUseTarget returns a forbidden Error unless p may act on t: anyone of
// the organisation on a webhook or WordPress target (its credentials are
// the target's own), only an admin or the creator on a github_file target,
// which acts with its creator's GitHub connection. The target is listed
// to every member, so forbidden (not not_found) hides nothing.
func mayUseTarget(p ports.Principal, t ports.PublishTarget, what string) error {
	if t.Kind != ports.TargetGitHubFile || p.IsAdmin() || p.UserID == t.CreatedBy {
		return nil
	}
	return &ports.Error{Kind: ports.KindForbidden, Code: CodeTargetCreatorOnly,
		Message: fmt.Sprintf("only an organisation admin or the target's creator may %s publishing target %q: it commits with its creator's GitHub connection", what, t.Name)}
}

// Publications returns the publications of a content item of the caller's
// organisation, newest first. Errors: not_found for the item; the store's.
func (s *Service) Publications(ctx context.Context, itemID string) ([]ports.Publication, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return nil, err
	}
	if !ports.IsID(itemID) {
		return nil, itemNotFound(itemID)
	}
	if _, err := s.d.Store.GetContentItem(ctx, p.OrgID, itemID); err != nil {
		return nil, err
	}
	return s.d.Publish.ListPublications(ctx, p.OrgID, itemID)
}

// CancelPublication cancels a publication of a content item that has not
// started, and returns it. Errors: not_found for the item or publication;
// conflict (publication_started) when it has started or finished.
func (s *Service) CancelPublication(ctx context.Context, itemID, pubID string) (ports.Publication, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return ports.Publication{}, err
	}
	if !ports.IsID(itemID) || !ports.IsID(pubID) {
		return ports.Publication{}, ports.NotFound("publication", pubID)
	}
	pub, err := s.d.Publish.GetPublication(ctx, p.OrgID, pubID)
	if err == nil && pub.ItemID != itemID {
		err = ports.NotFound("publication", pubID)
	}
	if err != nil {
		return ports.Publication{}, err
	}
	now := s.d.Clock.Now()
	next := pub
	next.Status, next.UpdatedAt, next.FinishedAt, next.Error = ports.PublicationCancelled, now, &now, "cancelled"
	err = s.d.Publish.UpdatePublication(ctx, next, ports.PublicationScheduled, ports.PublicationQueued)
	if errors.Is(err, ports.ErrPreconditionFailed) {
		cur, _ := s.d.Publish.GetPublication(ctx, p.OrgID, pubID)
		err = &ports.Error{Kind: ports.KindConflict, Code: CodeStarted, Err: err,
			Message: fmt.Sprintf("publication %s is %s; only a scheduled or queued one can be cancelled", pubID, cur.Status)}
	}
	s.audit(ctx, p.UserID, p.OrgID, "content.cancel_publication", itemID, map[string]any{"publication_id": pubID}, err)
	if err != nil {
		return ports.Publication{}, err
	}
	return next, nil
}

// RunPublication publishes one publication; the worker calls it for each
// run of a PublishContentArgs job, with final set on the last. It acts for
// the organisation named in args.
//
// A publication that has finished or was cancelled is left alone (a job
// run again after a crash publishes nothing twice). Otherwise it is marked
// running and the target is tried up to Config.PublishTries times, with a
// doubling backoff, while it fails in a way that may pass (a 5xx answer, a
// timeout, a lost connection); every try is recorded. Success marks the
// publication succeeded and the item published (version + 1); a failure
// that cannot pass, or any failure on the final run, marks it failed with
// the reason and leaves the item as it is. It returns an error only when
// the job should run again.
func (s *Service) RunPublication(ctx context.Context, args PublishContentArgs, final bool) error {
	log := s.log.With("publication_id", args.PublicationID, "org_id", args.OrgID)
	pub, err := s.d.Publish.GetPublication(ctx, args.OrgID, args.PublicationID)
	if errors.Is(err, ports.ErrNotFound) {
		log.InfoContext(ctx, "publication dropped: it is gone")
		return nil
	}
	if err != nil {
		return err
	}
	switch pub.Status {
	case ports.PublicationCancelled, ports.PublicationFailed:
		return nil
	case ports.PublicationSucceeded:
		return s.markPublished(ctx, pub) // in case the run that published stopped before this
	case ports.PublicationScheduled, ports.PublicationQueued:
		next := pub
		next.Status, next.UpdatedAt = ports.PublicationRunning, s.d.Clock.Now()
		if err := s.d.Publish.UpdatePublication(ctx, next, pub.Status); errors.Is(err, ports.ErrPreconditionFailed) {
			log.InfoContext(ctx, "publication dropped: it changed meanwhile (cancelled?)")
			return nil
		} else if err != nil {
			return err
		}
		pub = next
	}
	it, err := s.d.Store.GetContentItem(ctx, args.OrgID, pub.ItemID)
	if errors.Is(err, ports.ErrNotFound) {
		return nil // the publication went with it
	}
	if err != nil {
		return err
	}
	if it.Status != ports.ContentApproved && it.Status != ports.ContentPublished {
		return s.finish(ctx, pub, "", fmt.Sprintf("content item %s is %s, no longer approved", it.ID, it.Status))
	}
	t, err := s.d.Publish.GetTarget(ctx, args.OrgID, pub.TargetID)
	if errors.Is(err, ports.ErrNotFound) {
		return s.finish(ctx, pub, "", fmt.Sprintf("publishing target %q was deleted", pub.TargetName))
	}
	if err != nil {
		return err
	}
	publishedAt := s.d.Clock.Now().UTC()
	if len(pub.Attempts) > 0 {
		publishedAt = pub.Attempts[0].At
	}
	backoff := s.cfg.PublishBackoff
	for try := 1; ; try++ {
		at := s.d.Clock.Now().UTC()
		res, err := s.deliver(ctx, t, pub, it, publishedAt)
		a := ports.PublishAttempt{At: at, Outcome: ports.AuditOK, RemoteURL: res.RemoteURL}
		if err != nil {
			a.Outcome, a.Error = ports.AuditFailed, clipRunes(ports.Public(err).Message, 1000)
		}
		pub.Attempts = append(pub.Attempts, a)
		if err == nil {
			return s.finish(ctx, pub, res.RemoteURL, "")
		}
		log.WarnContext(ctx, "publishing attempt failed", "try", try, "err", err)
		if !ports.Transient(err) {
			return s.finish(ctx, pub, "", a.Error)
		}
		if try >= s.cfg.PublishTries {
			if final {
				return s.finish(ctx, pub, "", a.Error)
			}
			if serr := s.saveAttempts(ctx, pub); serr != nil {
				return serr
			}
			return err
		}
		if serr := s.saveAttempts(ctx, pub); serr != nil {
			return serr
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(backoff):
		}
		backoff *= 2
	}
}

func (s *Service) saveAttempts(ctx context.Context, pub ports.Publication) error {
	pub.UpdatedAt = s.d.Clock.Now()
	return s.d.Publish.UpdatePublication(context.WithoutCancel(ctx), pub, ports.PublicationRunning)
}

// finish records how a running publication ended and, on success, marks
// its item published.
func (s *Service) finish(ctx context.Context, pub ports.Publication, remoteURL, reason string) error {
	ctx = context.WithoutCancel(ctx)
	now := s.d.Clock.Now()
	pub.Status, pub.RemoteURL, pub.Error, pub.UpdatedAt, pub.FinishedAt = ports.PublicationSucceeded, remoteURL, reason, now, &now
	var outcome error
	if reason != "" {
		pub.Status = ports.PublicationFailed
		outcome = errors.New(reason)
	}
	// The publication's end and its item's move are one transaction, so
	// whoever sees the publication succeeded sees the item published.
	err := s.d.Tx.WithinTx(ctx, func(ctx context.Context) error {
		if err := s.d.Publish.UpdatePublication(ctx, pub, ports.PublicationRunning); err != nil {
			return err
		}
		if reason != "" {
			return nil
		}
		return s.markPublished(ctx, pub)
	})
	if err != nil {
		return err
	}
	s.audit(ctx, pub.CreatedBy, pub.OrgID, "content.published", pub.ItemID,
		map[string]any{"publication_id": pub.ID, "target_id": pub.TargetID, "remote_url": remoteURL, "attempts": len(pub.Attempts)}, outcome)
	if reason != "" {
		s.log.WarnContext(ctx, "publishing failed", "publication_id", pub.ID, "reason", reason)
	}
	return nil
}

// markPublished moves the item of a successful publication to published,
// unless it is not approved (published already, or changed since), with
// the publication's remote URL ("" when the target reports none) as its
// published URL.
func (s *Service) markPublished(ctx context.Context, pub ports.Publication) error {
	for range 3 {
		it, err := s.d.Store.GetContentItem(ctx, pub.OrgID, pub.ItemID)
		if errors.Is(err, ports.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if it.Status != ports.ContentApproved {
			return nil
		}
		now := s.d.Clock.Now()
		it.Status, it.Version, it.UpdatedAt, it.PublishedAt = ports.ContentPublished, it.Version+1, now, &now
		it.PublishedURL, it.PublishedVia = pub.RemoteURL, ports.PublishedViaTarget
		err = s.d.Store.UpdateContentItem(ctx, it)
		if !errors.Is(err, ports.ErrPreconditionFailed) {
			return err
		}
	}
	return nil
}

// deliver makes one attempt at publishing item to t.
func (s *Service) deliver(ctx context.Context, t ports.PublishTarget, pub ports.Publication, it ports.ContentItem, publishedAt time.Time) (ports.PublishResult, error) {
	secret := ""
	if t.SealedSecret != "" {
		b, err := s.d.Cipher.Open(t.SealedSecret, []byte(t.ID))
		if err != nil {
			return ports.PublishResult{}, ports.Wrap(ports.KindInternal, err, "the target's secret cannot be opened")
		}
		secret = string(b)
	}
	switch t.Kind {
	case ports.TargetWebhook:
		return s.d.Publisher.Webhook(ctx, ports.WebhookPost{URL: t.Config["url"], Secret: secret, DeliveryID: pub.ID,
			PublishedAt: publishedAt, Item: ports.PublishedItem{ID: it.ID, ProjectID: it.ProjectID, Title: it.Title, Body: it.Body,
				Format: it.Format, Version: it.Version, CreatedAt: it.CreatedAt.UTC(), UpdatedAt: it.UpdatedAt.UTC()}})
	case ports.TargetWordPress:
		return s.d.Publisher.WordPress(ctx, ports.WordPressPost{SiteURL: t.Config["site_url"], Username: t.Config["username"],
			Password: secret, Title: it.Title, Content: it.Body})
	case ports.TargetGitHubFile:
		if s.d.Repos == nil {
			return ports.PublishResult{}, ports.Errorf(ports.KindInvalid, "publishing to GitHub is not configured")
		}
		file := FilePath(t.Config["path_template"], it, publishedAt)
		if reason := CheckFilePath(file); reason != "" {
			return ports.PublishResult{}, ports.Errorf(ports.KindInvalid, "the file path %q %s", file, reason)
		}
		title, _ := json.Marshal(it.Title)
		return s.d.Repos.WriteFile(ctx, ports.Owner{OrgID: t.OrgID, UserID: t.CreatedBy}, ports.RepoFileWrite{
			RepoID: t.Config["repo_id"], Branch: t.Config["branch"], Path: file,
			Content: "---\ntitle: " + string(title) + "\n---\n\n" + it.Body + "\n",
			Message: "Publish " + clipRunes(it.Title, 60) + " (devpilot " + pub.ID + ")"})
	}
	return ports.PublishResult{}, ports.Errorf(ports.KindInvalid, "unknown kind of target %q", t.Kind)
}

// CheckFilePath returns why p (a path template, or the path it filled)
// cannot be where a github_file target writes, or "": after cleaning it
// must be a relative path inside the repository (no "..", not absolute,
// no backslash or control character), and no segment may be a git or
// repository-configuration name: one that starts with ".git" in any case
// (.git, .github, .gitmodules, .gitattributes, ...), once the characters
// some file systems ignore (format characters, trailing dots and spaces)
// are dropped. Workflows under .github/ run with the repository's
// secrets, and .git/ is git's own.
func CheckFilePath(p string) string {
	const inside = "must be a relative path in the repository, such as content/{slug}.md"
	clean := path.Clean(p)
	if p == "" || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") || strings.HasPrefix(clean, "/") ||
		strings.ContainsFunc(p, func(r rune) bool { return r == '\\' || unicode.IsControl(r) }) {
		return inside
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return inside
		}
		name := strings.ToLower(strings.TrimRight(strings.Map(func(r rune) rune {
			if unicode.Is(unicode.Cf, r) {
				return -1
			}
			return r
		}, seg), ". "))
		if strings.HasPrefix(name, ".git") {
			return "must not write into .git or .github, nor a .git* file of the repository"
		}
	}
	return ""
}

// FilePath fills a path template: {slug} is the item's title in lower case
// with runs of other characters than a-z and 0-9 as "-" ("untitled" when
// nothing is left), {id} its id and {date} the publishing day.
func FilePath(tpl string, it ports.ContentItem, at time.Time) string {
	slug := strings.Trim(slugPattern.ReplaceAllString(strings.ToLower(it.Title), "-"), "-")
	if len(slug) > 80 {
		slug = strings.TrimRight(slug[:80], "-")
	}
	if slug == "" {
		slug = "untitled"
	}
	return strings.NewReplacer("{slug}", slug, "{id}", it.ID, "{date}", at.UTC().Format("2006-01-02")).Replace(tpl)
}

// audit records a publishing write. The write has happened (or failed) by
// now, so a failure to record it is logged rather than returned.
func (s *Service) audit(ctx context.Context, userID, orgID, action, resource string, args any, outcome error) {
	if s.d.Audit == nil {
		return
	}
	b, err := json.Marshal(args)
	if err != nil {
		b = []byte(`{}`)
	}
	e := ports.AuditEntry{ID: s.d.IDs.NewID(), OrgID: orgID, UserID: userID, Action: action, Resource: resource,
		Arguments: b, Outcome: ports.AuditOK, At: s.d.Clock.Now()}
	if outcome != nil {
		e.Outcome, e.Error = ports.AuditFailed, clipRunes(outcome.Error(), 1000)
	}
	if err := s.d.Audit.RecordAudit(context.WithoutCancel(ctx), e); err != nil {
		s.log.Error("recording an audit entry", "err", err, "action", action, "resource", resource)
	}
}
