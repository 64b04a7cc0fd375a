package app_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
)

// The web console is tested in a real browser: headless Chromium (Debian's
// chromium package; .ci/run installs it) driven by chromedp, against a
// sandbox stack on SQLite and on PostgreSQL. Without Chromium the tests
// skip, except under CI, where they fail.
//
// When a test fails, a screenshot of the page is saved under
// DEVPILOT_BROWSER_OUTPUT (default: a devpilot-browser folder in the
// temporary directory), named after the test. With DEVPILOT_SCREENSHOTS=1,
// the tests that show a main page save it to hosts/httpapi/console/screenshots
// for the README.

// browser is a signed-out console page in its own Chromium, on a sandbox
// stack.
type browser struct {
	t    *testing.T
	h    *sandboxHost
	ctx  context.Context
	base string
	// dataDir, dbURL and extra are the stack's, to restart it with.
	dataDir, dbURL string
	extra          map[string]string
}

// chromiumPath finds Chromium, or skips the test (fails it under CI).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("Chromium is not installed: .ci/run installs Debian's chromium package")
	}
	t.Skip("Chromium is not installed (apt-get install chromium); the console's browser tests need it")
	return ""
}

// browsers bounds how many Chromiums the tests run at once: each is a
// handful of processes, and this machine has two cores.
var browsers = make(chan struct{}, 2)

// startBrowser starts a sandbox stack of dialect and a headless Chromium
// opened on its console, 1280×900 unless width and height are given.
func startBrowser(t *testing.T, d sqlstore.Dialect, size ...int) *browser {
	t.Helper()
	return startBrowserWith(t, d, nil, size...)
}

