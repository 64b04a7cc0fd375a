package app_test

import (
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
)

// The "Connect a coding agent" panel of a specification (issue 37): it
// shows devpilot's MCP server URL (the page's origin + /mcp) and how to
// add it to Claude Code, Cursor, VS Code and any MCP client, with Copy
// buttons that put the text on the clipboard; it links to the Tokens page,
// which opens its form for an agent's token; it never shows a token's
// secret; once the PRPs are generated it lists each PRP's resource URI and
// names the implement_prp prompt. Looked at 1440 and 390 px wide.
func TestConsoleMCPConnect(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := startBrowser(t, d)
			b.signInDemo()
			id := createSpec(t, b, "Gift cards", "Notes", "- Customers buy a gift card online\n- Customers redeem a gift card at checkout\n")
			b.goTo("#/specs/" + id)
			b.waitFor("the panel", `document.querySelector('#spec-connect > summary')`, 15*time.Second)
			if eval[bool](b, `document.querySelector('#spec-connect').open`) {
				t.Errorf("the panel is open before it is asked for")
			}
			b.click("#spec-connect > summary")
			url := b.base + "/mcp"
			if got := eval[string](b, `document.querySelector('#mcp-url').value`); got != url {
				t.Errorf("the MCP server URL reads %q, want %q", got, url)
			}
			claude := `claude mcp add --transport http devpilot ` + url + ` --header "Authorization: Bearer <token>"`
			if got := b.text("#mcp-claude"); got != claude {
				t.Errorf("the Claude Code command reads %q, want %q", got, claude)
			}
			// One tab per client.
			for _, c := range []struct {
				tab, sel string
				want     []string
			}{
				{"cursor", "#mcp-cursor", []string{`"mcpServers"`, `"url": "` + url + `"`, `"Authorization": "Bearer <token>"`}},
				{"vscode", "#mcp-vscode", []string{`"servers"`, `"type": "http"`, `"url": "` + url + `"`, `"Bearer ${input:devpilot-token}"`, `"password": true`}},
				{"any", ".mcp-any", []string{url, "Authorization: Bearer <token>", "/.well-known/oauth-protected-resource/mcp"}},
			} {
				b.click("#mcp-tab-" + c.tab)
				got := b.text(c.sel)
				for _, w := range c.want {
					if !strings.Contains(got, w) {
						t.Errorf("%s reads %q, want it to hold %s", c.sel, got, w)
					}
				}
				if eval[bool](b, shown("#mcp-claude")) {
					t.Errorf("the Claude Code tab still shows on the %s tab", c.tab)
				}
			}
			// The arrow keys move between the tabs.
			b.do(chromedp.Focus(chromedp.ID("mcp-tab-any")), chromedp.KeyEvent(kb.ArrowRight))
			b.waitFor("the Claude Code tab", `document.activeElement.id === 'mcp-tab-claude' && `+shown("#mcp-claude"), 5*time.Second)
			if got := b.text("#mcp-no-prps"); !strings.Contains(got, "No PRPs yet") {
				t.Errorf("before the PRPs the panel says %q", got)
			}
			// No secret: the demo user's token is nowhere in the page.
			if eval[bool](b, `document.body.innerText.includes(`+jsString(b.h.sb.Token())+`) || /dp_[A-Za-z0-9]{10}/.test(document.querySelector('#spec-connect').innerText)`) {
				t.Errorf("the page shows a token's secret")
			}

			// Copy puts the text on the clipboard.
			b.grantClipboard()
			clip := b.clipboard
			b.click("#mcp-url-copy")
			if got := clip(); got != url {
				t.Errorf("Copy of the URL put %q on the clipboard, want %q", got, url)
			}
			b.click("#mcp-claude-copy")
			if got := clip(); got != claude {
				t.Errorf("Copy of the Claude Code command put %q on the clipboard", got)
			}

			// Once the PRPs are generated, each PRP's resource is listed; the
			// open panel stays open through the redraws.
			b.waitFor("generate all offered", `(b => b && !b.disabled)(document.querySelector('#spec-generate-all'))`, 10*time.Second)
			b.do(chromedp.Click(chromedp.ID("spec-generate-all"), chromedp.NodeVisible))
			b.waitFor("the PRPs generated", `document.querySelector('.step[data-stage="prps"]').dataset.state === 'done' && document.querySelector('.spec-status-badge').dataset.status === 'ready'`, 90*time.Second)
			b.waitFor("the PRPs' resources", `document.querySelector('#mcp-prp-table tr[data-prp="PRP-1.1"]')`, 10*time.Second)
			if !eval[bool](b, `document.querySelector('#spec-connect').open`) {
				t.Errorf("the panel closed while the stages were generated")
			}
			uri := "devpilot://specs/" + id + "/prps/PRP-1.1"
			if got := b.text(`#mcp-prp-table tr[data-prp="PRP-1.1"] .mcp-uri`); got != uri {
				t.Errorf("PRP-1.1's resource reads %q, want %q", got, uri)
			}
			if got := b.text("#mcp-prps p"); !strings.Contains(got, "implement_prp") || !strings.Contains(got, "prp: PRP-1.1") || !strings.Contains(got, "session: "+id) {
				t.Errorf("what to ask reads %q", got)
			}
			if got := b.text(".mcp-resources"); !strings.Contains(got, "devpilot://specs/"+id+"/traceability") {
				t.Errorf("the resources read %q", got)
			}
			b.click(`#mcp-prp-table tr[data-prp="PRP-1.1"] button.copy`)
			if got := clip(); got != uri {
				t.Errorf("Copy of PRP-1.1's resource put %q on the clipboard", got)
			}
			// The picture: the panel above the short Inputs view.
			b.click("#spec-view-inputs")
			b.waitFor("the inputs view", `document.querySelector('.spec-inputs')`, 10*time.Second)
			clearToast(b)
			b.readmeShot("mcp-connect")
			b.lookAtWidths("mcp-connect")

			// The token link opens the Tokens page's form, named for an agent.
			b.click("#mcp-token-link")
			b.waitFor("the token form for an agent", `document.querySelector('#token-for-agent') && document.querySelector('#token-name').value === 'Coding agent (MCP)'`, 10*time.Second)
			if !eval[bool](b, `document.querySelector('#token-scope-read').checked && document.activeElement.id === 'token-name'`) {
				t.Errorf("the token form for an agent is not read only, or the keyboard is not in it")
			}
		})
	}
}

// grantClipboard lets the page read and write the clipboard, so that a
// test reads what a Copy button put there.
func (b *browser) grantClipboard() {
	b.t.Helper()
	for _, name := range []string{"clipboard-read", "clipboard-write"} {
		if _, err := chromedp.CallBrowser(b.ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
			Permission: &cdpbrowser.PermissionDescriptor{Name: name, AllowWithoutSanitization: true},
			Setting:    cdpbrowser.PermissionSettingGranted, Origin: b.base,
		}); err != nil {
			b.t.Fatalf("grant %s: %v", name, err)
		}
	}
}

// clipboard is the text on the clipboard, read by the page once the last
// copy's write has settled (the toast said so).
func (b *browser) clipboard() string {
	b.t.Helper()
	b.waitFor("the copy's toast", `document.getElementById('toast').textContent !== ''`, 10*time.Second)
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`(async () => { try { return await navigator.clipboard.readText(); } catch (e) { return 'refused: ' + e; } finally { document.getElementById('toast').textContent = ''; } })()`, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("browser: the clipboard: %v", err)
	}
	return v
}
