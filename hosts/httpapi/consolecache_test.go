package httpapi_test

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
)

const (
	immutable  = "public, max-age=31536000, immutable"
	revalidate = "no-cache"
)

var (
	hashedURL = regexp.MustCompile(`(?:href|src)="(/console/[A-Za-z0-9_./-]+\.[0-9a-f]{16}\.[a-z]+)"`)
	importMap = regexp.MustCompile(`<script type="importmap">([^<]*)</script>`)
)

// get serves GET target with the request headers kv (name, value, …).
func (e *env) get(target string, kv ...string) *httptest.ResponseRecorder {
	req := request(http.MethodGet, target, "", nil)
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Set(kv[i], kv[i+1])
	}
	return e.do(req)
}

// decoded returns the body of rr, decoded from its Content-Encoding.
func decoded(t *testing.T, rr *httptest.ResponseRecorder) []byte {
	t.Helper()
	var r io.Reader = bytes.NewReader(rr.Body.Bytes())
	switch enc := rr.Header().Get("Content-Encoding"); enc {
	case "":
	case "gzip":
		zr, err := gzip.NewReader(r)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	case "br":
		r = brotli.NewReader(r)
	default:
		t.Fatalf("Content-Encoding %q", enc)
	}
	body, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("decoding %s: %v", rr.Header().Get("Content-Encoding"), err)
	}
	return body
}

