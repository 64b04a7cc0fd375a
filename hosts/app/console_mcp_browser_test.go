package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/app"
)

// consoleMCPServer is a live MCP server (the official Go SDK over
// Streamable HTTP) with a read-only tool, one the server does not annotate
// and a destructive one; it records the Authorization header it was sent,
// and drops every connection once gone is set.
func consoleMCPServer(t *testing.T) (*httptest.Server, *atomic.Pointer[string], *atomic.Bool) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "tracker", Version: "1.0.0"}, nil)
	type in struct {
		Query string `json:"query,omitempty"`
	}
	none := func(context.Context, *mcp.CallToolRequest, in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	}
	yes := true
	mcp.AddTool(srv, &mcp.Tool{Name: "lookup", Description: "Look an issue up by its key.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, none)
	mcp.AddTool(srv, &mcp.Tool{Name: "create_issue", Description: "Create an issue."}, none)
	mcp.AddTool(srv, &mcp.Tool{Name: "delete_issue", Description: "Delete an issue.", Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}}, none)
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	var auth atomic.Pointer[string]
	var gone atomic.Bool
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if gone.Load() {
			panic(http.ErrAbortHandler) // the connection drops with no answer
		}
		if a := r.Header.Get("Authorization"); a != "" {
			auth.Store(&a)
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	return hs, &auth, &gone
}

// The MCP page (issue 37): an admin adds a live MCP server with a header
// (its value is sent to the server, and never shown again: only its name),
// tests it, opens its tools (read-only, destructive and "needs approval" as
// the server annotated them), marks the read-only one "always confirm" and
// sees that kept after a reload, sees a test of a server that is gone fail
// in words, and deletes it after the in-page confirmation naming it. A
// member has no MCP entry in the menu and is refused at #/mcp (and by the
// API). Looked at 1440 and 390 px wide.
func TestConsoleMCPServers(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			fake, sentAuth, gone := consoleMCPServer(t)
			b := startBrowserWith(t, d, map[string]string{app.EnvPublishAllowPrivate: "1"})
			b.signInDemo()
			b.waitFor("the MCP menu entry", `document.querySelector('#nav a[href="#/mcp"]')`, 10*time.Second)
			b.goTo("#/mcp")
			b.waitFor("the empty list", `document.querySelector('#mcp-servers .empty')`, 15*time.Second)

			// A name the API would refuse is said in words before any call.
			b.typeInto("#mcp-name", "Tracker")
			b.typeInto("#mcp-url-input", fake.URL)
			b.click("#mcp-add-submit")
			b.waitFor("the refusal", `document.querySelector('#mcp-add .error')`, 10*time.Second)
			if got := b.text("#mcp-add .error"); !strings.Contains(got, "lower-case letters") {
				t.Errorf("a bad name is refused with %q", got)
			}
			if eval[bool](b, `document.activeElement.id !== 'mcp-name'`) {
				t.Errorf("focus is not on the name after its refusal")
			}

			const secret = "Bearer s3cret-header-value"
			b.typeInto("#mcp-name", "tracker")
			b.click("#mcp-header-add")
			b.typeInto(".mcp-header-row .mcp-header-name", "Authorization")
			b.typeInto(".mcp-header-row .mcp-header-value", secret)
			b.click("#mcp-add-submit")
			card := `.mcp-server[data-name="tracker"]`
			b.waitFor("the added server", `document.querySelector('`+card+`')`, 20*time.Second)
			if got := b.text(card + " .mcp-header-names"); !strings.Contains(got, "Authorization") {
				t.Errorf("the header names read %q", got)
			}
			if got := b.text(card + " .mcp-url"); got != fake.URL {
				t.Errorf("the URL reads %q, want %q", got, fake.URL)
			}
			if eval[bool](b, `document.documentElement.outerHTML.includes('s3cret') || [...document.querySelectorAll('input')].some(i => i.value.includes('s3cret'))`) {
				t.Errorf("the header's value is still in the page")
			}
			if eval[int](b, `document.querySelectorAll('.mcp-header-row').length`) != 0 {
				t.Errorf("the form keeps its header rows after the save")
			}
			_, raw := crAPI(b, "GET", "/api/v1/mcp/servers", nil)
			if strings.Contains(string(raw), "s3cret") {
				t.Errorf("the API returns the header's value: %s", raw)
			}

			// Test: reached, with its tools counted; the header went to the server.
			b.click(card + " .mcp-test")
			b.waitFor("the test's result", `document.querySelector('`+card+` .mcp-test-ok')`, 30*time.Second)
			if got := b.text(card + " .mcp-test-ok"); !strings.Contains(got, "3 tools") || !strings.Contains(got, " ms") {
				t.Errorf("the test says %q", got)
			}
			if got := sentAuth.Load(); got == nil || *got != secret {
				t.Errorf("the server was not sent the Authorization header it was given")
			}

			// Its tools, as the server annotated them.
			b.click(card + " .mcp-tools-toggle")
			row := func(name string) string { return card + ` .mcp-tools-table tr[data-name="tracker__` + name + `"]` }
			b.waitFor("the tools", `document.querySelectorAll('`+card+` .mcp-tools-table tbody tr').length === 3`, 30*time.Second)
			for name, want := range map[string][2]string{
				"lookup":       {"read-only", "runs at once"},
				"create_issue": {"may write", "needs approval"},
				"delete_issue": {"destructive", "needs approval"},
			} {
				if got := b.text(row(name) + " .mcp-hints"); !strings.Contains(got, want[0]) {
					t.Errorf("%s's hints read %q, want %q", name, got, want[0])
				}
				if got := b.text(row(name) + " .mcp-approval"); got != want[1] {
					t.Errorf("%s's approval reads %q, want %q", name, got, want[1])
				}
			}

			// Always confirm the read: saved at once, kept after a reload.
			b.do(chromedp.SetValue(chromedp.CSS(row("lookup")+" select.mcp-policy"), "always_confirm", chromedp.NodeVisible),
				chromedp.Evaluate[chromedp.Void](`document.querySelector('`+row("lookup")+` select.mcp-policy').dispatchEvent(new Event('change'))`))
			b.waitFor("the saved policy", `document.querySelector('`+row("lookup")+` .mcp-approval').textContent === 'needs approval'`, 15*time.Second)
			clearToast(b)
			b.readmeShot("mcp-admin")
			b.lookAtWidths("mcp-admin")
			b.do(chromedp.Reload())
			b.waitFor("the list after the reload", `document.querySelector('`+card+` .mcp-tools-toggle')`, 15*time.Second)
			b.click(card + " .mcp-tools-toggle")
			b.waitFor("the tools after the reload", `document.querySelector('`+row("lookup")+`')`, 30*time.Second)
			if got := eval[string](b, `document.querySelector('`+row("lookup")+` select.mcp-policy').value`); got != "always_confirm" {
				t.Errorf("after a reload lookup's policy is %q", got)
			}
			code, raw := crAPI(b, "GET", "/api/v1/mcp/servers/"+eval[string](b, `document.querySelector('`+card+`').dataset.id`)+"/tools", nil)
			var tools struct {
				Items []struct{ Name, Policy string } `json:"items"`
			}
			if err := json.Unmarshal(raw, &tools); code != http.StatusOK || err != nil {
				t.Fatalf("GET tools: %d %s", code, raw)
			}
			for _, it := range tools.Items {
				if it.Name == "tracker__lookup" && it.Policy != "always_confirm" {
					t.Errorf("the API says lookup's policy is %q", it.Policy)
				}
			}

			// A server that is gone: the test says so in words.
			gone.Store(true)
			fake.CloseClientConnections()
			b.click(card + " .mcp-test")
			b.waitFor("the failed test", `document.querySelector('`+card+` .mcp-test-failed')`, 60*time.Second)
			if got := b.text(card + " .mcp-test-failed"); !strings.Contains(got, "could not be reached") || regexpStatus.MatchString(got) {
				t.Errorf("the failed test says %q", got)
			}

			// Delete, after the in-page confirmation that names it.
			b.click(card + " .mcp-delete")
			b.waitFor("the confirmation", `document.querySelector('dialog.confirm-dialog[open]')`, 10*time.Second)
			if got := b.text("dialog.confirm-dialog .confirm-text"); !strings.Contains(got, "tracker") || !strings.Contains(got, "3 tools") {
				t.Errorf("the confirmation reads %q", got)
			}
			b.confirmInPage()
			b.waitFor("the empty list again", `!document.querySelector('`+card+`') && document.querySelector('#mcp-servers .empty')`, 15*time.Second)
			if _, raw := crAPI(b, "GET", "/api/v1/mcp/servers", nil); strings.Contains(string(raw), "tracker") {
				t.Errorf("the server is still listed: %s", raw)
			}

			// A member sees no MCP entry and is refused at the page and by the API.
			tok := issueMember(b, "member@example.com")
			m := b.newContext()
			m.do(chromedp.Navigate(m.base + "/"))
			m.signInToken(tok)
			if eval[bool](m, `!!document.querySelector('#nav a[href="#/mcp"]')`) {
				t.Errorf("a member's menu has the MCP entry")
			}
			m.goTo("#/mcp")
			m.waitFor("the refusal", `document.querySelector('#mcp-refused')`, 10*time.Second)
			if eval[bool](m, `!!document.querySelector('#mcp-add')`) {
				t.Errorf("a member is offered the form")
			}
			if code, _ := callAs(b, tok, "GET", "/api/v1/mcp/servers", nil); code != http.StatusForbidden {
				t.Errorf("a member's GET /api/v1/mcp/servers = %d, want 403", code)
			}
		})
	}
}
