package github

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"mime"
	"net/url"
	"strings"

	"github.com/devpilot/devpilot/ports"
)

// Webhooks reads GitHub's webhook deliveries: the X-Hub-Signature-256
// signature, bodies sent as application/json or as
// application/x-www-form-urlencoded with the JSON in the "payload" field,
// and the payloads of the events devpilot records. It needs no configuration, so it serves even when no OAuth
// app is configured.
//
// The signature is checked as the body streams through SCMWebhookCheck
// rather than with go-github's ValidatePayload: that reads the whole body
// into memory first, while the core reads an unauthenticated body with at
// most a bounded part of it in memory (the rest spooled to a file) and only
// loads it once it is known to be signed. The check is the same HMAC-SHA256
// compared in constant time.
type Webhooks struct{}

var _ ports.SCMWebhooks = Webhooks{}

// signaturePrefix starts an X-Hub-Signature-256 value, "sha256=<hex>".
const signaturePrefix = "sha256="

// formPayloadField is the form field holding the JSON of a delivery sent as
// application/x-www-form-urlencoded.
const formPayloadField = "payload"

var errBadSignature = &ports.Error{Kind: ports.KindUnauthenticated, Message: "the X-Hub-Signature-256 signature does not match the body"}

// CheckWebhook implements ports.SCMWebhooks.
func (Webhooks) CheckWebhook(signature, contentType string, secret []byte) (ports.SCMWebhookCheck, error) {
	if signature == "" {
		return nil, &ports.Error{Kind: ports.KindUnauthenticated, Message: "the X-Hub-Signature-256 signature is missing"}
	}
	sig, ok := parseSignature(signature)
	if !ok {
		return nil, errBadSignature
	}
	form, err := isForm(contentType)
	if err != nil {
		return nil, err
	}
	return &check{mac: hmac.New(sha256.New, secret), sig: sig, form: form}, nil
}

// check is one delivery's SCMWebhookCheck.
type check struct {
	mac  hash.Hash
	sig  []byte
	form bool
}

func (c *check) Write(p []byte) (int, error) { return c.mac.Write(p) }

func (c *check) Verify() error {
	if !hmac.Equal(c.mac.Sum(nil), c.sig) {
		return errBadSignature
	}
	return nil
}

func (c *check) Payload(body []byte) ([]byte, error) {
	payload := body
	if c.form {
		var err error
		if payload, err = formPayload(body); err != nil {
			return nil, err
		}
	}
	if !json.Valid(payload) {
		return nil, &ports.Error{Kind: ports.KindMalformed, Message: "the webhook payload is not JSON"}
	}
	return payload, nil
}

// parseSignature returns the HMAC of an X-Hub-Signature-256 value,
// "sha256=<64 hex digits>".
func parseSignature(sig string) ([]byte, bool) {
	h, ok := strings.CutPrefix(sig, signaturePrefix)
	if !ok || len(h) != hex.EncodedLen(sha256.Size) {
		return nil, false
	}
	got, err := hex.DecodeString(h)
	return got, err == nil
}

// isForm reports whether a delivery's Content-Type is a form rather than
// JSON (none is JSON); any other type is unsupported_media_type.
func isForm(contentType string) (bool, error) {
	if strings.TrimSpace(contentType) == "" {
		return false, nil
	}
	mt, _, err := mime.ParseMediaType(contentType)
	switch {
	case err != nil:
	case mt == "application/json":
		return false, nil
	case mt == "application/x-www-form-urlencoded":
		return true, nil
	}
	return false, &ports.Error{Kind: ports.KindUnsupportedMedia,
		Message: "a webhook delivery is application/json or application/x-www-form-urlencoded, not " + ports.Quote(contentType)}
}