// The console is cached by the browser (issue 35): index.html revalidated
// with its ETag, every other file under a content-hashed URL for a year;
// the modules' plain URLs sent to their hashed ones by an import map the
// policy allows by its hash; text compressed with Brotli or gzip.
func TestConsoleCaching(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	index := e.get("/")
	h := index.Header()
	if index.Code != 200 || h.Get("Cache-Control") != revalidate {
		t.Fatalf("GET / = %d, Cache-Control %q", index.Code, h.Get("Cache-Control"))
	}
	etag := h.Get("ETag")
	if !regexp.MustCompile(`^"[0-9a-f]{16}"$`).MatchString(etag) {
		t.Errorf("GET /: ETag %q, want a strong tag", etag)
	}
	page := index.Body.String()

	// The import map comes before the first module script, maps every
	// module's plain URL to a hashed URL serving the same bytes, and the
	// policy allows it by its hash.
	m := importMap.FindStringSubmatchIndex(page)
	if m == nil {
		t.Fatalf("index.html has no import map:\n%s", page)
	}
	if first := strings.Index(page, `<script type="module"`); first < m[0] {
		t.Errorf("the import map (at %d) comes after the first module script (at %d)", m[0], first)
	}
	inline := page[m[2]:m[3]]
	sum := sha256.Sum256([]byte(inline))
	if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self' 'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'") ||
		strings.Contains(csp, "unsafe-inline") {
		t.Errorf("Content-Security-Policy %q does not allow the import map by its hash", csp)
	}
	var imports struct {
		Imports map[string]string `json:"imports"`
	}
	if err := json.Unmarshal([]byte(inline), &imports); err != nil || len(imports.Imports) < 10 {
		t.Fatalf("import map %s: %v", inline, err)
	}
	for _, plain := range []string{"/console/js/app.js", "/console/js/ui.js", "/console/js/pages/chat.js", "/console/js/pages/specs/session.js"} {
		hashed := imports.Imports[plain]
		if !regexp.MustCompile(`^` + regexp.QuoteMeta(strings.TrimSuffix(plain, ".js")) + `\.[0-9a-f]{16}\.js$`).MatchString(hashed) {
			t.Errorf("import map: %s → %q", plain, hashed)
			continue
		}
		p, q := e.get(plain), e.get(hashed)
		if p.Code != 200 || q.Code != 200 || !bytes.Equal(p.Body.Bytes(), q.Body.Bytes()) {
			t.Errorf("%s (%d) and %s (%d) differ", plain, p.Code, hashed, q.Code)
		}
	}
	if entry := regexp.MustCompile(`<script type="module" src="([^"]+)"`).FindStringSubmatch(page); entry == nil || entry[1] != imports.Imports["/console/js/app.js"] {
		t.Errorf("the entry module is %v, want the import map's %s", entry, imports.Imports["/console/js/app.js"])
	}

	// Every file index.html links, style sheets, icons, manifest and modules,
	// is a hashed URL: cached for a year, with a strong ETag; its plain URL
	// answers the same bytes, to be revalidated.
	links := hashedURL.FindAllStringSubmatch(page, -1)
	if len(links) < 20 {
		t.Fatalf("index.html links %d hashed URLs:\n%s", len(links), page)
	}
	for _, l := range links {
		u := l[1]
		rr := e.get(u)
		if rr.Code != 200 || rr.Header().Get("Cache-Control") != immutable {
			t.Errorf("GET %s = %d, Cache-Control %q", u, rr.Code, rr.Header().Get("Cache-Control"))
			continue
		}
		tag := rr.Header().Get("ETag")
		if !strings.HasPrefix(tag, `"`) {
			t.Errorf("GET %s: ETag %q, want a strong tag", u, tag)
		}
		if csp := rr.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || rr.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: security headers %v", u, rr.Header())
		}
		plain := regexp.MustCompile(`\.[0-9a-f]{16}\.`).ReplaceAllString(u, ".")
		p := e.get(plain)
		if p.Code != 200 || p.Header().Get("Cache-Control") != revalidate || p.Header().Get("ETag") != tag || !bytes.Equal(p.Body.Bytes(), rr.Body.Bytes()) {
			t.Errorf("GET %s = %d, Cache-Control %q, ETag %q (hashed: %q)", plain, p.Code, p.Header().Get("Cache-Control"), p.Header().Get("ETag"), tag)
		}
	}

	// The manifest's icons are hashed URLs too.
	manifest := regexp.MustCompile(`rel="manifest" href="([^"]+)"`).FindStringSubmatch(page)
	if manifest == nil {
		t.Fatal("index.html links no manifest")
	}
	var mf struct{ Icons []struct{ Src string } }
	if err := json.Unmarshal(e.get(manifest[1]).Body.Bytes(), &mf); err != nil || len(mf.Icons) == 0 {
		t.Fatalf("manifest: %v", err)
	}
	for _, icon := range mf.Icons {
		if rr := e.get(icon.Src); !hashedURL.MatchString(`src="`+icon.Src+`"`) || rr.Code != 200 || rr.Header().Get("Cache-Control") != immutable {
			t.Errorf("manifest icon %s: %d %q", icon.Src, rr.Code, rr.Header().Get("Cache-Control"))
		}
	}

	// A hashed name whose hash is not the file's is no file.
	if rr := e.get("/console/js/app.0123456789abcdef.js"); rr.Code != 404 {
		t.Errorf("GET a stale hash = %d, want 404", rr.Code)
	}

	// If-None-Match: the page's tag, weak or in a list, or any file's, is
	// answered 304 with no body and the caching headers; another tag is not.
	app := imports.Imports["/console/js/app.js"]
	appTag := e.get(app).Header().Get("ETag")
	for _, tc := range []struct {
		target, ifNoneMatch string
		status              int
	}{
		{"/", etag, 304},
		{"/", "W/" + etag, 304},
		{"/", `"nope", ` + etag, 304},
		{"/", "*", 304},
		{"/", `"nope"`, 200},
		{"/", appTag, 200},
		{app, appTag, 304},
		{"/console/js/app.js", appTag, 304},
		{app, etag, 200},
	} {
		rr := e.get(tc.target, "If-None-Match", tc.ifNoneMatch)
		if rr.Code != tc.status {
			t.Errorf("GET %s If-None-Match %s = %d, want %d", tc.target, tc.ifNoneMatch, rr.Code, tc.status)
			continue
		}
		if tc.status == 304 && (rr.Body.Len() != 0 || rr.Header().Get("ETag") == "" || rr.Header().Get("Cache-Control") == "" ||
			rr.Header().Get("Content-Security-Policy") == "") {
			t.Errorf("GET %s If-None-Match %s: 304 with %d bytes, headers %v", tc.target, tc.ifNoneMatch, rr.Body.Len(), rr.Header())
		}
	}
	// A 304 for a compressed representation names its tag.
	if rr := e.get("/", "If-None-Match", etag, "Accept-Encoding", "gzip, br"); rr.Code != 304 || rr.Header().Get("ETag") == etag {
		t.Errorf("GET / br If-None-Match: %d, ETag %q", rr.Code, rr.Header().Get("ETag"))
	}
}

