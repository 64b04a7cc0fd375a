package content

import (
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/devpilot/devpilot/ports"
)

// Codes of the errors of approving and publishing an item with brand
// findings, set as ports.Error.Code.
const (
	// CodeBrandFindings (conflict): the item's latest brand checks have
	// findings; approving or publishing it needs an override with a reason.
	CodeBrandFindings = "brand_findings"
	// CodeBannedWords (conflict): the item uses a banned word and its brand
	// makes banned words blocking; no override helps.
	CodeBannedWords = "banned_words"
)

// Bounds of the texts of publishing.
const (
	// MinOverrideReasonLen and MaxOverrideReasonLen bound, in characters, the
	// reason of an override of brand findings.
	MinOverrideReasonLen = 3
	MaxOverrideReasonLen = 500
	// MaxPublishedURLLen bounds the URL of an item published elsewhere.
	MaxPublishedURLLen = 2048
)

// checkOverrideReason trims an override's reason and adds to f why it is
// not one, under field.
func checkOverrideReason(f *fieldErrors, field, reason string) string {
	reason = strings.TrimSpace(reason)
	if n := utf8.RuneCountInString(reason); n < MinOverrideReasonLen || n > MaxOverrideReasonLen {
		f.add(field, fmt.Sprintf("must be %d to %d characters", MinOverrideReasonLen, MaxOverrideReasonLen))
	}
	return reason
}

// checkPublishedURL trims the URL of an item published elsewhere and adds
// to f why it is not one: an absolute http or https URL of at most
// MaxPublishedURLLen bytes, without credentials.
func checkPublishedURL(f *fieldErrors, raw string) string {
	raw = strings.TrimSpace(raw)
	if len(raw) > MaxPublishedURLLen {
		f.add("published_url", fmt.Sprintf("must be at most %d characters", MaxPublishedURLLen))
		return raw
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "":
		f.add("published_url", "must be an absolute http or https URL")
	case u.User != nil:
		f.add("published_url", "must not hold credentials")
	}
	return raw
}

// needURL is the error of a move to published without a URL.
func needURL(id string) error {
	return ports.Invalid(fmt.Sprintf("content item %s is not published by a status change alone: publish it through a target (POST /content/%s/publish with a target_id), or give the URL where it was published elsewhere as published_url", id, id),
		ports.FieldError{Field: "published_url", Reason: "required to mark the item as published elsewhere; or publish it through a target"})
}

// gate decides whether an item with the brand findings checks may be
// approved or published (what says which, for messages): without findings
// it may, and no override is recorded (nil); with a banned word under a
// brand that makes banned words blocking it may not (conflict,
// banned_words); with other findings only by an override, whose reason is
// then returned as recorded by userID at now; without one it is a conflict
// (brand_findings) listing the findings in its message and fields.
func gate(b ports.Brand, checks []ports.ContentCheck, itemID, what, reason, userID string, now time.Time) (*ports.ContentOverride, error) {
	if len(checks) == 0 {
		return nil, nil
	}
	list := make([]string, len(checks))
	fields := make([]ports.FieldError, len(checks))
	var banned []string
	for i, c := range checks {
		list[i] = c.Message
		fields[i] = ports.FieldError{Field: fmt.Sprintf("checks[%d]", i), Reason: c.Kind + ": " + c.Message}
		if c.Kind == CheckBannedWord {
			banned = append(banned, fmt.Sprintf("%q", c.Term))
		}
	}
	if b.BannedWordsBlocking && len(banned) > 0 {
		return nil, &ports.Error{Kind: ports.KindConflict, Code: CodeBannedWords, Fields: fields,
			Message: fmt.Sprintf("content item %s cannot be %s: it uses the banned %s %s, and the brand makes banned words blocking; edit them out first",
				itemID, what, plural(len(banned), "word"), strings.Join(banned, ", "))}
	}
	if reason == "" {
		return nil, &ports.Error{Kind: ports.KindConflict, Code: CodeBrandFindings, Fields: fields,
			Message: fmt.Sprintf("content item %s has brand findings (%s); to have it %s anyway, give override.reason (%d to %d characters)",
				itemID, strings.Join(list, "; "), what, MinOverrideReasonLen, MaxOverrideReasonLen)}
	}
	return &ports.ContentOverride{Reason: reason, By: userID, At: now}, nil
}
