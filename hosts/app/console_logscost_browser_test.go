package app_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/sandbox"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeaws"
)

// TestConsoleLogsAndCosts follows a service's log in the console (a line
// the fake AWS gets later appears; a filter applies; Pause stops), then
// looks at costs by region beside the previous period, with the month's
// forecast, and downloads them as CSV; at 1440 and 390 px wide.
func TestConsoleLogsAndCosts(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := startBrowser(t, d, 1440, 900)
			b.signInDemo()
			aws := b.h.sb.AWS().Account(sandbox.AWSAccountID)

			// Logs: open production/checkout's log and follow it.
			b.goTo("#/cloud/containers/production")
			checkout := `article.service[data-service="checkout"]`
			b.waitFor("the services of production", `document.querySelector('`+checkout+` details.svc-logs')`, 20*time.Second)
			b.click(checkout + " details.svc-logs summary")
			b.waitFor("the newest lines", `document.querySelectorAll('`+checkout+` pre.log .log-line').length > 0`, 15*time.Second)
			before := eval[int](b, `document.querySelectorAll('`+checkout+` pre.log .log-line').length`)
			b.click(checkout + " button.log-follow")
			b.waitFor("following", `document.querySelector('`+checkout+` button.log-follow').getAttribute('aria-pressed') === 'true' && document.querySelectorAll('`+checkout+` pre.log .log-line').length === `+itoa(before), 15*time.Second)
			aws.LogEvents("/ecs/production/checkout", "ecs/checkout/f0110w", fakeaws.LogEvent{Timestamp: time.Now(), Message: "POST /cart 201 followed-line"})
			b.waitFor("the new line", `[...document.querySelectorAll('`+checkout+` pre.log .log-line')].some(l => l.textContent.includes('followed-line'))`, 20*time.Second)
			if n := eval[int](b, `document.querySelectorAll('`+checkout+` pre.log .log-line').length`); n != before+1 {
				t.Fatalf("%d lines after one new one, %d before (a line repeated?)", n, before)
			}
			b.do(chromedp.ScrollIntoView(chromedp.CSS(checkout + " details.svc-logs")))
			b.readmeShot("cloud-logs-follow")
			b.look("logs-1440-" + string(d))

			// A filter restarts the follow with CloudWatch's pattern.
			b.typeInto(checkout+" input.log-filter", "followed-line")
			b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('` + checkout + ` form.log-bar').requestSubmit()`))
			b.waitFor("the filtered lines", `(ls => ls.length === 1 && ls[0].textContent.includes('followed-line'))(document.querySelectorAll('`+checkout+` pre.log .log-line'))`, 20*time.Second)
			aws.LogEvents("/ecs/production/checkout", "ecs/checkout/f0110w",
				fakeaws.LogEvent{Timestamp: time.Now(), Message: "GET /health 200 unfiltered"},
				fakeaws.LogEvent{Timestamp: time.Now(), Message: "POST /cart 500 followed-line again"})
			b.waitFor("the next filtered line", `[...document.querySelectorAll('`+checkout+` pre.log .log-line')].some(l => l.textContent.includes('again'))`, 20*time.Second)
			if eval[bool](b, `document.querySelector('`+checkout+` pre.log').textContent.includes('unfiltered')`) {
				t.Fatal("a line the filter leaves out is shown")
			}
			b.click(checkout + " button.log-follow")
			b.waitFor("paused", `document.querySelector('`+checkout+` button.log-follow').textContent === 'Follow'`, 10*time.Second)

			// Costs by region with the previous period and the forecast.
			b.goTo("#/cloud/costs")
			b.waitFor("the costs form", `document.querySelector('select[name=group_by] option[value=REGION]')`, 20*time.Second)
			b.do(chromedp.SetValue(chromedp.CSS(`select[name=group_by]`), "REGION"))
			b.click("#costs-show")
			b.waitFor("costs by region", `document.querySelector('#costs-compare tbody tr[data-key="eu-west-1"]') && document.querySelector('#costs-previous') && document.querySelector('#costs-forecast')`, 20*time.Second)
			rows := eval[[]string](b, `[...document.querySelectorAll('#costs-compare tbody tr')].map(r => r.dataset.key)`)
			if strings.Join(rows, ",") != "eu-west-1,us-east-1" {
				t.Fatalf("regions %v", rows)
			}
			if cells := eval[int](b, `document.querySelectorAll('#costs-compare tbody tr:first-child td').length`); cells != 3 {
				t.Fatalf("%d cells (this period, previous, change) in a region's row", cells)
			}
			if f := b.text("#costs-forecast"); !strings.Contains(f, "Forecast") || !strings.Contains(f, "month") {
				t.Fatalf("forecast line %q", f)
			}
			// The table's period column does not wrap.
			if ws := eval[string](b, `getComputedStyle(document.querySelector('.cost-table tbody th')).whiteSpace`); ws != "nowrap" {
				t.Fatalf("the date column's white-space is %q", ws)
			}
			b.readmeShot("cloud-costs-by-region")
			b.look("costs-1440-" + string(d))

			// A tag key groups by tag.
			b.do(chromedp.SetValue(chromedp.CSS(`select[name=group_by]`), "TAG"),
				chromedp.Evaluate[chromedp.Void](`document.querySelector('select[name=group_by]').dispatchEvent(new Event('change'))`))
			b.typeInto("input[name=tag_key]", "team")
			b.click("#costs-show")
			b.waitFor("costs by team", `document.querySelector('#costs-compare tbody tr[data-key="payments"]')`, 20*time.Second)

			// Download CSV: fetched with the token, saved through a Blob.
			b.do(chromedp.Evaluate[chromedp.Void](`(() => {
				window.__saved = [];
				const create = URL.createObjectURL;
				URL.createObjectURL = (blob) => { window.__blob = blob; return create.call(URL, blob); };
				HTMLAnchorElement.prototype.click = function () {
					const blob = window.__blob, name = this.download;
					blob.text().then((text) => window.__saved.push({ name, type: blob.type, text }));
				};
			})()`))
			b.click("#costs-csv")
			b.waitFor("the CSV to save", `window.__saved.length === 1`, 15*time.Second)
			var saved struct{ Name, Type, Text string }
			if err := json.Unmarshal([]byte(eval[string](b, `JSON.stringify(window.__saved[0])`)), &saved); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(saved.Name, "costs-") || !strings.HasSuffix(saved.Name, "-by-tag_team.csv") || !strings.HasPrefix(saved.Type, "text/csv") ||
				!strings.HasPrefix(saved.Text, "row,start_date,end_date,group,amount,currency,previous,change,change_percent\n") ||
				!strings.Contains(saved.Text, ",payments,") || !strings.Contains(saved.Text, "\nforecast,") {
				t.Fatalf("saved %s (%s):\n%.400s", saved.Name, saved.Type, saved.Text)
			}

			// Phone width: nothing off-screen.
			b.do(chromedp.EmulateViewport(390, 844))
			b.do(chromedp.SetValue(chromedp.CSS(`select[name=group_by]`), "REGION"),
				chromedp.Evaluate[chromedp.Void](`document.querySelector('select[name=group_by]').dispatchEvent(new Event('change'))`))
			b.click("#costs-show")
			b.waitFor("costs by region again", `document.querySelector('#costs-compare tbody tr[data-key="eu-west-1"]')`, 20*time.Second)
			b.noneOffScreen("costs by region")
			// A table's caption wraps inside the table's scrolling box
			// rather than running out of view with the wide rows.
			if bad := eval[string](b, `[...document.querySelectorAll('#main table.cost-table')].filter(t => t.caption && t.caption.getBoundingClientRect().right > t.getBoundingClientRect().right + 1).map(t => t.caption.textContent).join('; ')`); bad != "" {
				t.Errorf("at 390 px a cost table's caption runs out of its box: %s", bad)
			}
			b.look("costs-390-" + string(d))
			b.goTo("#/cloud/containers/production")
			// (Opened until it shows lines: the list may be drawn again as it loads.)
			b.waitFor("the newest lines", `(d => d && (d.open = true) && d.querySelectorAll('pre.log .log-line').length > 0)(document.querySelector('`+checkout+` details.svc-logs'))`, 20*time.Second)
			b.noneOffScreen("a service's log")
			b.do(chromedp.ScrollIntoView(chromedp.CSS(checkout + " details.svc-logs")))
			b.look("logs-390-" + string(d))
		})
	}
}
