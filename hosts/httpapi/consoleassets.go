package httpapi

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/andybalholm/brotli"

	"github.com/devpilot/devpilot/hosts/httpapi/console"
)

// The console's files are served so that a browser fetches each once:
//
//   - every file but index.html has a second, content-hashed URL
//     (/console/js/app.<hash>.js), served with a year-long immutable
//     Cache-Control; its plain URL (/console/js/app.js) still answers, with
//     no-cache, for pages and tools that ask for it;
//   - index.html, at /, and the plain URLs are served with no-cache and a
//     strong ETag, so that a browser revalidates them (If-None-Match → 304);
//   - index.html, the manifest and the style sheets refer to the hashed URLs:
//     their absolute /console/… references are rewritten, so that a file's
//     hash covers the hashes of what it refers to; the ES modules are not
//     rewritten, an import map in index.html sends each module's plain URL
//     (which the modules' relative imports resolve to) to its hashed URL;
//   - text files are compressed once, with gzip and Brotli, and the encoding
//     is chosen by Accept-Encoding (br, then gzip, then none).
//
// All of it is computed once per process from the embedded files.

// Cache-Control values of the console's responses.
const (
	cacheImmutable  = "public, max-age=31536000, immutable"
	cacheRevalidate = "no-cache"
)

// consoleAsset is one console file as served, in each of its encodings.
type consoleAsset struct {
	// name is the file's path under /console/ (js/app.js); hashed the
	// path of its content-hashed URL (js/app.0123456789abcdef.js), "" for
	// index.html.
	name, hashed string
	contentType  string
	// hash is the hex SHA-256 of identity, cut to hashLen characters.
	hash string
	// identity is the body as served (references rewritten); gzip and br
	// are its compressed forms, nil when the type is already compressed or
	// compressing does not make it smaller.
	identity, gzip, br []byte
}

// hashLen is how many hex characters of a file's SHA-256 its URL and ETag
// carry: 64 bits.
const hashLen = 16

// brotliLevel is the Brotli quality the console is compressed with at
// start-up. Measured on the console (about 385 KB of text): quality 6 takes
// about five times gzip -9's time and gives 130 KB (gzip: 139 KB); quality 11
// gives 119 KB but takes over ten times longer again, seconds on a busy
// two-core machine, at every start.
const brotliLevel = 6

// consoleAssets is the console as served.
type consoleAssets struct {
	index    *consoleAsset
	byPlain  map[string]*consoleAsset // by name, index.html excluded
	byHashed map[string]*consoleAsset // by hashed name
	// csp is the Content-Security-Policy of every console response: it
	// allows index.html's inline import map by its hash.
	csp string
}

// defaultConsoleAssets is the embedded console, built on first use and
// kept for the life of the process (compressing it takes a moment).
var defaultConsoleAssets = sync.OnceValues(func() (*consoleAssets, error) {
	return buildConsoleAssets(console.FS())
})

// consoleRef matches an absolute reference to a console file in index.html,
// a style sheet or the manifest: the quote or parenthesis before it and the
// file's path under /console/.
var consoleRef = regexp.MustCompile(`(["'(])/console/([A-Za-z0-9_./-]+)`)

// moduleScript is where index.html's first module script starts: the import
// map must come before it.
var moduleScript = regexp.MustCompile(`<script[^>]*type="module"`)