// startBrowserWith is startBrowser on a stack whose environment also has
// extra.
func startBrowserWith(t *testing.T, d sqlstore.Dialect, extra map[string]string, size ...int) *browser {
	t.Helper()
	skipShort(t)
	exe := chromiumPath(t)
	browsers <- struct{}{}
	t.Cleanup(func() { <-browsers })
	dbURL := ""
	if d == sqlstore.DialectPostgres {
		dbURL = sqlstoretest.URL(t, d)
	}
	dataDir := t.TempDir()
	h := startSandboxWith(t, dataDir, dbURL, extra)
	width, height := 1280, 900
	if len(size) == 2 {
		width, height = size[0], size[1]
	}
	profile, err := os.MkdirTemp("", "devpilot-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(width, height),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("use-fake-ui-for-media-stream", true),
		chromedp.Flag("use-fake-device-for-media-stream", true),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	b := &browser{t: t, h: h, ctx: ctx, base: h.base, dataDir: dataDir, dbURL: dbURL, extra: extra}
	t.Cleanup(func() {
		if t.Failed() {
			b.saveScreenshot(failureDir(), sanitize(t.Name()))
		}
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
		for range 50 { // Chromium's children may still write there for a moment
			if os.RemoveAll(profile) == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	b.do(chromedp.Navigate(b.base + "/"))
	return b
}

// newContext opens another browser context on the same Chromium (no
// storage or cookies shared: another person's browser), blank; a screenshot
// of it is saved too when the test fails.
func (b *browser) newContext() *browser {
	b.t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	b.t.Cleanup(cancel)
	other := &browser{t: b.t, h: b.h, ctx: ctx, base: b.base}
	b.t.Cleanup(func() {
		if b.t.Failed() {
			other.saveScreenshot(failureDir(), sanitize(b.t.Name())+"-other")
		}
	})
	return other
}

func failureDir() string {
	if d := os.Getenv("DEVPILOT_BROWSER_OUTPUT"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "devpilot-browser")
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func sanitize(name string) string { return unsafeName.ReplaceAllString(name, "_") }

// saveScreenshot writes the whole page as dir/name.png.
func (b *browser) saveScreenshot(dir, name string) {
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("screenshot: %v", err)
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Logf("screenshot: %v", err)
		return
	}
	file := filepath.Join(dir, name+".png")
	if err := os.WriteFile(file, png, 0o644); err != nil {
		b.t.Logf("screenshot: %v", err)
		return
	}
	b.t.Logf("screenshot of the page: %s", file)
}

// readmeShot saves the page for the README when DEVPILOT_SCREENSHOTS=1.
func (b *browser) readmeShot(name string) {
	if os.Getenv("DEVPILOT_SCREENSHOTS") != "1" {
		return
	}
	b.saveScreenshot(filepath.Join("..", "httpapi", "console", "screenshots"), name)
}

// do runs actions, failing the test on an error. A single action whose
// node the page replaced between finding and using it (a redraw) is tried
// again, up to three times: it did nothing the first time.
func (b *browser) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	for attempt := 1; ; attempt++ {
		err := chromedp.Do(b.ctx, actions...)
		if err == nil {
			return
		}
		if len(actions) == 1 && attempt < 3 && staleNode(err) {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		b.t.Fatalf("browser: %v", err)
	}
}

// staleNode reports whether err says a node the action had found is gone.
func staleNode(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "No node with given id") || strings.Contains(msg, "Could not find node with given id")
}

// text returns the text (innerText) of the first element sel (CSS)
// matches, waiting up to 10 s for it to be rendered. The element is found and
// read in one evaluation, so a page that redraws it meanwhile (a poll, a
// stream) cannot leave the test holding a node that is gone.
func (b *browser) text(sel string) string {
	b.t.Helper()
	expr := fmt.Sprintf(`(e => e && e.getClientRects().length > 0 ? e.innerText : null)(document.querySelector(%q))`, sel)
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := chromedp.Run(b.ctx, chromedp.Evaluate[*string](expr))
		if err == nil && s != nil {
			return *s
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("browser: text of %s: not shown (%v)", sel, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// eval evaluates a JavaScript expression of the test's own (trusted) and
// returns its value.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("browser: %s: %v", expr, err)
	}
	return v
}

// waitFor polls a JavaScript condition until it is true, or fails after d.
func (b *browser) waitFor(what, cond string, d time.Duration) {
	b.t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool]("Boolean("+cond+")"))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("browser: waiting for %s (%s): %v", what, cond, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// signInDemo clicks "Use the demo user" and waits for the navigation.
func (b *browser) signInDemo() {
	b.t.Helper()
	b.do(chromedp.Click(chromedp.ID("demo-signin"), chromedp.NodeVisible),
		chromedp.WaitVisible(chromedp.CSS(`#nav a[href="#/chat"]`)))
}

// go opens a console page by its fragment, such as "#/specs".
func (b *browser) goTo(fragment string) {
	b.t.Helper()
	b.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf("location.hash = %q", fragment)))
}

func TestConsoleSignIn(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := startBrowser(t, d)

			// The console is served with a strict policy.
			resp, err := http.Get(b.base + "/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			csp := resp.Header.Get("Content-Security-Policy")
			for _, want := range []string{"script-src 'self'", "frame-ancestors 'none'", "default-src 'none'"} {
				if !strings.Contains(csp, want) {
					t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
				}
			}
			if resp.Header.Get("X-Content-Type-Options") != "nosniff" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
				t.Errorf("/ headers: %v", resp.Header)
			}

			// A wrong token is refused with the problem's detail.
			b.do(chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), "dp_wrong", chromedp.NodeVisible),
				chromedp.Click(chromedp.CSS(`form.signin button[type="submit"]`)))
			b.waitFor("the refusal", `document.querySelector('.signin .error')`, 10*time.Second)
			if got := b.text(".signin .error"); !strings.Contains(got, "401") {
				t.Errorf("error shown: %q", got)
			}
			if tok := eval[*string](b, `sessionStorage.getItem('devpilot.token')`); tok != nil {
				t.Errorf("a refused token was kept: %q", *tok)
			}
			b.readmeShot("signin")

			// The demo user signs in with one click; the token is kept in
			// sessionStorage, never in the URL.
			b.signInDemo()
			if tok := eval[string](b, `sessionStorage.getItem('devpilot.token')`); tok != b.h.sb.Token() {
				t.Errorf("token kept %q, want the demo token", tok)
			}
			if u := eval[string](b, `location.href`); strings.Contains(u, "dp_") {
				t.Errorf("the token is in the URL: %s", u)
			}
			if who := b.text("#who"); !strings.Contains(who, "demo@example.com") {
				t.Errorf("signed in as %q", who)
			}

			// A 401 from any call returns to sign-in.
			b.do(chromedp.Evaluate[chromedp.Void](`sessionStorage.setItem('devpilot.token', 'dp_revoked')`))
			b.goTo("#/specs")
			b.waitFor("sign-in after a 401", `location.hash === '#/signin' && document.querySelector('form.signin')`, 10*time.Second)

			// Sign out forgets the token.
			b.signInDemo()
			b.do(chromedp.Click(chromedp.ID("signout"), chromedp.NodeVisible))
			b.waitFor("sign-in after signing out", `document.querySelector('form.signin') && sessionStorage.getItem('devpilot.token') === null`, 10*time.Second)
		})
	}
}
