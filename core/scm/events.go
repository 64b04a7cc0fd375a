package scm

import (
	"encoding/json"
	"fmt"
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

// unusable is a payload that lacks what its event needs: the delivery
// fails, for good.
type unusable string

func (u unusable) Error() string { return string(u) }

// parser reads the payload of one kind of event into activity entries
// without ids, times or source; none means the payload says nothing worth
// recording.
type parser func(payload []byte) ([]ports.SCMActivity, error)

var parsers = map[string]parser{
	"push":          parsePush,
	"pull_request":  parsePull,
	"create":        parseRef("create", "created"),
	"delete":        parseRef("delete", "deleted"),
	"release":       parseRelease,
	"issue_comment": parseComment,
}

// ParseWebhook reads the raw body of a delivery of event, JSON or a form
// (as contentType says; see ReceiveWebhook), into the activity entries it
// records, without ids, times or source: none for an event devpilot does
// not record, or an action of one that says nothing worth recording. Text
// taken from the payload is never refused for what it holds (control
// characters, invalid UTF-8); it is made one line. Errors:
// unsupported_media_type for another content type; malformed when the body
// is not a form with one payload field, the payload is not JSON, or it lacks
// what its event needs.
func ParseWebhook(event, contentType string, body []byte) ([]ports.SCMActivity, error) {
	form, err := isForm(contentType)
	if err != nil {
		return nil, err
	}
	if form {
		if body, err = formPayload(body); err != nil {
			return nil, err
		}
	}
	if !json.Valid(body) {
		return nil, &ports.Error{Kind: ports.KindMalformed, Message: "the webhook payload is not JSON"}
	}
	parse, ok := parsers[event]
	if !ok {
		return nil, nil
	}
	entries, err := parse(body)
	if err != nil {
		return nil, &ports.Error{Kind: ports.KindMalformed, Message: err.Error(), Err: err}
	}
	return entries, nil
}

// activityOf turns a delivery into activity entries, and says how its
// processing ends: processed, ignored, or failed with the reason.
func activityOf(d ports.WebhookDelivery) (entries []ports.SCMActivity, status, reason string) {
	parse, ok := parsers[d.Event]
	if !ok {
		return nil, ports.DeliveryIgnored, ""
	}
	entries, err := parse(d.Payload)
	if err != nil {
		return nil, ports.DeliveryFailed, err.Error()
	}
	if len(entries) == 0 {
		return nil, ports.DeliveryIgnored, ""
	}
	stamp(d, entries)
	return entries, ports.DeliveryProcessed, ""
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

// common is what every recorded event needs: which repository, and who.
type common struct {
	Action     string `json:"action"`
	Repository *struct {
		ID      int64  `json:"id"`
		HTMLURL string `json:"html_url"`
	} `json:"repository"`
	Sender *struct {
		Login string `json:"login"`
	} `json:"sender"`
}

// entry starts an entry from the common fields: unusable without a
// repository id or a sender.
func (c common) entry(kind, action string) (ports.SCMActivity, error) {
	if c.Repository == nil || c.Repository.ID == 0 {
		return ports.SCMActivity{}, unusable(kind + " payload lacks repository.id")
	}
	if c.Sender == nil || line(c.Sender.Login, maxLoginLen) == "" {
		return ports.SCMActivity{}, unusable(kind + " payload lacks sender.login")
	}
	return ports.SCMActivity{RepoID: c.Repository.ID, Kind: kind, Action: action, Actor: line(c.Sender.Login, maxLoginLen)}, nil
}

func (c common) repoURL() string { return clip(c.Repository.HTMLURL, maxURLLen) }

// decode reads the fields v names; anything else in the payload is
// tolerated.
func decode(kind string, payload []byte, v any) error {
	if err := json.Unmarshal(payload, v); err != nil {
		return unusable(fmt.Sprintf("%s payload cannot be read: %v", kind, err))
	}
	return nil
}

func parsePush(payload []byte) ([]ports.SCMActivity, error) {
	var p struct {
		common
		Ref     string     `json:"ref"`
		Created bool       `json:"created"`
		Deleted bool       `json:"deleted"`
		Forced  bool       `json:"forced"`
		Compare string     `json:"compare"`
		After   string     `json:"after"`
		Commits []struct{} `json:"commits"`
		Head    *struct {
			ID string `json:"id"`
		} `json:"head_commit"`
	}
	if err := decode("push", payload, &p); err != nil {
		return nil, err
	}
	n := len(p.Commits)
	// The create and delete events say it better.
	if p.Deleted || (p.Created && n == 0) {
		return nil, nil
	}
	action := ""
	if p.Forced {
		action = "forced"
	}
	e, err := p.entry("push", action)
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
	if p.Head != nil && p.Head.ID != "" {
		head = p.Head.ID
	}
	head = commitSHA(head)
	e.Ref, e.URL = name, clip(line(p.Compare, maxURLLen), maxURLLen)
	if e.URL == "" && head != "" && p.repoURL() != "" {
		e.URL = p.repoURL() + "/commit/" + head
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
	ref = line(ref, maxRefLen)
	if name, ok := strings.CutPrefix(ref, "refs/tags/"); ok {
		return name, true
	}
	name, _ := strings.CutPrefix(ref, "refs/heads/")
	return name, false
}

func parsePull(payload []byte) ([]ports.SCMActivity, error) {
	var p struct {
		common
		Number      int `json:"number"`
		PullRequest *struct {
			Number  int    `json:"number"`
			Title   string `json:"title"`
			HTMLURL string `json:"html_url"`
			Merged  bool   `json:"merged"`
			Head    *struct {
				Ref string `json:"ref"`
			} `json:"head"`
		} `json:"pull_request"`
	}
	if err := decode("pull_request", payload, &p); err != nil {
		return nil, err
	}
	action := p.Action
	switch action {
	case "opened", "reopened":
	case "closed":
		if p.PullRequest != nil && p.PullRequest.Merged {
			action = "merged"
		}
	default:
		return nil, nil
	}
	e, err := p.entry("pull_request", action)
	if err != nil {
		return nil, err
	}
	if p.PullRequest == nil {
		return nil, unusable("pull_request payload lacks pull_request")
	}
	pr := p.PullRequest
	n := p.Number
	if n == 0 {
		n = pr.Number
	}
	if n <= 0 {
		return nil, unusable("pull_request payload lacks number")
	}
	if pr.Head != nil {
		e.Ref = line(pr.Head.Ref, maxRefLen)
	}
	e.URL = clip(pr.HTMLURL, maxURLLen)
	e.Summary = fmt.Sprintf("%s %s pull request #%d", e.Actor, action, n)
	if title := line(pr.Title, maxTitleLen); action == "opened" && title != "" {
		e.Summary += ": " + title
	}
	return []ports.SCMActivity{e}, nil
}

// parseRef reads create and delete events, of a branch or a tag.
func parseRef(kind, verb string) parser {
	return func(payload []byte) ([]ports.SCMActivity, error) {
		var p struct {
			common
			Ref     string `json:"ref"`
			RefType string `json:"ref_type"`
		}
		if err := decode(kind, payload, &p); err != nil {
			return nil, err
		}
		switch p.RefType {
		case "branch", "tag":
		case "":
			return nil, unusable(kind + " payload lacks ref_type")
		default:
			return nil, nil
		}
		e, err := p.entry(kind, p.RefType)
		if err != nil {
			return nil, err
		}
		if e.Ref = line(p.Ref, maxRefLen); e.Ref == "" {
			return nil, unusable(kind + " payload lacks ref")
		}
		e.URL = p.repoURL()
		if kind == "create" && e.URL != "" {
			e.URL += "/tree/" + e.Ref
		}
		e.Summary = fmt.Sprintf("%s %s %s %s", e.Actor, verb, p.RefType, e.Ref)
		return []ports.SCMActivity{e}, nil
	}
}

func parseRelease(payload []byte) ([]ports.SCMActivity, error) {
	var p struct {
		common
		Release *struct {
			TagName string `json:"tag_name"`
			HTMLURL string `json:"html_url"`
		} `json:"release"`
	}
	if err := decode("release", payload, &p); err != nil {
		return nil, err
	}
	if p.Action != "published" {
		return nil, nil
	}
	e, err := p.entry("release", p.Action)
	if err != nil {
		return nil, err
	}
	if p.Release == nil || line(p.Release.TagName, maxRefLen) == "" {
		return nil, unusable("release payload lacks release.tag_name")
	}
	e.Ref, e.URL = line(p.Release.TagName, maxRefLen), clip(p.Release.HTMLURL, maxURLLen)
	e.Summary = fmt.Sprintf("%s published release %s", e.Actor, e.Ref)
	return []ports.SCMActivity{e}, nil
}

func parseComment(payload []byte) ([]ports.SCMActivity, error) {
	var p struct {
		common
		Issue *struct {
			Number int `json:"number"`
		} `json:"issue"`
		Comment *struct {
			HTMLURL string `json:"html_url"`
		} `json:"comment"`
	}
	if err := decode("issue_comment", payload, &p); err != nil {
		return nil, err
	}
	if p.Action != "created" {
		return nil, nil
	}
	e, err := p.entry("issue_comment", p.Action)
	if err != nil {
		return nil, err
	}
	if p.Issue == nil || p.Issue.Number <= 0 {
		return nil, unusable("issue_comment payload lacks issue.number")
	}
	if p.Comment != nil {
		e.URL = clip(p.Comment.HTMLURL, maxURLLen)
	}
	e.Summary = fmt.Sprintf("%s commented on #%d", e.Actor, p.Issue.Number)
	return []ports.SCMActivity{e}, nil
}