// buildConsoleAssets reads every file of files (the console's static
// folder), rewrites the references, hashes and compresses them.
func buildConsoleAssets(files fs.FS) (*consoleAssets, error) {
	raw := map[string][]byte{}
	err := fs.WalkDir(files, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(files, name)
		raw[name] = body
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("reading the console's files: %w", err)
	}
	if _, ok := raw["index.html"]; !ok {
		return nil, errors.New("the console has no index.html")
	}
	b := &assetBuilder{raw: raw, done: map[string]*consoleAsset{}, busy: map[string]bool{}}
	a := &consoleAssets{byPlain: map[string]*consoleAsset{}, byHashed: map[string]*consoleAsset{}}
	names := make([]string, 0, len(raw))
	for name := range raw {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if name == "index.html" {
			continue
		}
		asset, err := b.asset(name)
		if err != nil {
			return nil, err
		}
		a.byPlain[name] = asset
		a.byHashed[asset.hashed] = asset
	}

	// index.html: its references rewritten, then the import map of every
	// module before its first module script, and a modulepreload link for
	// each, so that the browser fetches the modules at once rather than
	// level by level of imports.
	index, err := b.rewrite("index.html")
	if err != nil {
		return nil, err
	}
	imports := map[string]string{}
	var preload strings.Builder
	for _, name := range names {
		if asset := a.byPlain[name]; asset != nil && path.Ext(name) == ".js" {
			imports["/console/"+name] = "/console/" + asset.hashed
			fmt.Fprintf(&preload, "<link rel=\"modulepreload\" href=\"/console/%s\">\n", asset.hashed)
		}
	}
	mapJSON, err := json.Marshal(map[string]any{"imports": imports})
	if err != nil {
		return nil, err
	}
	at := len(index)
	if loc := moduleScript.FindIndex(index); loc != nil {
		at = loc[0]
	} else if i := bytes.Index(index, []byte("</head>")); i >= 0 {
		at = i
	}
	inline := string(mapJSON)
	insert := "<script type=\"importmap\">" + inline + "</script>\n" + preload.String()
	index = append(index[:at:at], append([]byte(insert), index[at:]...)...)
	a.index = newAsset("index.html", index)
	sum := sha256.Sum256([]byte(inline))
	a.csp = strings.Replace(consoleCSP, "script-src 'self'",
		"script-src 'self' 'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'", 1)
	return a, nil
}

// assetBuilder makes the console's assets, each after those it refers to.
type assetBuilder struct {
	raw  map[string][]byte
	done map[string]*consoleAsset
	busy map[string]bool // being made: a reference back to one is a cycle
}

// asset returns the served form of the file name.
func (b *assetBuilder) asset(name string) (*consoleAsset, error) {
	if a := b.done[name]; a != nil {
		return a, nil
	}
	if b.busy[name] {
		return nil, fmt.Errorf("console: %s refers to itself through other files", name)
	}
	b.busy[name] = true
	defer delete(b.busy, name)
	body, err := b.rewrite(name)
	if err != nil {
		return nil, err
	}
	a := newAsset(name, body)
	ext := path.Ext(name)
	a.hashed = strings.TrimSuffix(name, ext) + "." + a.hash + ext
	b.done[name] = a
	return a, nil
}

// rewrite returns the file name with its absolute references to other
// console files (in index.html, style sheets and the manifest) turned to
// their hashed URLs. Other files, the modules among them, are as they are.
func (b *assetBuilder) rewrite(name string) ([]byte, error) {
	body := b.raw[name]
	switch path.Ext(name) {
	case ".html", ".css", ".webmanifest":
	default:
		return body, nil
	}
	var failed error
	out := consoleRef.ReplaceAllFunc(body, func(m []byte) []byte {
		sub := consoleRef.FindSubmatch(m)
		ref := string(sub[2])
		if _, ok := b.raw[ref]; !ok || ref == "index.html" {
			return m // not a file of the console: left to answer 404
		}
		target, err := b.asset(ref)
		if err != nil {
			failed = err
			return m
		}
		return []byte(string(sub[1]) + "/console/" + target.hashed)
	})
	return out, failed
}

