package scm

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/devpilot/devpilot/ports"
)

// The activity vocabulary: Kind is the webhook event's name; Action says
// what happened within it.
//
//	push           ""  or "forced"
//	pull_request   "opened", "merged", "closed", "reopened"
//	create, delete "branch" or "tag"
//	release        "published"
//	issue_comment  "created"

// SourceWebhook marks activity devpilot learnt from a webhook delivery.
const SourceWebhook = "webhook"

// Bounds of the text of an activity entry taken from a payload.
const (
	maxLoginLen = 100
	maxRefLen   = 255
	maxTitleLen = 200
	maxURLLen   = 2048
)

// unusable is an event that lacks what it needs to be recorded: the
// delivery fails, for good.
type unusable string

func (u unusable) Error() string { return string(u) }

// mapper turns one kind of event into activity entries without ids, times
// or source; none means the event says nothing worth recording.
type mapper func(e ports.SCMWebhookEvent) ([]ports.SCMActivity, error)

var mappers = map[string]mapper{
	"push":          mapPush,
	"pull_request":  mapPull,
	"create":        mapRef("create", "created"),
	"delete":        mapRef("delete", "deleted"),
	"release":       mapRelease,
	"issue_comment": mapComment,
}

// entriesOf turns an event, as the provider's adapter read it, into the
// activity entries it records, without ids, times or source: none for an
// event devpilot does not record, or an action of one that says nothing
// worth recording. Text taken from the event is never refused for what it
// holds (control characters, invalid UTF-8); it is made one line and
// bounded, and a URL that is not an absolute http(s) URL is dropped.
// Errors: an unusable when the event lacks what it needs.
func entriesOf(e ports.SCMWebhookEvent) ([]ports.SCMActivity, error) {
	m, ok := mappers[e.Kind]
	if !ok {
		return nil, nil
	}
	entries, err := m(e)
	for i := range entries {
		entries[i].URL = webURL(entries[i].URL)
	}
	return entries, err
}

// webURL returns raw when it is an absolute http or https URL with a host,
// the only links activity carries, else "": a URL a payload or a provider
// gave with another scheme (javascript:, data:, …) is dropped, never shown
// to a client that might make it a link.
func webURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" || (!strings.EqualFold(u.Scheme, "http") && !strings.EqualFold(u.Scheme, "https")) {
		return ""
	}
	return raw
}

// activityOf reads a delivery's payload with Deps.Webhooks and turns it into
// activity entries, and says how its processing ends: processed, ignored,
// or failed with the reason. Errors: the adapter's other than malformed.
func (s *Service) activityOf(d ports.WebhookDelivery) (entries []ports.SCMActivity, status, reason string, err error) {
	ev, err := s.d.Webhooks.ParseWebhook(d.Event, d.Payload)
	if err != nil {
		if pe, ok := ports.AsError(err); ok && pe.Kind == ports.KindMalformed {
			return nil, ports.DeliveryFailed, pe.Message, nil
		}
		return nil, "", "", err
	}
	if ev == nil {
		return nil, ports.DeliveryIgnored, "", nil
	}
	ev.Kind = d.Event
	entries, err = entriesOf(*ev)
	if err != nil {
		return nil, ports.DeliveryFailed, err.Error(), nil
	}
	if len(entries) == 0 {
		return nil, ports.DeliveryIgnored, "", nil
	}
	stamp(d, entries)
	return entries, ports.DeliveryProcessed, "", nil
}

// stamp gives a delivery's entries their ids, "delivery:<id>", or
// "delivery:<id>:<n>" from 1 when there are several, so that processing the
// delivery again makes the same ones; and their time and source.
func stamp(d ports.WebhookDelivery, entries []ports.SCMActivity) {
	for i := range entries {
		e := &entries[i]
		e.ID = "delivery:" + d.ID
		if len(entries) > 1 {
			e.ID += ":" + strconv.Itoa(i+1)
		}
		e.At, e.Source, e.DeliveryID = d.ReceivedAt, SourceWebhook, d.ID
	}
}

// entry starts an entry from what every recorded event needs: unusable
// without a repository id or a sender.
func entry(e ports.SCMWebhookEvent, action string) (ports.SCMActivity, error) {
	if e.RepoID == 0 {
		return ports.SCMActivity{}, unusable(e.Kind + " payload lacks repository.id")
	}
	if ports.Line(e.Actor, maxLoginLen) == "" {
		return ports.SCMActivity{}, unusable(e.Kind + " payload lacks sender.login")
	}
	return ports.SCMActivity{RepoID: e.RepoID, Kind: e.Kind, Action: action, Actor: ports.Line(e.Actor, maxLoginLen)}, nil
}

func repoURL(e ports.SCMWebhookEvent) string { return ports.Clip(e.RepoURL, maxURLLen) }

