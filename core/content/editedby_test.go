package content_test

import (
	"testing"

	"github.com/devpilot/devpilot/core/content"
	"github.com/devpilot/devpilot/ports"
)

// An item whose title or body a person changes records who (id and email);
// a move of its status or a change of its format alone does not; a later
// edit by another names them instead.
func TestEditedBy(t *testing.T) {
	t.Parallel()
	e := newEnv(t, content.Config{})
	it := e.seedItem(alice, ports.ContentDraft, func(it *ports.ContentItem) { it.Model = "gpt-4o-mini" })

	moved, err := e.svc.UpdateItem(as(bob), it.ID, content.UpdateInput{Version: it.Version, Status: ptr(ports.ContentInReview), Format: ptr("post")})
	if err != nil {
		t.Fatal(err)
	}
	if moved.EditedBy != "" || moved.EditedByName != "" {
		t.Errorf("a move and a format change recorded an editor: %q %q", moved.EditedBy, moved.EditedByName)
	}
	edited, err := e.svc.UpdateItem(as(bob), it.ID, content.UpdateInput{Version: moved.Version, Body: ptr("Rewritten by hand.")})
	if err != nil {
		t.Fatal(err)
	}
	if edited.EditedBy != bob.UserID || edited.EditedByName != "user-bob@example.com" || edited.Model != "gpt-4o-mini" {
		t.Errorf("after bob's edit: by %q (%q), model %q", edited.EditedBy, edited.EditedByName, edited.Model)
	}
	if got := e.mustItem(it.ID); got.EditedBy != bob.UserID || got.EditedByName != "user-bob@example.com" {
		t.Errorf("stored editor %q (%q)", got.EditedBy, got.EditedByName)
	}
	same, err := e.svc.UpdateItem(as(alice), it.ID, content.UpdateInput{Version: edited.Version, Title: ptr(it.Title), Body: ptr(edited.Body)})
	if err != nil {
		t.Fatal(err)
	}
	if same.EditedBy != bob.UserID {
		t.Errorf("an update that changed no text named %q the editor", same.EditedBy)
	}
	retitled, err := e.svc.UpdateItem(as(alice), it.ID, content.UpdateInput{Version: same.Version, Title: ptr("Retitled")})
	if err != nil {
		t.Fatal(err)
	}
	if retitled.EditedBy != alice.UserID || retitled.EditedByName != "user-alice@example.com" {
		t.Errorf("after alice's retitle: by %q (%q)", retitled.EditedBy, retitled.EditedByName)
	}
}