// formPayload is the JSON in the "payload" field of a form body.
func formPayload(body []byte) ([]byte, error) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, &ports.Error{Kind: ports.KindMalformed, Message: "the webhook body is not a form: " + ports.Quote(err.Error())}
	}
	p, ok := form[formPayloadField]
	if !ok || len(p) != 1 {
		f := ports.FieldError{Field: formPayloadField, Reason: "required once: the JSON payload"}
		return nil, &ports.Error{Kind: ports.KindMalformed, Message: "malformed request (" + f.Field + ": " + f.Reason + ")", Fields: []ports.FieldError{f}}
	}
	return []byte(p[0]), nil
}

// The payloads are decoded into the few fields devpilot reads, not with
// go-github's ParseWebHook: its event types decode every field strictly,
// and GitHub's own payloads do not always match them (a push's or an
// organisation repository's "organization" is a login string where
// go-github expects an object), so a genuine delivery would fail. Fields
// devpilot does not read are tolerated, whatever they hold.

// common is what every recorded event carries: the action, which
// repository, and who.
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

func (c common) event(kind string) *ports.SCMWebhookEvent {
	e := &ports.SCMWebhookEvent{Kind: kind, Action: c.Action}
	if c.Repository != nil {
		e.RepoID, e.RepoURL = c.Repository.ID, c.Repository.HTMLURL
	}
	if c.Sender != nil {
		e.Actor = c.Sender.Login
	}
	return e
}

type pushPayload struct {
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

type pullPayload struct {
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

type refPayload struct {
	common
	Ref     string `json:"ref"`
	RefType string `json:"ref_type"`
}

type releasePayload struct {
	common
	Release *struct {
		TagName string `json:"tag_name"`
		HTMLURL string `json:"html_url"`
	} `json:"release"`
}

type commentPayload struct {
	common
	Issue *struct {
		Number int `json:"number"`
	} `json:"issue"`
	Comment *struct {
		HTMLURL string `json:"html_url"`
	} `json:"comment"`
}

// ParseWebhook implements ports.SCMWebhooks for the events devpilot
// records: push, pull_request, create, delete, release and issue_comment.
func (Webhooks) ParseWebhook(event string, payload []byte) (*ports.SCMWebhookEvent, error) {
	var v any
	switch event {
	case "push":
		v = &pushPayload{}
	case "pull_request":
		v = &pullPayload{}
	case "create", "delete":
		v = &refPayload{}
	case "release":
		v = &releasePayload{}
	case "issue_comment":
		v = &commentPayload{}
	default:
		return nil, nil
	}
	if err := json.Unmarshal(payload, v); err != nil {
		return nil, ports.Wrap(ports.KindMalformed, err, fmt.Sprintf("%s payload cannot be read: %v", event, err))
	}
	var e *ports.SCMWebhookEvent
	switch p := v.(type) {
	case *pushPayload:
		e = p.event(event)
		e.Ref, e.Created, e.Deleted, e.Forced = p.Ref, p.Created, p.Deleted, p.Forced
		e.Compare, e.After, e.Commits = p.Compare, p.After, len(p.Commits)
		if p.Head != nil {
			e.HeadCommit = p.Head.ID
		}
	case *pullPayload:
		e = p.event(event)
		e.Number = p.Number
		if pr := p.PullRequest; pr != nil {
			e.HasPull = true
			if e.Number == 0 {
				e.Number = pr.Number
			}
			e.Title, e.URL, e.Merged = pr.Title, pr.HTMLURL, pr.Merged
			if pr.Head != nil {
				e.Ref = pr.Head.Ref
			}
		}
	case *refPayload:
		e = p.event(event)
		e.Ref, e.RefType = p.Ref, p.RefType
	case *releasePayload:
		e = p.event(event)
		if r := p.Release; r != nil {
			e.HasRelease, e.Ref, e.URL = true, r.TagName, r.HTMLURL
		}
	case *commentPayload:
		e = p.event(event)
		if p.Issue != nil {
			e.HasIssue, e.Number = true, p.Issue.Number
		}
		if p.Comment != nil {
			e.URL = p.Comment.HTMLURL
		}
	}
	return e, nil
}