func mapPush(p ports.SCMWebhookEvent) ([]ports.SCMActivity, error) {
	n := p.Commits
	// The create and delete events say it better.
	if p.Deleted || (p.Created && n == 0) {
		return nil, nil
	}
	action := ""
	if p.Forced {
		action = "forced"
	}
	e, err := entry(p, action)
	if err != nil {
		return nil, err
	}
	name, tag := refName(p.Ref)
	if name == "" {
		return nil, unusable("push payload lacks ref")
	}
	where := name
	if tag {
		where = "tag " + name
	}
	verb := "pushed"
	if p.Forced {
		verb = "force-pushed"
	}
	head := p.After
	if p.HeadCommit != "" {
		head = p.HeadCommit
	}
	head = commitSHA(head)
	e.Ref, e.URL = name, ports.Clip(ports.Line(p.Compare, maxURLLen), maxURLLen)
	if e.URL == "" && head != "" && repoURL(p) != "" {
		e.URL = repoURL(p) + "/commit/" + head
	}
	switch n {
	case 0:
		e.Summary = fmt.Sprintf("%s %s to %s", e.Actor, verb, where)
	case 1:
		e.Summary = fmt.Sprintf("%s %s 1 commit to %s", e.Actor, verb, where)
	default:
		e.Summary = fmt.Sprintf("%s %s %d commits to %s", e.Actor, verb, n, where)
	}
	e.SHA = head
	return []ports.SCMActivity{e}, nil
}

// commitSHA is sha when it is a commit id (4 to 64 hex digits) other than
// the zero one a deleted ref points to, else "".
func commitSHA(sha string) string {
	if len(sha) < 4 || len(sha) > 64 || strings.Trim(sha, "0") == "" {
		return ""
	}
	for i := 0; i < len(sha); i++ {
		if c := sha[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return ""
		}
	}
	return strings.ToLower(sha)
}

// refName is a ref's short name, and whether it is a tag.
func refName(ref string) (string, bool) {
	ref = ports.Line(ref, maxRefLen)
	if name, ok := strings.CutPrefix(ref, "refs/tags/"); ok {
		return name, true
	}
	name, _ := strings.CutPrefix(ref, "refs/heads/")
	return name, false
}

func mapPull(p ports.SCMWebhookEvent) ([]ports.SCMActivity, error) {
	action := p.Action
	switch action {
	case "opened", "reopened":
	case "closed":
		if p.Merged {
			action = "merged"
		}
	default:
		return nil, nil
	}
	e, err := entry(p, action)
	if err != nil {
		return nil, err
	}
	if !p.HasPull {
		return nil, unusable("pull_request payload lacks pull_request")
	}
	n := p.Number
	if n <= 0 {
		return nil, unusable("pull_request payload lacks number")
	}
	e.Ref = ports.Line(p.Ref, maxRefLen)
	e.URL = ports.Clip(p.URL, maxURLLen)
	e.Summary = fmt.Sprintf("%s %s pull request #%d", e.Actor, action, n)
	if title := ports.Line(p.Title, maxTitleLen); action == "opened" && title != "" {
		e.Summary += ": " + title
	}
	return []ports.SCMActivity{e}, nil
}

// mapRef maps create and delete events, of a branch or a tag.
func mapRef(kind, verb string) mapper {
	return func(p ports.SCMWebhookEvent) ([]ports.SCMActivity, error) {
		switch p.RefType {
		case "branch", "tag":
		case "":
			return nil, unusable(kind + " payload lacks ref_type")
		default:
			return nil, nil
		}
		e, err := entry(p, p.RefType)
		if err != nil {
			return nil, err
		}
		if e.Ref = ports.Line(p.Ref, maxRefLen); e.Ref == "" {
			return nil, unusable(kind + " payload lacks ref")
		}
		e.URL = repoURL(p)
		if kind == "create" && e.URL != "" {
			e.URL += "/tree/" + e.Ref
		}
		e.Summary = fmt.Sprintf("%s %s %s %s", e.Actor, verb, p.RefType, e.Ref)
		return []ports.SCMActivity{e}, nil
	}
}

func mapRelease(p ports.SCMWebhookEvent) ([]ports.SCMActivity, error) {
	if p.Action != "published" {
		return nil, nil
	}
	e, err := entry(p, p.Action)
	if err != nil {
		return nil, err
	}
	if !p.HasRelease || ports.Line(p.Ref, maxRefLen) == "" {
		return nil, unusable("release payload lacks release.tag_name")
	}
	e.Ref, e.URL = ports.Line(p.Ref, maxRefLen), ports.Clip(p.URL, maxURLLen)
	e.Summary = fmt.Sprintf("%s published release %s", e.Actor, e.Ref)
	return []ports.SCMActivity{e}, nil
}

func mapComment(p ports.SCMWebhookEvent) ([]ports.SCMActivity, error) {
	if p.Action != "created" {
		return nil, nil
	}
	e, err := entry(p, p.Action)
	if err != nil {
		return nil, err
	}
	if !p.HasIssue || p.Number <= 0 {
		return nil, unusable("issue_comment payload lacks issue.number")
	}
	e.URL = ports.Clip(p.URL, maxURLLen)
	e.Summary = fmt.Sprintf("%s commented on #%d", e.Actor, p.Number)
	return []ports.SCMActivity{e}, nil
}
