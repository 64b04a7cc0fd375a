package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
)

// apiGet calls the sandbox's API as the demo user and decodes the answer.
func (b *browser) apiGet(path string, out any) {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.base+path, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+b.h.sb.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.t.Fatalf("GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		b.t.Fatalf("GET %s: %v", path, err)
	}
}

// click clicks the first visible element sel matches.
func (b *browser) click(sel string) {
	b.t.Helper()
	b.do(chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
}

// typeInto replaces the value of the control sel with s, as typed (so
// input events fire).
func (b *browser) typeInto(sel, s string) {
	b.t.Helper()
	q, _ := json.Marshal(sel)
	b.do(chromedp.WaitVisible(chromedp.CSS(sel)),
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf("document.querySelector(%s).value = ''", q)),
		chromedp.SendKeys(chromedp.CSS(sel), s))
}

// amountText is how an amount appears in a label once thousands
// separators are dropped: with two decimals.
var thousands = regexp.MustCompile(`(\d),(\d{3})`)

func plainAmounts(s string) string {
	for thousands.MatchString(s) {
		s = thousands.ReplaceAllString(s, "$1$2")
	}
	return s
}

// TestConsoleCloud walks the Cloud page: the costs chart (one mark per
// service per period, each labelled, checked against the API), scaling a
// service through its dialog (and the audit entry it leaves), a dry-run
// invoke, and deploying the Amplify app and reading a build's steps.
func TestConsoleCloud(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := startBrowser(t, d)
			b.signInDemo()
			acct := b.h.sb.CloudAccountID()

			// Costs: the chart has one rect per service per period, as
			// the API answers for the same range.
			b.goTo("#/cloud/costs")
			b.waitFor("the costs chart", `document.querySelector('svg.cost-chart g.period rect.mark')`, 20*time.Second)
			start := eval[string](b, `document.querySelector('input[name=start_date]').value`)
			end := eval[string](b, `document.querySelector('input[name=end_date]').value`)
			var costs struct {
				Currency string  `json:"currency"`
				Total    float64 `json:"total"`
				Periods  []struct {
					Start  string `json:"start"`
					Groups []struct {
						Key    string  `json:"key"`
						Amount float64 `json:"amount"`
					} `json:"groups"`
				} `json:"periods"`
			}
			b.apiGet("/api/v1/cloud/costs?"+url.Values{"account_id": {acct}, "start_date": {start}, "end_date": {end},
				"granularity": {"DAILY"}, "group_by": {"SERVICE"}}.Encode(), &costs)
			type mark struct{ Service, Label, Title string }
			type period struct {
				Period string
				Marks  []mark
			}
			drawn := eval[[]period](b, `[...document.querySelectorAll('svg.cost-chart g.period')].map(g => ({
				Period: g.dataset.period,
				Marks: [...g.querySelectorAll('rect.mark')].map(r => ({Service: r.dataset.service, Label: r.getAttribute('aria-label') || '',
					Title: (r.querySelector('title') || {}).textContent || ''}))}))`)
			if len(drawn) != len(costs.Periods) || len(drawn) == 0 {
				t.Fatalf("%d periods drawn, the API has %d for %s..%s", len(drawn), len(costs.Periods), start, end)
			}
			for i, p := range costs.Periods {
				got := drawn[i]
				if got.Period != p.Start || len(got.Marks) != len(p.Groups) {
					t.Errorf("period %s: %d marks drawn (period %q), the API has %d services", p.Start, len(got.Marks), got.Period, len(p.Groups))
					continue
				}
				byService := map[string]mark{}
				for _, m := range got.Marks {
					byService[m.Service] = m
				}
				for _, g := range p.Groups {
					m, ok := byService[g.Key]
					want := fmt.Sprintf("%.2f", g.Amount)
					if !ok || !strings.Contains(m.Title, g.Key) || !strings.Contains(plainAmounts(m.Title), want) || m.Label != m.Title {
						t.Errorf("period %s, service %s (%s): mark %+v", p.Start, g.Key, want, m)
					}
				}
			}
			if total := plainAmounts(b.text("#costs-total")); !strings.Contains(total, fmt.Sprintf("%.2f", costs.Total)) {
				t.Errorf("total shown %q, the API says %.2f", total, costs.Total)
			}
			if n := eval[int](b, `document.querySelectorAll('.legend li').length`); n != 6 {
				t.Errorf("legend has %d services, want the sandbox's 6", n)
			}
			b.readmeShot("costs")

			// Containers: scale production/checkout to 4 through the
			// dialog; a scale to 0 is refused without the extra confirmation.
			b.goTo("#/cloud/containers/production")
			checkout := `article.service[data-service="checkout"]`
			b.waitFor("the services of production", `document.querySelector('`+checkout+` .desired')`, 20*time.Second)
			if got := b.text(checkout + " .desired"); got != "3" {
				t.Errorf("checkout desired %q, want the sandbox's 3", got)
			}
			b.readmeShot("containers")
			b.click(checkout + ` button[data-action="scale"]`)
			b.waitFor("the scale dialog", `document.querySelector('#scale-dialog[open]') && document.activeElement.name === 'desired_count'`, 10*time.Second)
			b.typeInto(`#scale-dialog input[name=desired_count]`, "0")
			b.waitFor("the scale-to-zero box", `!document.querySelector('#scale-dialog .check').hidden`, 5*time.Second)
			b.click(`#scale-dialog button[type=submit]`)
			b.waitFor("the refusal of 0", `document.querySelector('#scale-dialog .error')`, 10*time.Second)
			b.typeInto(`#scale-dialog input[name=desired_count]`, "4")
			b.click(`#scale-dialog button[type=submit]`)
			b.waitFor("the dialog to close", `!document.querySelector('#scale-dialog')`, 15*time.Second)
			b.waitFor("the new desired count", `document.querySelector('`+checkout+` .desired')?.textContent === '4'`, 15*time.Second)
			if !eval[bool](b, `document.activeElement.dataset.action === 'scale'`) {
				t.Errorf("focus is not back on the Scale button")
			}
			var svcs struct {
				Items []struct {
					Name         string `json:"name"`
					DesiredCount int    `json:"desired_count"`
				} `json:"items"`
			}
			b.apiGet("/api/v1/infrastructure/containers/clusters/production/services", &svcs)
			for _, s := range svcs.Items {
				if s.Name == "checkout" && s.DesiredCount != 4 {
					t.Errorf("the API says checkout wants %d tasks", s.DesiredCount)
				}
			}

			// Deploy forces a new deployment: checkout has two.
			// Clicked as a script: the scale's toast may still cover the button.
			b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('` + checkout + ` button[data-action="deploy"]').click()`))
			b.waitFor("the deploy dialog", `document.querySelector('#deploy-dialog[open]')`, 10*time.Second)
			b.click(`#deploy-dialog button[type=submit]`)
			b.waitFor("the new deployment", `document.querySelector('`+checkout+`').textContent.includes('Deployments (2)')`, 15*time.Second)

			// The audit log shows the scale.
			b.goTo("#/cloud/audit")
			b.waitFor("the audit entry", `[...document.querySelectorAll('table.audit tr[data-action="ecs.scale_service"]')].some(r => r.textContent.includes('production/checkout'))`, 15*time.Second)

			// Functions: bad JSON is caught before sending; a dry run of
			// send-receipt answers 204.
			b.goTo("#/cloud/functions/send-receipt")
			b.waitFor("the invoke form", `document.querySelector('#invoke-button') && document.querySelector('#function-title')?.textContent === 'send-receipt'`, 15*time.Second)
			b.typeInto(`textarea[name=payload]`, `{"order_id": `)
			b.click(`#invoke-button`)
			b.waitFor("the JSON error", `document.querySelector('#payload-error').textContent.startsWith('Not valid JSON')`, 5*time.Second)
			if eval[bool](b, `Boolean(document.querySelector('#invoke-out'))`) {
				t.Errorf("an invalid payload was sent")
			}
			b.typeInto(`textarea[name=payload]`, `{"order_id": "ord_1042"}`)
			b.click(`#invoke-dry-run`)
			b.click(`#invoke-button`)
			b.waitFor("the dry run's answer", `document.querySelector('#invoke-out')`, 15*time.Second)
			if out := b.text("#invoke-out"); !strings.Contains(out, "Dry run") || !strings.Contains(out, "204") {
				t.Errorf("dry run shows %q", out)
			}

			// Apps: deploy storefront through the dialog; its build shows.
			b.goTo("#/cloud/apps")
			app := `article.app[data-app="d1storefront42"]`
			b.waitFor("the storefront app", `document.querySelector('`+app+` button[data-action="deploy"]')`, 15*time.Second)
			b.click(app + ` button[data-action="deploy"]`)
			b.waitFor("the deploy dialog", `document.querySelector('#app-deploy-dialog[open]')`, 10*time.Second)
			b.click(`#app-deploy-dialog button[type=submit]`)
			b.waitFor("the new build", `document.querySelector('`+app+` section.build .build-status .badge')?.textContent.length > 1`, 15*time.Second)
			buildID := eval[string](b, `document.querySelector('`+app+` section.build').dataset.build`)
			if h := eval[string](b, `location.hash`); h != "#/cloud/apps/d1storefront42/"+buildID {
				t.Errorf("the build's address is %q", h)
			}
			var build struct {
				Status string `json:"status"`
			}
			b.apiGet("/api/v1/deployments/apps/d1storefront42/builds/"+url.PathEscape(buildID)+"/logs", &build)
			if got := b.text(app + " section.build .build-status .badge"); got != build.Status {
				t.Errorf("build %s shows status %q, the API says %q", buildID, got, build.Status)
			}
			// The sandbox's Amplify leaves a new build pending, without
			// steps: its finished build 12 shows its steps and their logs.
			b.waitFor("build 12 in main's builds", `document.querySelector('`+app+` .branch-builds-list tr[data-build="12"] button')`, 15*time.Second)
			b.click(app + ` .branch-builds-list tr[data-build="12"] button[data-action="open-build"]`)
			b.waitFor("build 12's steps", `document.querySelectorAll('`+app+` section.build[data-build="12"] .step-list li').length === 3`, 15*time.Second)
			b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('` + app + ` section.build[data-build="12"] .step-list li:first-child details').open = true`))
			if log := b.text(app + ` section.build[data-build="12"] .step-list li:first-child pre`); !strings.Contains(log, "npm ci") {
				t.Errorf("BUILD step log %q", log)
			}

			// Accounts: test the demo account's connection; add a read-only
			// account that assumes a role with the org's external id, then
			// delete it through the dialog.
			b.goTo("#/cloud/accounts")
			demo := `article.account[data-account="` + acct + `"]`
			b.waitFor("the demo account", `document.querySelector('`+demo+` button[data-action="test"]')`, 15*time.Second)
			b.click(demo + ` button[data-action="test"]`)
			b.waitFor("the test's answer", `document.querySelector('`+demo+` .test-out .ok-line')`, 15*time.Second)
			if got := b.text(demo + " .test-out"); !strings.Contains(got, "Connected") || !strings.Contains(got, " ms") {
				t.Errorf("test connection shows %q", got)
			}
			var ext struct {
				ExternalID string `json:"external_id"`
			}
			b.apiGet("/api/v1/cloud/external-id", &ext)
			b.click(`.add-account-box summary`)
			b.waitFor("the org's external id", `document.querySelector('input[name=external_id]').value === '`+ext.ExternalID+`'`, 10*time.Second)
			b.typeInto(`input[name=name]`, "ops-readonly")
			b.typeInto(`input[name=role_arn]`, "arn:aws:iam::210987654321:role/devpilot")
			b.click(`#acct-read-only`)
			b.click(`form.add-account button[type=submit]`)
			added := `[...document.querySelectorAll('article.account')].find(a => a.querySelector('h3').textContent === 'ops-readonly')`
			b.waitFor("the new account", added+`?.querySelector('.read-only')`, 15*time.Second)
			if got := eval[string](b, added+`.textContent`); !strings.Contains(got, ext.ExternalID) || !strings.Contains(got, "untested") {
				t.Errorf("the new account shows %q", got)
			}
			b.do(chromedp.Evaluate[chromedp.Void](added + `.querySelector('button[data-action="delete"]').click()`))
			b.waitFor("the delete dialog", `document.querySelector('#delete-account-dialog[open]')`, 10*time.Second)
			if got := eval[string](b, `document.activeElement.textContent`); got != "Cancel" {
				t.Errorf("the delete dialog opens with focus on %q, want Cancel (Enter alone must not delete)", got)
			}
			b.click(`#delete-account-dialog button[type=submit]`)
			b.waitFor("the account to go", `!(`+added+`) && document.querySelector('`+demo+`')`, 15*time.Second)

			// At 390 px wide the costs page fits without scrolling sideways.
			b.do(chromedp.EmulateViewport(390, 844))
			b.goTo("#/cloud/costs")
			b.waitFor("the narrow chart", `document.querySelector('svg.cost-chart g.period rect.mark')`, 20*time.Second)
			if w := eval[int](b, `document.documentElement.scrollWidth - window.innerWidth`); w > 0 {
				t.Errorf("the costs page is %d px wider than a 390 px screen", w)
			}
		})
	}
}