// The console's text is sent compressed as the client prefers (br, then
// gzip), decoding to the same bytes, with Vary and the compressed length;
// PNGs, compressed already, never are.
func TestConsoleCompression(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	plain := e.get("/")
	var imports struct {
		Imports map[string]string `json:"imports"`
	}
	if m := importMap.FindStringSubmatch(plain.Body.String()); m == nil || json.Unmarshal([]byte(m[1]), &imports) != nil {
		t.Fatal("index.html has no import map")
	}
	app := imports.Imports["/console/js/app.js"]
	targets := []string{"/", app, "/console/js/app.js", "/console/app.css", "/console/favicon.svg", "/console/manifest.webmanifest"}
	for _, target := range targets {
		identity := e.get(target)
		if identity.Header().Get("Content-Encoding") != "" {
			t.Errorf("GET %s without Accept-Encoding: Content-Encoding %q", target, identity.Header().Get("Content-Encoding"))
		}
		tags := map[string]bool{identity.Header().Get("ETag"): true}
		for _, tc := range []struct{ accept, want string }{
			{"gzip, deflate, br, zstd", "br"},
			{"gzip", "gzip"},
			{"br;q=0, gzip", "gzip"},
			{"gzip;q=0.5, br;q=0.9", "br"},
			{"*", "br"},
			{"*;q=0", ""},
			{"identity", ""},
			{"deflate", ""},
			{"GZIP", "gzip"},
		} {
			rr := e.get(target, "Accept-Encoding", tc.accept)
			rh := rr.Header()
			if rr.Code != 200 || rh.Get("Content-Encoding") != tc.want {
				t.Errorf("GET %s Accept-Encoding %q = %d, Content-Encoding %q, want %q", target, tc.accept, rr.Code, rh.Get("Content-Encoding"), tc.want)
				continue
			}
			if !strings.Contains(strings.Join(rh.Values("Vary"), ","), "Accept-Encoding") {
				t.Errorf("GET %s: Vary %q", target, rh.Values("Vary"))
			}
			if rh.Get("Content-Length") != strconv.Itoa(rr.Body.Len()) {
				t.Errorf("GET %s Accept-Encoding %q: Content-Length %s for %d bytes", target, tc.accept, rh.Get("Content-Length"), rr.Body.Len())
			}
			if got := decoded(t, rr); !bytes.Equal(got, identity.Body.Bytes()) {
				t.Errorf("GET %s Accept-Encoding %q: decodes to %d bytes, not the %d of the file", target, tc.accept, len(got), identity.Body.Len())
			}
			if tc.want != "" && rr.Body.Len() >= identity.Body.Len() {
				t.Errorf("GET %s %s: %d bytes, no smaller than %d", target, tc.want, rr.Body.Len(), identity.Body.Len())
			}
			tags[rh.Get("ETag")] = true
		}
		if len(tags) != 3 {
			t.Errorf("GET %s: ETags %v, want one per encoding", target, tags)
		}
		// HEAD: the same headers, no body.
		req := request(http.MethodHead, target, "", nil)
		req.Header.Set("Accept-Encoding", "br")
		if rr := e.do(req); rr.Code != 200 || rr.Body.Len() != 0 || rr.Header().Get("Content-Encoding") != "br" || rr.Header().Get("Content-Length") == "" {
			t.Errorf("HEAD %s = %d, %d bytes, headers %v", target, rr.Code, rr.Body.Len(), rr.Header())
		}
	}
	for _, png := range []string{"/console/icon-512.png", "/console/favicon-32.png"} {
		rr := e.get(png, "Accept-Encoding", "br, gzip")
		if rr.Code != 200 || rr.Header().Get("Content-Encoding") != "" || rr.Header().Get("Content-Type") != "image/png" {
			t.Errorf("GET %s = %d, Content-Encoding %q", png, rr.Code, rr.Header().Get("Content-Encoding"))
		}
	}
}
