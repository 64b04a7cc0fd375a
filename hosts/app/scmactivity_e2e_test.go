package app_test

import (
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/sandbox/fakegithub"
)

// TestSCMActivityURLsAreWebURLs: a signed delivery whose links are
// javascript: URLs becomes activity whose url is empty in the API; a
// delivery's http(s) links are kept.
func TestSCMActivityURLsAreWebURLs(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startSCMStack(t, string(d))
			octo := st.gh.AddUser("octo-alice", 101)
			api := st.gh.AddRepo("octo-alice", "api")
			alice := st.token("alice@example.com")
			st.connect(alice, "octo-alice")
			var repoID string
			for _, r := range list[repoJSON](st, alice, "/scm/repos").Items {
				if r.FullName == "octo-alice/api" {
					repoID = r.ID
				}
			}
			if repoID == "" {
				t.Fatal("octo-alice/api is not connected")
			}

			hostile := api.Hook()
			hostile.WebURL = "javascript:alert(document.domain)//"
			st.wantDelivered(fakegithub.NewEventDelivery(fakegithub.ReleaseEvent{Repo: hostile, Sender: octo.Hook(), TagName: "v6.6.6"}).Signed(scmWebhookSecret), "accepted")
			st.wantDelivered(fakegithub.NewEventDelivery(fakegithub.ReleaseEvent{Repo: api.Hook(), Sender: octo.Hook(), TagName: "v1.0.0"}).Signed(scmWebhookSecret), "accepted")
			bad, good := "octo-alice published release v6.6.6", "octo-alice published release v1.0.0"
			for _, a := range st.waitActivity(alice, repoID, bad, good) {
				switch a.Summary {
				case bad:
					if a.URL != "" {
						t.Errorf("the javascript: release link is in the API: %+v", a)
					}
				case good:
					if a.URL != st.gh.URL()+"/octo-alice/api/releases/tag/v1.0.0" {
						t.Errorf("the release link was not kept: %+v", a)
					}
				}
			}
		})
	}
}
