package content_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/core/content"
	"github.com/devpilot/devpilot/ports"
)

// auditOf returns the arguments of the last audit entry of action, or nil.
func (e *publishEnv) auditOf(action string) map[string]any {
	e.t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := len(e.audit) - 1; i >= 0; i-- {
		if e.audit[i].Action == action {
			var m map[string]any
			if err := json.Unmarshal(e.audit[i].Arguments, &m); err != nil {
				e.t.Fatal(err)
			}
			return m
		}
	}
	return nil
}

func TestMarkPublishedElsewhere(t *testing.T) {
	t.Parallel()
	long := "https://example.com/" + strings.Repeat("a", content.MaxPublishedURLLen)
	tests := []struct {
		name   string
		from   ports.ContentStatus
		status ports.ContentStatus
		url    *string
		field  string // the invalid field; "" for success
	}{
		{name: "no URL", from: ports.ContentApproved, status: ports.ContentPublished, field: "published_url"},
		{name: "not a URL", from: ports.ContentApproved, status: ports.ContentPublished, url: ptr("blog post"), field: "published_url"},
		{name: "ftp", from: ports.ContentApproved, status: ports.ContentPublished, url: ptr("ftp://example.com/x"), field: "published_url"},
		{name: "credentials", from: ports.ContentApproved, status: ports.ContentPublished, url: ptr("https://u:p@example.com/x"), field: "published_url"},
		{name: "too long", from: ports.ContentApproved, status: ports.ContentPublished, url: &long, field: "published_url"},
		{name: "URL without a move to published", from: ports.ContentInReview, status: ports.ContentApproved, url: ptr("https://example.com/x"), field: "published_url"},
		{name: "marked", from: ports.ContentApproved, status: ports.ContentPublished, url: ptr(" https://blog.example.com/launch?a=1 ")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newPublishEnv(t)
			it := e.seedItem(alice, tt.from)
			e.clock.Advance(time.Hour)
			got, err := e.svc.UpdateItem(as(bob), it.ID, content.UpdateInput{Version: it.Version, Status: ptr(tt.status), PublishedURL: tt.url})
			if tt.field != "" {
				if !errors.Is(err, ports.ErrInvalid) || !reflect.DeepEqual(fieldsOf(err), []string{tt.field}) {
					t.Fatalf("UpdateItem = %+v, %v; want invalid %s", got, err, tt.field)
				}
				if tt.url == nil && (!strings.Contains(err.Error(), "POST /content/"+it.ID+"/publish") || !strings.Contains(err.Error(), "published_url")) {
					t.Errorf("message %q does not say how to publish", err)
				}
				if e.updates() != 0 || e.auditOf("content.mark_published") != nil {
					t.Error("the item changed")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			now := e.clock.Now()
			if got.Status != ports.ContentPublished || got.PublishedURL != "https://blog.example.com/launch?a=1" ||
				got.PublishedVia != ports.PublishedViaElsewhere || got.PublishedAt == nil || !got.PublishedAt.Equal(now) || got.Override != nil {
				t.Errorf("UpdateItem = %+v", got)
			}
			if !reflect.DeepEqual(e.mustItem(it.ID), got) {
				t.Errorf("stored %+v", e.mustItem(it.ID))
			}
			if a := e.auditOf("content.mark_published"); a == nil || a["published_url"] != got.PublishedURL {
				t.Errorf("audit %v", a)
			}
		})
	}
}

func TestPublishedThroughTarget(t *testing.T) {
	t.Parallel()
	e := newPublishEnv(t)
	nt := e.webhookTarget(alice)
	it := e.seedItem(alice, ports.ContentApproved)
	if _, err := e.svc.Publish(as(alice), it.ID, nt.Target.ID, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.RunPublication(t.Context(), e.lastPublishJob(), false); err != nil {
		t.Fatal(err)
	}
	got := e.mustItem(it.ID)
	if got.Status != ports.ContentPublished || got.PublishedVia != ports.PublishedViaTarget || got.PublishedURL != "https://example.com/posts/1" {
		t.Errorf("item %s via %q at %q", got.Status, got.PublishedVia, got.PublishedURL)
	}
}

// gateAction approves or publishes an item of alice's as bob, with the
// override reason given (nil: none).
type gateAction struct {
	name string
	from ports.ContentStatus
	what string // "approved" or "published", as messages say
	do   func(e *publishEnv, it ports.ContentItem, reason *string) error
}

var gateActions = []gateAction{
	{name: "approve", from: ports.ContentInReview, what: "approved", do: func(e *publishEnv, it ports.ContentItem, reason *string) error {
		_, err := e.svc.UpdateItem(as(bob), it.ID, content.UpdateInput{Version: it.Version, Status: ptr(ports.ContentApproved), OverrideReason: reason})
		return err
	}},
	{name: "mark published", from: ports.ContentApproved, what: "published", do: func(e *publishEnv, it ports.ContentItem, reason *string) error {
		_, err := e.svc.UpdateItem(as(bob), it.ID, content.UpdateInput{Version: it.Version, Status: ptr(ports.ContentPublished),
			PublishedURL: ptr("https://example.com/x"), OverrideReason: reason})
		return err
	}},
	{name: "publish through a target", from: ports.ContentApproved, what: "published", do: func(e *publishEnv, it ports.ContentItem, reason *string) error {
		nt := e.webhookTarget(bob)
		_, err := e.svc.Publish(as(bob), it.ID, nt.Target.ID, nil, reason)
		return err
	}},
}

func TestBrandFindingsNeedAnOverride(t *testing.T) {
	t.Parallel()
	const dirty = "Cheap tools we utilize."
	tests := []struct {
		name     string
		body     string
		blocking bool
		reason   *string
		code     string // conflict code; "" for success
		field    string // invalid field
		override bool   // an override is recorded
	}{
		{name: "no findings", body: "Managers approve from their phone."},
		{name: "no findings, a reason is not recorded", body: "Managers approve from their phone.", reason: ptr("just in case")},
		{name: "findings without an override", body: dirty, code: content.CodeBrandFindings},
		{name: "findings with an override", body: dirty, reason: ptr("  Legal signed off  "), override: true},
		{name: "reason too short", body: dirty, reason: ptr(" ab "), field: "override.reason"},
		{name: "reason too long", body: dirty, reason: ptr(strings.Repeat("é", content.MaxOverrideReasonLen+1)), field: "override.reason"},
		{name: "blocking banned word, override or not", body: dirty, blocking: true, reason: ptr("Legal signed off"), code: content.CodeBannedWords},
		{name: "blocking banned word without override", body: dirty, blocking: true, code: content.CodeBannedWords},
		{name: "blocking, only a preferred term", body: "Tools we utilize.", blocking: true, reason: ptr("Legal signed off"), override: true},
		{name: "blocking, only a preferred term, no override", body: "Tools we utilize.", blocking: true, code: content.CodeBrandFindings},
	}
	for _, a := range gateActions {
		for _, tt := range tests {
			t.Run(a.name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				e := newPublishEnv(t)
				brand := e.putBrand(alice, content.BrandInput{BannedWords: []string{"cheap"},
					PreferredTerms: map[string]string{"utilize": "use"}, BannedWordsBlocking: tt.blocking})
				it := e.seedItem(alice, a.from, func(it *ports.ContentItem) {
					it.Body, it.Checks = tt.body, content.Check(brand, ports.Brief{}, it.Title, tt.body)
				})
				e.clock.Advance(time.Hour)
				err := a.do(e, it, tt.reason)
				switch {
				case tt.field != "":
					if !errors.Is(err, ports.ErrInvalid) || !reflect.DeepEqual(fieldsOf(err), []string{tt.field}) {
						t.Fatalf("%s = %v; want invalid %s", a.name, err, tt.field)
					}
				case tt.code != "":
					if !errors.Is(err, ports.ErrConflict) || errCode(err) != tt.code {
						t.Fatalf("%s = %v; want conflict %s", a.name, err, tt.code)
					}
					if !strings.Contains(err.Error(), "cannot be "+a.what) && !strings.Contains(err.Error(), "have it "+a.what+" anyway") {
						t.Errorf("message %q does not say what was refused", err)
					}
					for _, c := range it.Checks {
						if tt.code == content.CodeBrandFindings && !strings.Contains(err.Error(), c.Message) {
							t.Errorf("message %q does not list %q", err, c.Message)
						}
					}
					if len(fieldsOf(err)) != len(it.Checks) {
						t.Errorf("fields %v, want one per finding", fieldsOf(err))
					}
				case err != nil:
					t.Fatalf("%s = %v", a.name, err)
				}
				got := e.mustItem(it.ID)
				if tt.code != "" || tt.field != "" {
					if got.Version != it.Version || got.Status != it.Status || got.Override != nil {
						t.Errorf("the item changed: %+v", got)
					}
					if len(e.jobs()) != 0 {
						t.Error("a publication was queued")
					}
					return
				}
				if !tt.override {
					if got.Override != nil {
						t.Errorf("override %+v recorded", got.Override)
					}
					return
				}
				want := &ports.ContentOverride{Reason: strings.TrimSpace(*tt.reason), By: bob.UserID, At: e.clock.Now()}
				if !reflect.DeepEqual(got.Override, want) {
					t.Errorf("override %+v, want %+v", got.Override, want)
				}
				action, key := "content.override_brand_findings", "reason"
				if a.name == "publish through a target" {
					action, key = "content.publish", "override_reason"
				}
				if au := e.auditOf(action); au == nil || au[key] != want.Reason || au["findings"] == nil {
					t.Errorf("audit %s %v", action, au)
				}
			})
		}
	}
}
