package httpapi

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// apiOperation finds "METHOD /path" in the contract: in headings ("### GET | POST
// /path"), lists ("- POST /path: …") and the cloud table ("| GET |
// /path |").
var apiOperation = regexp.MustCompile(`\b((?:GET|POST|PUT|PATCH|DELETE)(?:\s*\|\s*(?:GET|POST|PUT|PATCH|DELETE))*)\s*\|?\s*` + "`?" + `(/[A-Za-z0-9_\-/{}.]*[A-Za-z0-9_}])`)

// apiMD returns the contract beside the repository, when present, or ""
// where it is not (a copy of the module on its own).
func apiMD(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "API.md"))
	if err != nil {
		return ""
	}
	return string(raw)
}

// TestEveryOperationOfTheContractIsServed: each operation the contract names is
// routed at exactly its path (a parameter may be named otherwise), so a
// client written against the contract never meets a 404 for one.
func TestEveryOperationOfTheContractIsServed(t *testing.T) {
	t.Parallel()
	doc := apiMD(t)
	if doc == "" {
		t.Skip("../shared/API.md is not beside the repository")
	}
	routes := slices.Collect(maps.Keys(expectedOperations(t, fullServer())))
	found := 0
	for _, m := range apiOperation.FindAllStringSubmatch(doc, -1) {
		path := strings.TrimSuffix(m[2], ".")
		if strings.HasPrefix(path, "/v1/") {
			continue // the realtime provider's own endpoint, which the contract cites
		}
		for method := range strings.SplitSeq(m[1], "|") {
			found++
			want := strings.TrimSpace(method) + " " + path
			if !slices.ContainsFunc(routes, func(r string) bool { return sameOperation(r, want) }) {
				t.Errorf("API.md names %s, which no route serves", want)
			}
		}
	}
	if found < 40 {
		t.Fatalf("found only %d operations in API.md: has its format changed?", found)
	}
}

// sameOperation compares "METHOD /a/{x}/b" keys segment by segment, any
// parameter matching any other.
func sameOperation(a, b string) bool {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	if len(as) != len(bs) {
		return false
	}
	for i := range as {
		if as[i] != bs[i] && !(strings.HasPrefix(as[i], "{") && strings.HasPrefix(bs[i], "{")) {
			return false
		}
	}
	return true
}
