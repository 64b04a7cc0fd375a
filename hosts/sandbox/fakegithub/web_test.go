package fakegithub_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/hosts/sandbox/fakegithub"
)

// TestWebPages follows the html_url links the REST API hands out (a commit,
// a pull request, the repository) and finds HTML pages, not the API's JSON
// 404; unknown objects are an HTML 404, and paths under /api/v3 stay JSON.
func TestWebPages(t *testing.T) {
	t.Parallel()
	s := fakegithub.New(t)
	s.AddUser("alice", 1).Token("ta")
	repo := s.AddRepo("acme", "shop", fakegithub.Private(), fakegithub.VisibleTo("alice"))
	repo.Commit(fakegithub.Commit{Message: "Fix the checkout total\n\nRounding <b>errors</b>."})
	repo.Pull(fakegithub.Pull{Title: "Add PayPal", Body: "Closes #1."})

	var commits []struct {
		HTMLURL string `json:"html_url"`
	}
	get(t, s, "/repos/acme/shop/commits", "ta", &commits)
	var pulls []struct {
		HTMLURL string `json:"html_url"`
	}
	get(t, s, "/repos/acme/shop/pulls", "ta", &pulls)
	if len(commits) != 1 || len(pulls) != 1 {
		t.Fatalf("commits %v, pulls %v", commits, pulls)
	}
	page := func(url string) (int, string, string) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	for _, tt := range []struct {
		url, want string
		status    int
	}{
		{commits[0].HTMLURL, "Fix the checkout total", 200},
		{pulls[0].HTMLURL, "Add PayPal", 200},
		{s.URL() + "/acme/shop", "acme/shop", 200},
		{s.URL() + "/acme/shop/releases/tag/v1", "releases/tag/v1", 200},
		{s.URL() + "/acme/shop/commit/" + strings.Repeat("0", 40), "not in acme/shop", 404},
		{s.URL() + "/acme/shop/pull/99", "not in acme/shop", 404},
	} {
		status, ctype, body := page(tt.url)
		if status != tt.status || ctype != "text/html; charset=utf-8" || !strings.Contains(body, tt.want) {
			t.Errorf("GET %s = %d %s, want %d text/html with %q:\n%s", tt.url, status, ctype, tt.status, tt.want, body)
		}
	}
	if _, _, body := page(commits[0].HTMLURL); !strings.Contains(body, "Rounding &lt;b&gt;errors&lt;/b&gt;.") {
		t.Errorf("the commit page does not escape the message's body:\n%s", body)
	}
	for _, path := range []string{"/api/v3/acme/shop", "/nothing/here"} {
		status, ctype, _ := page(s.URL() + path)
		if status != 404 || !strings.HasPrefix(ctype, "application/json") {
			t.Errorf("GET %s = %d %s, want the REST API's JSON 404", path, status, ctype)
		}
	}
}