// newAsset hashes and compresses body, the file name as served.
func newAsset(name string, body []byte) *consoleAsset {
	sum := sha256.Sum256(body)
	ct, ok := consoleTypes[path.Ext(name)]
	if !ok {
		ct = "application/octet-stream"
	}
	a := &consoleAsset{name: name, contentType: ct, hash: hex.EncodeToString(sum[:])[:hashLen], identity: body}
	if !compressible(ct) {
		return a
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression) // a valid level: no error
	_, _ = zw.Write(body)                                   // writes to a buffer do not fail
	_ = zw.Close()
	if gz.Len() < len(body) {
		a.gzip = gz.Bytes()
	}
	var br bytes.Buffer
	bw := brotli.NewWriterLevel(&br, brotliLevel)
	_, _ = bw.Write(body)
	_ = bw.Close()
	if br.Len() < len(body) {
		a.br = br.Bytes()
	}
	return a
}

// compressible reports whether a type gains from compression: text, JSON,
// SVG; not PNG, which is compressed already.
func compressible(contentType string) bool {
	return strings.HasPrefix(contentType, "text/") || strings.HasPrefix(contentType, "image/svg+xml") ||
		strings.HasPrefix(contentType, "application/json") || strings.HasPrefix(contentType, "application/manifest+json")
}

// etag is the strong ETag of the asset in an encoding ("", "gzip", "br"):
// each encoding is another representation, with its own tag.
func (a *consoleAsset) etag(encoding string) string {
	if encoding == "" {
		return `"` + a.hash + `"`
	}
	return `"` + a.hash + "-" + encoding + `"`
}

// pick chooses the encoding for an Accept-Encoding header: br, then gzip,
// among those the client accepts and the asset has; else none.
func (a *consoleAsset) pick(acceptEncoding string) (encoding string, body []byte) {
	accepted := acceptedEncodings(acceptEncoding)
	switch {
	case a.br != nil && accepted["br"]:
		return "br", a.br
	case a.gzip != nil && accepted["gzip"]:
		return "gzip", a.gzip
	}
	return "", a.identity
}

// acceptedEncodings returns the codings an Accept-Encoding header accepts
// (a q-value above 0; "*" stands for those it does not name).
func acceptedEncodings(header string) map[string]bool {
	named := map[string]bool{}
	star := false
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(part, ";")
		coding = strings.ToLower(strings.TrimSpace(coding))
		if coding == "" {
			continue
		}
		ok := true
		for _, p := range strings.Split(params, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(strings.TrimSpace(k), "q") {
				q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				ok = err == nil && q > 0
			}
		}
		if coding == "*" {
			star = ok
			continue
		}
		named[coding] = ok
	}
	accepted := map[string]bool{}
	for _, c := range []string{"br", "gzip"} {
		ok, isNamed := named[c]
		accepted[c] = ok || (!isNamed && star)
	}
	return accepted
}

// matches reports whether an If-None-Match header names one of the asset's
// tags, in any encoding (weak comparison, as RFC 9110 has it for
// If-None-Match: a proxy that weakened the tag still gets its 304).
func (a *consoleAsset) matches(ifNoneMatch string) bool {
	for _, tag := range strings.Split(ifNoneMatch, ",") {
		tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
		if tag == "*" {
			return true
		}
		for _, enc := range []string{"", "gzip", "br"} {
			if tag == a.etag(enc) {
				return true
			}
		}
	}
	return false
}

// serve answers r with the asset, cached as cacheControl says: 304 when
// If-None-Match names it, else the body in the encoding the client prefers.
func (a *consoleAsset) serve(w http.ResponseWriter, r *http.Request, csp, cacheControl string) {
	h := w.Header()
	consoleHeaders(h, csp)
	h.Set("Cache-Control", cacheControl)
	if a.gzip != nil || a.br != nil {
		h.Add("Vary", "Accept-Encoding")
	}
	encoding, body := a.pick(r.Header.Get("Accept-Encoding"))
	h.Set("ETag", a.etag(encoding))
	if inm := r.Header.Get("If-None-Match"); inm != "" && a.matches(inm) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", a.contentType)
	if encoding != "" {
		h.Set("Content-Encoding", encoding)
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}
