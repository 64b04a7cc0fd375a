package app_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
)

// TestConsoleCloudSafe walks issue 34's cloud you can act on safely in the
// console: production's checkout says why it runs fewer tasks than it
// wants; a large scale asks for the service's name and refuses a wrong
// one, on the Cloud page and on the assistant's approval card; Invoke asks
// first; the Apps view lists a branch's builds and opens
// one. The pages are looked at 1440 and 390 px wide (saved where
// DEVPILOT_LOOK asks).
func TestConsoleCloudSafe(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := startBrowser(t, d, 1440, 900)
			b.signInDemo()
			shot := func(name string) {
				b.do(chromedp.EmulateViewport(390, 844))
				time.Sleep(300 * time.Millisecond) // let the layout settle before the picture
				b.look(fmt.Sprintf("%s-%s-390", d, name))
				b.noneOffScreen(name)
				b.do(chromedp.EmulateViewport(1440, 900))
				b.look(fmt.Sprintf("%s-%s-1440", d, name))
			}

			// Checkout wants 3 tasks and runs 2: the card says why.
			b.goTo("#/cloud/containers/production")
			checkout := `article.service[data-service="checkout"]`
			b.waitFor("checkout's reason", `document.querySelector('`+checkout+` .why-short')`, 20*time.Second)
			if got := b.text(checkout + " .desired"); got != "3" {
				t.Errorf("checkout desired %q, want 3", got)
			}
			if why := b.text(checkout + " .why-short"); !strings.Contains(why, "1 task short") || !strings.Contains(why, "OutOfMemoryError") ||
				!strings.Contains(why, "EssentialContainerExited") {
				t.Errorf("checkout's reason reads %q", why)
			}
			if n := eval[int](b, `document.querySelectorAll('`+checkout+` .svc-events ul.events li').length`); n != 4 {
				t.Errorf("checkout lists %d events, want the sandbox's 4", n)
			}
			if eval[bool](b, `Boolean(document.querySelector('article.service[data-service="search"] .why-short'))`) {
				t.Errorf("search runs all its tasks, yet says why it is short")
			}
			b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('` + checkout + ` .svc-events').open = true`))
			shot("short")

			// Scaling payments from 2 to 24 asks for its name; a wrong one is
			// refused, and nothing changes until the right one is typed.
			payments := `article.service[data-service="payments"]`
			b.click(payments + ` button[data-action="scale"]`)
			b.waitFor("the scale dialog", `document.querySelector('#scale-dialog[open]')`, 10*time.Second)
			if !eval[bool](b, `document.querySelector('#scale-dialog .confirm-name').hidden`) {
				t.Errorf("the name is asked for before any change")
			}
			b.typeInto(`#scale-dialog input[name=desired_count]`, "24")
			b.waitFor("the name field", `!document.querySelector('#scale-dialog .confirm-name').hidden`, 5*time.Second)
			b.click(`#scale-dialog button[type=submit]`)
			b.waitFor("the refusal without a name", `document.querySelector('#scale-dialog .error')?.textContent.includes('payments')`, 10*time.Second)
			b.typeInto(`#scale-dialog input[name=confirm_name]`, "payment")
			b.click(`#scale-dialog button[type=submit]`)
			b.waitFor("the refusal of a wrong name", `document.querySelector('#scale-dialog .error')?.textContent.includes('Type the service name')`, 10*time.Second)
			shot("scale-name")
			var svcs struct {
				Items []struct {
					Name         string `json:"name"`
					DesiredCount int    `json:"desired_count"`
				} `json:"items"`
			}
			desired := func(name string) int {
				b.apiGet("/api/v1/infrastructure/containers/clusters/production/services", &svcs)
				for _, s := range svcs.Items {
					if s.Name == name {
						return s.DesiredCount
					}
				}
				return -1
			}
			if n := desired("payments"); n != 2 {
				t.Fatalf("payments wants %d tasks after refused scales", n)
			}
			// The server holds the same rule: asked without the name, it
			// answers 422 naming confirm_name, and the field shows.
			b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('#scale-dialog .confirm-name').hidden = true`))
			b.click(`#scale-dialog button[type=submit]`)
			b.waitFor("the server's refusal", `!document.querySelector('#scale-dialog .confirm-name').hidden && document.querySelector('#scale-dialog .error')?.textContent.includes('confirm_name')`, 10*time.Second)
			b.typeInto(`#scale-dialog input[name=confirm_name]`, "payments")
			b.click(`#scale-dialog button[type=submit]`)
			b.waitFor("the dialog to close", `!document.querySelector('#scale-dialog')`, 15*time.Second)
			b.waitFor("the new count", `document.querySelector('`+payments+` .desired')?.textContent === '24'`, 15*time.Second)
			if n := desired("payments"); n != 24 {
				t.Errorf("payments wants %d tasks, want 24", n)
			}

			// The assistant's large scale (search, 3 to 30) says so on its
			// approval card, which approves only once the name is typed.
			var call struct {
				SessionID      string `json:"session_id"`
				ConfirmationID string `json:"confirmation_id"`
			}
			postJSON(b, "/api/v1/voice/tool-calls", map[string]any{"name": "scale_service", "arguments": map[string]any{
				"account_id": b.h.sb.CloudAccountID(), "cluster": "production", "service": "search", "desired_count": 30}}, &call)
			if call.ConfirmationID == "" {
				t.Fatalf("voice scale_service: %+v", call)
			}
			b.goTo("#/chat/" + call.SessionID)
			card := fmt.Sprintf(`.confirm[data-confirmation-id=%q]`, call.ConfirmationID)
			b.waitFor("the large change's card", `document.querySelector('`+card+` input.confirm-name')`, 30*time.Second)
			if sum := b.text(card + " .confirm-summary"); !strings.HasPrefix(sum, "Large change: search has 3 desired tasks now") {
				t.Errorf("the approval card reads %q", sum)
			}
			if !eval[bool](b, `document.querySelector('`+card+` button.approve').disabled`) {
				t.Errorf("a large change can be approved without the name")
			}
			b.typeInto(card+` input.confirm-name`, "serch")
			if !eval[bool](b, `document.querySelector('`+card+` button.approve').disabled`) {
				t.Errorf("a wrong name enables Approve")
			}
			shot("chat-large")
			b.typeInto(card+` input.confirm-name`, "search")
			b.waitFor("Approve enabled", `!document.querySelector('`+card+` button.approve').disabled`, 5*time.Second)
			b.click(card + ` button.approve`)
			b.waitFor("the approval", `document.querySelector('`+card+`').dataset.status === 'approved'`, 30*time.Second)
			if n := desired("search"); n != 30 {
				t.Errorf("search wants %d tasks after the approval, want 30", n)
			}

			// Invoke asks first: Cancel runs nothing; Invoke in the dialog does.
			b.goTo("#/cloud/functions/resize-image")
			b.waitFor("the invoke form", `document.querySelector('#function-title')?.textContent === 'resize-image'`, 15*time.Second)
			b.click(`#invoke-button`)
			b.waitFor("the invoke dialog", `document.querySelector('#invoke-dialog[open]')`, 10*time.Second)
			shot("invoke-confirm")
			b.click(`#invoke-dialog button[value=cancel]`)
			b.waitFor("the dialog to close", `!document.querySelector('#invoke-dialog')`, 10*time.Second)
			if eval[bool](b, `Boolean(document.querySelector('#invoke-out'))`) {
				t.Fatalf("a cancelled invoke ran")
			}
			b.click(`#invoke-button`)
			b.waitFor("the invoke dialog", `document.querySelector('#invoke-dialog[open]')`, 10*time.Second)
			b.click(`#invoke-dialog button[type=submit]`)
			b.waitFor("the answer", `document.querySelector('#invoke-out')`, 15*time.Second)
			if out := b.text("#invoke-out"); !strings.Contains(out, "Invoked") || !strings.Contains(out, "resized") {
				t.Errorf("the invocation shows %q", out)
			}

			// Apps: main's builds, newest first; Open shows one, and opening
			// another replaces it.
			b.goTo("#/cloud/apps")
			app := `article.app[data-app="d1storefront42"]`
			rows := app + ` .branch-builds-list[data-branch="main"] tbody tr`
			b.waitFor("main's builds", `document.querySelectorAll('`+rows+`').length === 2`, 15*time.Second)
			if ids := eval[[]string](b, `[...document.querySelectorAll('`+rows+`')].map(r => r.dataset.build)`); strings.Join(ids, ",") != "12,11" {
				t.Errorf("builds listed %v, want 12,11", ids)
			}
			b.click(rows + `[data-build="11"] button[data-action="open-build"]`)
			b.waitFor("build 11's steps", `document.querySelectorAll('`+app+` section.build[data-build="11"] .step-list li').length === 2`, 15*time.Second)
			b.click(rows + `[data-build="12"] button[data-action="open-build"]`)
			b.waitFor("build 12's steps", `document.querySelectorAll('`+app+` section.build[data-build="12"] .step-list li').length === 3`, 15*time.Second)
			if n := eval[int](b, `document.querySelectorAll('`+app+` section.build').length`); n != 1 {
				t.Errorf("%d builds shown, want the one opened last", n)
			}
			shot("builds")
		})
	}
}
