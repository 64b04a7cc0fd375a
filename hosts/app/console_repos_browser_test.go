package app_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/sandbox"
	"github.com/devpilot/devpilot/hosts/sandbox/fakegithub"
)

func TestConsoleRepos(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := startBrowser(t, d)
			b.signInDemo()
			b.goTo("#/repos")

			// The sandbox's demo user is connected: its three repositories
			// are listed, and the first is open.
			b.waitFor("the repositories", `document.querySelectorAll('.repo-list a').length === 3`, 20*time.Second)
			if got := b.text(".gh-state"); !strings.Contains(got, "Connected") || !strings.Contains(got, "3 repositories") {
				t.Errorf("connection shown as %q", got)
			}

			// Open demo/storefront: its commits, pull requests and activity.
			b.do(chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll('.repo-list a')].find(a => a.textContent.includes('demo/storefront')).click()`))
			b.waitFor("storefront's commits", `document.querySelector('#repo-title')?.textContent === 'demo/storefront' &&
				[...document.querySelectorAll('#commits .commit')].some(li => li.textContent.includes('Fix currency rounding in the cart total'))`, 20*time.Second)
			b.waitFor("storefront's pull requests", `[...document.querySelectorAll('#pulls .pull')].some(li => li.textContent.includes('Add Apple Pay to the checkout page'))`, 20*time.Second)
			b.waitFor("storefront's activity", `document.querySelectorAll('#activity .activity').length > 0`, 20*time.Second)
			repoID := eval[string](b, `document.querySelector('article.repo').dataset.id`)
			if h := eval[string](b, `location.hash`); h != "#/repos/"+repoID {
				t.Errorf("location.hash = %q, want the open repository's", h)
			}

			// A signed push delivered to the webhook shows in the activity
			// feed after a refresh.
			payload, err := json.Marshal(fakegithub.PushEvent{
				Repo:   fakegithub.HookRepo{ID: sandbox.Repos()["demo/storefront"], Owner: fakegithub.HookUser{Login: "demo", ID: 1, Organization: true}, Name: "storefront"},
				Sender: fakegithub.HookUser{Login: "ana-lopez", ID: 90002},
				Ref:    "refs/heads/gift-cards",
				Commits: []fakegithub.HookCommit{{
					Message: "Sell gift cards in the storefront", AuthorName: "Ana López", AuthorEmail: "ana@example.com", AuthorLogin: "ana-lopez",
				}},
			})
			if err != nil {
				t.Fatal(err)
			}
			deliverSandboxPush(t, b.base, payload)
			// The worker records it in the background: refresh (at most
			// twice a second) until it shows.
			b.waitFor("the pushed activity", `(() => {
				const found = [...document.querySelectorAll('#activity .activity')].some(li => li.textContent.includes('gift-cards'));
				if (!found && (!window.__refreshed || Date.now() - window.__refreshed > 500)) {
					window.__refreshed = Date.now();
					document.querySelector('#activity-refresh').click();
				}
				return found;
			})()`, 30*time.Second)
			entry := b.text(`#activity .activity[data-kind="push"]`)
			if !strings.Contains(entry, "ana-lopez pushed 1 commit to gift-cards") || !strings.Contains(entry, "webhook") {
				t.Errorf("the push shows as %q", entry)
			}
			b.readmeShot("repos")

			// Commit search finds a commit, naming its repository.
			b.do(chromedp.SendKeys(chromedp.ID("commit-q"), "currency", chromedp.NodeVisible),
				chromedp.Click(chromedp.CSS(`.commit-search button[type="submit"]`)))
			b.waitFor("the search result", `[...document.querySelectorAll('#commit-results .commit')].some(li => li.textContent.includes('Fix currency rounding') && li.textContent.includes('demo/storefront'))`, 20*time.Second)

			// Reconnecting is the OAuth round trip: to the fake GitHub, which
			// approves at once, and back through the callback to #/repos.
			b.do(chromedp.Evaluate[chromedp.Void](`window.__before = 1`),
				chromedp.Click(chromedp.ID("gh-connect"), chromedp.NodeVisible))
			b.waitFor("back from GitHub", `!window.__before && location.origin === `+jsString(b.base)+` && location.hash.startsWith('#/repos') &&
				document.querySelectorAll('.repo-list a').length === 3 && document.querySelector('#toast').textContent.includes('GitHub connected')`, 30*time.Second)
		})
	}
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	raw, _ := json.Marshal(s)
	return string(raw)
}
