package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// contentStores are the content store under test, the Transactor whose
// transactions it joins, and the identity stores that seed the orgs and
// users owning its records.
type contentStores struct {
	Content  ports.ContentStore
	Tx       ports.Transactor
	Identity identityStores
}

// TestContent runs the contract of ports.ContentStore and its Transactor.
// newStores is called by every subtest (subtests run in parallel) and may
// return stores over a shared database.
//
// Where the port leaves a case open, the suite expects: empty lists and
// maps (Tone, Values, BannedWords, Examples, PreferredTerms, Keywords,
// Checks) read back empty, never nil, and a nil Error reads back nil.
// PutBrand stores every field of the brand; it is precondition_failed with
// the message "brand settings of project P are at version N, not M" (N the
// stored version, 0 when none, and M = b.Version - 1), and not_found for a
// missing org. Another org's settings for the same project are its own.
// CreateBrief is a conflict for a taken id and not_found for a missing org.
// Briefs list newest first, and content items most recently updated first;
// page.Limit defaults to 50 and is capped at 200. CreateContentItems
// stores a zero Status as generating, a zero Version as 1 and a zero
// UpdatedAt as CreatedAt; it is a conflict for a taken (or repeated) id,
// not_found when an item's brief is not its org's, and invalid (field
// "status") for an unknown status, storing nothing on any error.
// UpdateContentItem keeps the project, brief, creator, variant and creation
// time; it is precondition_failed with the message "content item X is at
// version N, not M" (M = it.Version - 1) and invalid (field "status") for
// an unknown status. ListContentItems is invalid (field "status") for an
// unknown status in the filter. A refused conditional write inside a
// transaction leaves the transaction usable. The content project cases are
// described at contentProjectCases.
func TestContent(t *testing.T, newStores Factory) {
	runSuite(t, view(newStores, Stores.content, needContent), append([]suiteCase[contentStores]{
		{"BrandRoundTrip", testBrandRoundTrip},
		{"PutBrandVersions", testPutBrandVersions},
		{"BrandOrgIsolation", testBrandOrgIsolation},
		{"RacePutBrand", testRacePutBrand},
		{"BriefRoundTrip", testBriefRoundTrip},
		{"BriefOrgIsolation", testBriefOrgIsolation},
		{"ListBriefsPages", testListBriefsPages},
		{"ListBriefsLimits", testListBriefsLimits},
		{"ListBriefsMalformedCursor", testListBriefsMalformedCursor},
		{"ContentItemRoundTrip", testContentItemRoundTrip},
		{"CreateContentItemsAtomic", testCreateContentItemsAtomic},
		{"ContentItemOrgIsolation", testContentItemOrgIsolation},
		{"ListContentItemsFilters", testListContentItemsFilters},
		{"ListContentItemsPages", testListContentItemsPages},
		{"ListContentItemsLimits", testListContentItemsLimits},
		{"ListContentItemsMalformedCursor", testListContentItemsMalformedCursor},
		{"UpdateContentItem", testUpdateContentItem},
		{"RaceUpdateContentItem", testRaceUpdateContentItem},
		{"DeleteContentItem", testDeleteContentItem},
		{"ContentTxRollback", testContentTxRollback},
		{"ContentTxCommit", testContentTxCommit},
	}, contentProjectCases...))
}

// contentOwner is an org and one of its users, who authors its content.
type contentOwner struct {
	org  ports.Org
	user ports.User
}

// newContentOwner stores a fresh org and one of its users.
func newContentOwner(t *testing.T, s contentStores) contentOwner {
	t.Helper()
	org := mustCreateOrg(t, s.Identity, newOrg())
	return contentOwner{org: org, user: mustCreateUser(t, s.Identity, newUser(org.ID))}
}

// newProjectID returns a fresh project id: projects are not stored records.
func newProjectID() string { return "project-" + newID() }

func newBrand(o contentOwner, projectID string, version int) ports.Brand {
	return ports.Brand{
		OrgID: o.org.ID, ProjectID: projectID, Name: "Acme — «Checkout» ✓",
		Voice:       "Plain, warm and\tconfident.\r\nNever \"salesy\".",
		Tone:        []string{"friendly", "direct", "«calm» ✓"},
		Audience:    "Small-shop owners in the EU",
		Values:      []string{"honesty", "speed"},
		BannedWords: []string{"synergy", "leverage", "rock star 🚀"},
		PreferredTerms: map[string]string{
			"customer": "shop owner", "utilize": "use", "e-mail": "email", "«quote»": "\"quote\"",
		},
		StyleGuide: "# Style\n\n- sentence case\n- no exclamation marks\n",
		Examples:   []string{"Get paid in one click.", ""},
		// Set at versions 1 (insert) and 3 (update), cleared at 2.
		BannedWordsBlocking: version != 2,
		Version:             version,
		UpdatedBy:           o.user.ID,
		UpdatedAt:           base.Add(time.Duration(version) * time.Minute),
	}
}

func mustPutBrand(t *testing.T, s contentStores, b ports.Brand) ports.Brand {
	t.Helper()
	if err := s.Content.PutBrand(t.Context(), b); err != nil {
		t.Fatalf("PutBrand(version %d): %v", b.Version, err)
	}
	return b
}

func mustGetBrand(t *testing.T, s contentStores, orgID, projectID string) ports.Brand {
	t.Helper()
	b, err := s.Content.GetBrand(t.Context(), orgID, projectID)
	if err != nil {
		t.Fatalf("GetBrand: %v", err)
	}
	return b
}

// storedBrand is b as it must read back: empty lists and maps, not nil.
func storedBrand(b ports.Brand) ports.Brand {
	b.Tone, b.Values, b.BannedWords, b.Examples = nonNil(b.Tone), nonNil(b.Values), nonNil(b.BannedWords), nonNil(b.Examples)
	if b.PreferredTerms == nil {
		b.PreferredTerms = map[string]string{}
	}
	return b
}

func nonNil[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

// checkNotNil fails the test for each named value that is nil.
func checkNotNil(t *testing.T, what string, values map[string]bool) {
	t.Helper()
	for name, isNil := range values {
		if isNil {
			t.Errorf("%s: %s reads back nil, want empty", what, name)
		}
	}
}

func checkBrand(t *testing.T, what string, got, want ports.Brand) {
	t.Helper()
	checkUTC(t, what, &got.UpdatedAt)
	checkNotNil(t, what, map[string]bool{
		"Tone": got.Tone == nil, "Values": got.Values == nil, "BannedWords": got.BannedWords == nil,
		"Examples": got.Examples == nil, "PreferredTerms": got.PreferredTerms == nil,
	})
	got.UpdatedAt, want.UpdatedAt = ms(got.UpdatedAt), ms(want.UpdatedAt)
	checkEqual(t, what, got, storedBrand(want))
}

// brandStale is the message of a PutBrand refused because the stored
// version is stored, not version - 1.
func brandStale(projectID string, stored, version int) string {
	return fmt.Sprintf("brand settings of project %s are at version %d, not %d", projectID, stored, version-1)
}

func checkPreconditionFailed(t *testing.T, what string, err error, message string) {
	t.Helper()
	checkError(t, what, err, ports.KindPreconditionFailed, message)
}

func testBrandRoundTrip(t *testing.T, s contentStores) {
	ctx := t.Context()
	o := newContentOwner(t, s)
	project := newProjectID()
	_, err := s.Content.GetBrand(ctx, o.org.ID, project)
	checkNotFound(t, "GetBrand of a project without settings", err, "brand settings of project", project)

	b := mustPutBrand(t, s, newBrand(o, project, 1))
	checkBrand(t, "GetBrand", mustGetBrand(t, s, o.org.ID, project), b)

	bareProject := newProjectID()
	bare := ports.Brand{OrgID: o.org.ID, ProjectID: bareProject, Version: 1, UpdatedAt: base}
	mustPutBrand(t, s, bare)
	checkBrand(t, "GetBrand of settings without lists, terms or texts", mustGetBrand(t, s, o.org.ID, bareProject), bare)

	replaced := ports.Brand{
		OrgID: o.org.ID, ProjectID: project, Name: "Acme", Voice: "Terse.",
		Tone: []string{}, Audience: "Developers", Values: []string{"craft"}, BannedWords: nil,
		PreferredTerms: map[string]string{"app": "application"}, StyleGuide: "", Examples: nil,
		Version: 2, UpdatedBy: mustCreateUser(t, s.Identity, newUser(o.org.ID)).ID, UpdatedAt: base.Add(time.Hour),
	}
	mustPutBrand(t, s, replaced)
	checkBrand(t, "GetBrand after a replacement", mustGetBrand(t, s, o.org.ID, project), replaced)
	emptied := ports.Brand{OrgID: o.org.ID, ProjectID: project, Version: 3, UpdatedBy: o.user.ID, UpdatedAt: base.Add(2 * time.Hour)}
	mustPutBrand(t, s, emptied)
	checkBrand(t, "GetBrand after a replacement by empty settings", mustGetBrand(t, s, o.org.ID, project), emptied)
	checkBrand(t, "GetBrand of another project afterwards", mustGetBrand(t, s, o.org.ID, bareProject), bare)

	missingOrg := newID()
	orphan := newBrand(o, newProjectID(), 1)
	orphan.OrgID = missingOrg
	checkErr(t, "PutBrand in a missing org", s.Content.PutBrand(ctx, orphan), ports.ErrNotFound)
}

func testPutBrandVersions(t *testing.T, s contentStores) {
	ctx := t.Context()
	o := newContentOwner(t, s)
	project := newProjectID()
	for _, version := range []int{2, 3, 0, -1} {
		err := s.Content.PutBrand(ctx, newBrand(o, project, version))
		checkPreconditionFailed(t, fmt.Sprintf("PutBrand(version %d) without settings", version), err, brandStale(project, 0, version))
	}
	_, err := s.Content.GetBrand(ctx, o.org.ID, project)
	checkNotFound(t, "GetBrand after refused first versions", err, "brand settings of project", project)

	v1 := mustPutBrand(t, s, newBrand(o, project, 1))
	again := newBrand(o, project, 1)
	again.Name = "Overwritten"
	checkPreconditionFailed(t, "PutBrand(version 1) twice", s.Content.PutBrand(ctx, again), brandStale(project, 1, 1))
	ahead := newBrand(o, project, 3)
	checkPreconditionFailed(t, "PutBrand(version 3) at version 1", s.Content.PutBrand(ctx, ahead), brandStale(project, 1, 3))
	checkBrand(t, "GetBrand after refused versions", mustGetBrand(t, s, o.org.ID, project), v1)

	v2 := newBrand(o, project, 2)
	v2.Name, v2.BannedWords = "Acme v2", []string{"disrupt"}
	mustPutBrand(t, s, v2)
	checkBrand(t, "GetBrand at version 2", mustGetBrand(t, s, o.org.ID, project), v2)
	v3 := newBrand(o, project, 3)
	v3.Name = "Acme v3"
	mustPutBrand(t, s, v3)
	checkBrand(t, "GetBrand at version 3", mustGetBrand(t, s, o.org.ID, project), v3)

	for _, version := range []int{3, 2, 1, 5} {
		stale := newBrand(o, project, version)
		stale.Name = "Stale"
		checkPreconditionFailed(t, fmt.Sprintf("PutBrand(version %d) at version 3", version), s.Content.PutBrand(ctx, stale), brandStale(project, 3, version))
	}
	checkBrand(t, "GetBrand after stale puts", mustGetBrand(t, s, o.org.ID, project), v3)
}

func testBrandOrgIsolation(t *testing.T, s contentStores) {
	ctx := t.Context()
	o, stranger := newContentOwner(t, s), newContentOwner(t, s)
	project := newProjectID()
	mustPutBrand(t, s, newBrand(o, project, 1))
	mine := mustPutBrand(t, s, newBrand(o, project, 2))
	for name, orgID := range map[string]string{"another org": stranger.org.ID, "no org": "", "a missing org": newID()} {
		_, err := s.Content.GetBrand(ctx, orgID, project)
		checkNotFound(t, "GetBrand by "+name, err, "brand settings of project", project)
		for _, version := range []int{2, 3} {
			hijack := newBrand(o, project, version)
			hijack.OrgID, hijack.Name = orgID, "hijacked"
			checkPreconditionFailed(t, fmt.Sprintf("PutBrand(version %d) by %s", version, name), s.Content.PutBrand(ctx, hijack), brandStale(project, 0, version))
		}
	}
	checkBrand(t, "GetBrand by the org afterwards", mustGetBrand(t, s, o.org.ID, project), mine)

	theirs := newBrand(stranger, project, 1)
	theirs.Name = "Stranger's brand"
	mustPutBrand(t, s, theirs)
	checkBrand(t, "GetBrand of the other org's own settings for the project", mustGetBrand(t, s, stranger.org.ID, project), theirs)
	checkBrand(t, "GetBrand by the org after the other org's put", mustGetBrand(t, s, o.org.ID, project), mine)
}

// testRacePutBrand puts one version from many callers at once, first and
// later versions: exactly one succeeds.
func testRacePutBrand(t *testing.T, s contentStores) {
	o := newContentOwner(t, s)
	project := newProjectID()
	const n = 20
	for _, version := range []int{1, 2} {
		brands := make([]ports.Brand, n)
		for i := range brands {
			brands[i] = newBrand(o, project, version)
			brands[i].Name = fmt.Sprintf("Brand %d of version %d", i, version)
		}
		errs := race(n, func(i int) error { return s.Content.PutBrand(t.Context(), brands[i]) })
		winner := oneWinner(t, fmt.Sprintf("PutBrand(version %d)", version), errs, ports.ErrPreconditionFailed)
		if winner < 0 {
			t.FailNow()
		}
		checkBrand(t, fmt.Sprintf("GetBrand after the race for version %d", version), mustGetBrand(t, s, o.org.ID, project), brands[winner])
	}
}

func newBrief(o contentOwner, projectID string) ports.Brief {
	return ports.Brief{
		ID: newID(), OrgID: o.org.ID, ProjectID: projectID, CreatedBy: o.user.ID,
		Title: "Launch post — «one-click checkout» ✓", Goal: "Sign-ups for the beta",
		Audience: "Shop owners", Channel: "blog", Format: "article",
		Keywords: []string{"checkout", "one click", "Zahlung ✓"}, CTA: "Join the beta",
		MinWords: 300, MaxWords: 800, Notes: "Mention Apple Pay.\r\n\tNo prices.\n\\u0000 is text; \"quotes\" & <tags>",
		CreatedAt: base,
	}
}

func mustCreateBrief(t *testing.T, s contentStores, b ports.Brief) ports.Brief {
	t.Helper()
	if err := s.Content.CreateBrief(t.Context(), b); err != nil {
		t.Fatalf("CreateBrief: %v", err)
	}
	return b
}

func mustGetBrief(t *testing.T, s contentStores, orgID, id string) ports.Brief {
	t.Helper()
	b, err := s.Content.GetBrief(t.Context(), orgID, id)
	if err != nil {
		t.Fatalf("GetBrief: %v", err)
	}
	return b
}

func normBrief(b ports.Brief) ports.Brief {
	b.CreatedAt, b.Keywords = ms(b.CreatedAt), nonNil(b.Keywords)
	return b
}

func checkBrief(t *testing.T, what string, got, want ports.Brief) {
	t.Helper()
	checkUTC(t, what, &got.CreatedAt)
	checkNotNil(t, what, map[string]bool{"Keywords": got.Keywords == nil})
	got.CreatedAt = ms(got.CreatedAt)
	checkEqual(t, what, got, normBrief(want))
}

// listAllBriefs follows the pages of ListBriefs of the size given and
// returns the briefs and the page sizes.
func listAllBriefs(t *testing.T, s contentStores, orgID, projectID string, limit int) ([]ports.Brief, []int) {
	t.Helper()
	var all []ports.Brief
	var sizes []int
	cursor := ""
	for range 300 {
		page, next, err := s.Content.ListBriefs(t.Context(), orgID, projectID, ports.Page{Limit: limit, Cursor: cursor})
		if err != nil {
			t.Fatalf("ListBriefs(project %q, cursor %q): %v", projectID, cursor, err)
		}
		all = append(all, page...)
		sizes = append(sizes, len(page))
		if next == "" {
			return all, sizes
		}
		cursor = next
	}
	t.Fatalf("ListBriefs: pages do not end")
	return nil, nil
}

// checkListedBriefs fails the test unless got lists each of want once,
// newest first, as stored.
func checkListedBriefs(t *testing.T, what string, got, want []ports.Brief) {
	t.Helper()
	byID := map[string]ports.Brief{}
	for _, b := range want {
		byID[b.ID] = b
	}
	seen := map[string]bool{}
	for i, b := range got {
		w, ok := byID[b.ID]
		switch {
		case !ok:
			t.Errorf("%s: item %d: brief %s is not listed here", what, i, b.ID)
		case seen[b.ID]:
			t.Errorf("%s: item %d: brief %s listed twice", what, i, b.ID)
		default:
			checkBrief(t, fmt.Sprintf("%s: item %d", what, i), b, w)
		}
		seen[b.ID] = true
	}
	if len(seen) != len(want) {
		t.Errorf("%s: lists %d of the %d briefs", what, len(seen), len(want))
	}
	if !slices.IsSortedFunc(got, func(a, b ports.Brief) int { return b.CreatedAt.Compare(a.CreatedAt) }) {
		t.Errorf("%s: not newest first", what)
	}
}

func testBriefRoundTrip(t *testing.T, s contentStores) {
	ctx := t.Context()
	o := newContentOwner(t, s)
	b := mustCreateBrief(t, s, newBrief(o, newProjectID()))
	checkBrief(t, "GetBrief", mustGetBrief(t, s, o.org.ID, b.ID), b)

	bare := ports.Brief{ID: newID(), OrgID: o.org.ID, ProjectID: b.ProjectID, Title: "Untitled", CreatedAt: base.Add(time.Second)}
	mustCreateBrief(t, s, bare)
	checkBrief(t, "GetBrief of a brief without keywords, bounds or texts", mustGetBrief(t, s, o.org.ID, bare.ID), bare)
	empty := newBrief(o, b.ProjectID)
	empty.Keywords = []string{}
	mustCreateBrief(t, s, empty)
	checkBrief(t, "GetBrief of a brief with empty keywords", mustGetBrief(t, s, o.org.ID, empty.ID), empty)

	dup := newBrief(o, newProjectID())
	dup.ID = b.ID
	checkConflict(t, "CreateBrief with a taken id", s.Content.CreateBrief(ctx, dup))
	orphan := newBrief(o, b.ProjectID)
	orphan.OrgID = newID()
	checkErr(t, "CreateBrief in a missing org", s.Content.CreateBrief(ctx, orphan), ports.ErrNotFound)
	_, err := s.Content.GetBrief(ctx, orphan.OrgID, orphan.ID)
	checkNotFound(t, "GetBrief of a refused brief", err, "brief", orphan.ID)
	missing := newID()
	_, err = s.Content.GetBrief(ctx, o.org.ID, missing)
	checkNotFound(t, "GetBrief of a missing brief", err, "brief", missing)
	checkBrief(t, "GetBrief after the conflict", mustGetBrief(t, s, o.org.ID, b.ID), b)
	all, _ := listAllBriefs(t, s, o.org.ID, "", 0)
	checkListedBriefs(t, "ListBriefs", all, []ports.Brief{b, bare, empty})
}

func testBriefOrgIsolation(t *testing.T, s contentStores) {
	ctx := t.Context()
	o, stranger := newContentOwner(t, s), newContentOwner(t, s)
	b := mustCreateBrief(t, s, newBrief(o, newProjectID()))
	theirs := mustCreateBrief(t, s, newBrief(stranger, b.ProjectID))
	for name, orgID := range map[string]string{"another org": stranger.org.ID, "no org": "", "a missing org": newID()} {
		_, err := s.Content.GetBrief(ctx, orgID, b.ID)
		checkNotFound(t, "GetBrief by "+name, err, "brief", b.ID)
		for _, project := range []string{b.ProjectID, ""} {
			list, _ := listAllBriefs(t, s, orgID, project, 200)
			if slices.ContainsFunc(list, func(x ports.Brief) bool { return x.ID == b.ID }) {
				t.Errorf("ListBriefs(project %q) by %s lists another org's brief", project, name)
			}
		}
	}
	checkBrief(t, "GetBrief by the org", mustGetBrief(t, s, o.org.ID, b.ID), b)
	for _, project := range []string{b.ProjectID, ""} {
		list, _ := listAllBriefs(t, s, o.org.ID, project, 0)
		checkListedBriefs(t, fmt.Sprintf("ListBriefs(project %q) by the org", project), list, []ports.Brief{b})
		list, _ = listAllBriefs(t, s, stranger.org.ID, project, 0)
		checkListedBriefs(t, fmt.Sprintf("ListBriefs(project %q) by the other org", project), list, []ports.Brief{theirs})
	}
}

func testListBriefsPages(t *testing.T, s contentStores) {
	ctx := t.Context()
	o := newContentOwner(t, s)
	p, q := newProjectID(), newProjectID()
	mustCreateBrief(t, s, newBrief(newContentOwner(t, s), p)) // another org's brief of the same project id
	var inP, all []ports.Brief
	// Minutes after base in no order; ties within and across the projects.
	for i, minutes := range []int{2, 0, 3, 2, 2, 1, 2, 1, 4, 2} {
		project := p
		if i >= 7 {
			project = q
		}
		b := newBrief(o, project)
		b.Title = fmt.Sprintf("Brief %d at +%dm", i, minutes)
		b.CreatedAt = base.Add(time.Duration(minutes) * time.Minute)
		mustCreateBrief(t, s, b)
		all = append(all, b)
		if project == p {
			inP = append(inP, b)
		}
	}

	got, sizes := listAllBriefs(t, s, o.org.ID, p, 3)
	checkEqual(t, "page sizes of one project", sizes, []int{3, 3, 1})
	checkListedBriefs(t, "pages of one project", got, inP)
	got, sizes = listAllBriefs(t, s, o.org.ID, "", 3)
	checkEqual(t, "page sizes of every project", sizes, []int{3, 3, 3, 1})
	checkListedBriefs(t, "pages of every project", got, all)
	got, sizes = listAllBriefs(t, s, o.org.ID, q, 2)
	checkEqual(t, "page sizes of the other project", sizes, []int{2, 1})
	checkListedBriefs(t, "pages of the other project", got, all[7:])

	whole, next, err := s.Content.ListBriefs(ctx, o.org.ID, p, ports.Page{Limit: len(inP)})
	if err != nil || len(whole) != len(inP) || next != "" {
		t.Errorf("ListBriefs(limit %d) = %d briefs, next %q, %v; want all, \"\", nil", len(inP), len(whole), next, err)
	}
	none, next, err := s.Content.ListBriefs(ctx, o.org.ID, newProjectID(), ports.Page{})
	if err != nil || len(none) != 0 || next != "" {
		t.Errorf("ListBriefs of a project without briefs = %d briefs, next %q, %v; want none", len(none), next, err)
	}
}

func testListBriefsLimits(t *testing.T, s contentStores) {
	ctx := t.Context()
	o := newContentOwner(t, s)
	project := newProjectID()
	const total = 201
	err := s.Tx.WithinTx(ctx, func(ctx context.Context) error {
		for i := range total {
			b := newBrief(o, project)
			b.CreatedAt = base.Add(time.Duration(i) * time.Second)
			if err := s.Content.CreateBrief(ctx, b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("CreateBrief: %v", err)
	}
	for _, tc := range []struct {
		limit, want int
	}{
		{0, 50}, {-1, 50}, {1, 1}, {200, 200}, {201, 200}, {10_000, 200},
	} {
		page, next, err := s.Content.ListBriefs(ctx, o.org.ID, project, ports.Page{Limit: tc.limit})
		if err != nil {
			t.Fatalf("ListBriefs(limit %d): %v", tc.limit, err)
		}
		if len(page) != tc.want || next == "" {
			t.Errorf("ListBriefs(limit %d) = %d briefs, next %q; want %d and a next cursor", tc.limit, len(page), next, tc.want)
		}
	}
	_, sizes := listAllBriefs(t, s, o.org.ID, "", 0)
	checkEqual(t, "sizes of the default pages", sizes, []int{50, 50, 50, 50, 1})
}

func testListBriefsMalformedCursor(t *testing.T, s contentStores) {
	o := newContentOwner(t, s)
	b := mustCreateBrief(t, s, newBrief(o, newProjectID()))
	for _, cursor := range malformedCursors() {
		for _, project := range []string{b.ProjectID, ""} {
			_, _, err := s.Content.ListBriefs(t.Context(), o.org.ID, project, ports.Page{Cursor: cursor})
			checkInvalidField(t, fmt.Sprintf("ListBriefs(project %q, cursor %q)", project, cursor), err, "cursor")
		}
	}
}

// newContentItem returns a draft of the brief by its creator.
func newContentItem(b ports.Brief, variant int) ports.ContentItem {
	return ports.ContentItem{
		ID: newID(), OrgID: b.OrgID, ProjectID: b.ProjectID, BriefID: b.ID, CreatedBy: b.CreatedBy,
		Title:  fmt.Sprintf("Variant %d — «one click» ✓", variant),
		Body:   "# Pay in one click\r\n\nKeep   spacing,\ttabs and trailing blanks   \n\\u0000 is text; \"quotes\" & <tags> 🚀\n",
		Format: "markdown", Status: ports.ContentDraft,
		Checks: []ports.ContentCheck{
			{Kind: "banned_word", Term: "synergy", Message: "«synergy» is banned"},
			{Kind: "length", Message: "312 words, at least 300 ✓"},
		},
		Variant: variant, Model: "gpt-4.1-mini", Version: 1, CreatedAt: base, UpdatedAt: base,
	}
}

func mustCreateContentItems(t *testing.T, s contentStores, items ...ports.ContentItem) []ports.ContentItem {
	t.Helper()
	if err := s.Content.CreateContentItems(t.Context(), items...); err != nil {
		t.Fatalf("CreateContentItems: %v", err)
	}
	return items
}

func mustGetContentItem(t *testing.T, s contentStores, orgID, id string) ports.ContentItem {
	t.Helper()
	it, err := s.Content.GetContentItem(t.Context(), orgID, id)
	if err != nil {
		t.Fatalf("GetContentItem: %v", err)
	}
	return it
}

// newContent stores a fresh owner, a brief of theirs and one draft of it.
func newContent(t *testing.T, s contentStores) (contentOwner, ports.Brief, ports.ContentItem) {
	t.Helper()
	o := newContentOwner(t, s)
	b := mustCreateBrief(t, s, newBrief(o, newProjectID()))
	return o, b, mustCreateContentItems(t, s, newContentItem(b, 1))[0]
}

func normContentItem(it ports.ContentItem) ports.ContentItem {
	it.CreatedAt, it.UpdatedAt, it.Checks = ms(it.CreatedAt), ms(it.UpdatedAt), nonNil(it.Checks)
	it.PublishedAt = msPtr(it.PublishedAt)
	if it.Override != nil {
		o := *it.Override
		o.At = ms(o.At)
		it.Override = &o
	}
	return it
}

func checkContentItem(t *testing.T, what string, got, want ports.ContentItem) {
	t.Helper()
	checkUTC(t, what, &got.CreatedAt, &got.UpdatedAt)
	checkNotNil(t, what, map[string]bool{"Checks": got.Checks == nil})
	checkUTC(t, what, got.PublishedAt)
	got.CreatedAt, got.UpdatedAt, got.PublishedAt = ms(got.CreatedAt), ms(got.UpdatedAt), msPtr(got.PublishedAt)
	if got.Override != nil {
		checkUTC(t, what+" (override)", &got.Override.At)
	}
	got = normContentItem(got)
	checkEqual(t, what, got, normContentItem(want))
}

// listAllContentItems follows the pages of ListContentItems of the size
// given and returns the items and the page sizes.
func listAllContentItems(t *testing.T, s contentStores, orgID string, f ports.ContentFilter, limit int) ([]ports.ContentItem, []int) {
	t.Helper()
	var all []ports.ContentItem
	var sizes []int
	cursor := ""
	for range 300 {
		page, next, err := s.Content.ListContentItems(t.Context(), orgID, f, ports.Page{Limit: limit, Cursor: cursor})
		if err != nil {
			t.Fatalf("ListContentItems(%+v, cursor %q): %v", f, cursor, err)
		}
		all = append(all, page...)
		sizes = append(sizes, len(page))
		if next == "" {
			return all, sizes
		}
		cursor = next
	}
	t.Fatalf("ListContentItems: pages do not end")
	return nil, nil
}

// checkListedItems fails the test unless got lists each of want once, most
// recently updated first, as stored.
func checkListedItems(t *testing.T, what string, got, want []ports.ContentItem) {
	t.Helper()
	byID := map[string]ports.ContentItem{}
	for _, it := range want {
		byID[it.ID] = it
	}
	seen := map[string]bool{}
	for i, it := range got {
		w, ok := byID[it.ID]
		switch {
		case !ok:
			t.Errorf("%s: item %d: content item %s is not listed here", what, i, it.ID)
		case seen[it.ID]:
			t.Errorf("%s: item %d: content item %s listed twice", what, i, it.ID)
		default:
			checkContentItem(t, fmt.Sprintf("%s: item %d", what, i), it, w)
		}
		seen[it.ID] = true
	}
	if len(seen) != len(want) {
		t.Errorf("%s: lists %d of the %d content items", what, len(seen), len(want))
	}
	if !slices.IsSortedFunc(got, func(a, b ports.ContentItem) int { return b.UpdatedAt.Compare(a.UpdatedAt) }) {
		t.Errorf("%s: not most recently updated first", what)
	}
}

func testContentItemRoundTrip(t *testing.T, s contentStores) {
	ctx := t.Context()
	o := newContentOwner(t, s)
	b := mustCreateBrief(t, s, newBrief(o, newProjectID()))
	full := newContentItem(b, 1)
	full.UpdatedAt = base.Add(time.Minute)
	full.Status, full.PublishedAt = ports.ContentPublished, ptr(base.Add(time.Minute))
	full.PublishedURL, full.PublishedVia = "https://example.com/hooks/1", ports.PublishedViaTarget
	full.Override = &ports.ContentOverride{Reason: "approved by legal", By: o.user.ID, At: base.Add(time.Minute)}
	full.EditedBy, full.EditedByName = o.user.ID, "ëditor+«x»@example.com"
	failed := newContentItem(b, 2)
	failed.Title, failed.Body, failed.Status, failed.Checks = "", "", ports.ContentFailed, nil
	failed.Error = &ports.ContentError{Code: "upstream", Message: "the model answered 502 — «retry later» ✓"}
	bare := ports.ContentItem{ID: newID(), OrgID: o.org.ID, ProjectID: b.ProjectID, BriefID: b.ID, CreatedAt: base.Add(time.Second)}
	noChecks := newContentItem(b, 3)
	noChecks.Checks = []ports.ContentCheck{}
	if err := s.Content.CreateContentItems(ctx); err != nil {
		t.Errorf("CreateContentItems without items: %v", err)
	}
	mustCreateContentItems(t, s, full, failed, bare, noChecks)

	checkContentItem(t, "GetContentItem", mustGetContentItem(t, s, o.org.ID, full.ID), full)
	checkContentItem(t, "GetContentItem of a failed item", mustGetContentItem(t, s, o.org.ID, failed.ID), failed)
	wantBare := bare
	wantBare.Status, wantBare.Version, wantBare.UpdatedAt = ports.ContentGenerating, 1, bare.CreatedAt
	checkContentItem(t, "GetContentItem of an item created without status, version and update time",
		mustGetContentItem(t, s, o.org.ID, bare.ID), wantBare)
	checkContentItem(t, "GetContentItem of an item with empty checks", mustGetContentItem(t, s, o.org.ID, noChecks.ID), noChecks)
	list, _ := listAllContentItems(t, s, o.org.ID, ports.ContentFilter{}, 0)
	checkListedItems(t, "ListContentItems", list, []ports.ContentItem{full, failed, wantBare, noChecks})

	dup := newContentItem(b, 4)
	dup.ID = full.ID
	checkConflict(t, "CreateContentItems with a taken id", s.Content.CreateContentItems(ctx, dup))
	missingBrief := newContentItem(b, 4)
	missingBrief.BriefID = newID()
	checkErr(t, "CreateContentItems of a missing brief", s.Content.CreateContentItems(ctx, missingBrief), ports.ErrNotFound)
	stranger := newContentOwner(t, s)
	theirBrief := mustCreateBrief(t, s, newBrief(stranger, b.ProjectID))
	foreignBrief := newContentItem(theirBrief, 4)
	foreignBrief.OrgID = o.org.ID
	checkErr(t, "CreateContentItems of another org's brief", s.Content.CreateContentItems(ctx, foreignBrief), ports.ErrNotFound)
	claimed := newContentItem(b, 4)
	claimed.OrgID = stranger.org.ID
	checkErr(t, "CreateContentItems of the brief under another org", s.Content.CreateContentItems(ctx, claimed), ports.ErrNotFound)
	orphan := newContentItem(b, 4)
	orphan.OrgID = newID()
	checkErr(t, "CreateContentItems in a missing org", s.Content.CreateContentItems(ctx, orphan), ports.ErrNotFound)
	for _, status := range []ports.ContentStatus{"pending", "DRAFT", " draft"} {
		bad := newContentItem(b, 4)
		bad.Status = status
		checkInvalidField(t, fmt.Sprintf("CreateContentItems with status %q", status), s.Content.CreateContentItems(ctx, bad), "status")
	}
	missing := newID()
	_, err := s.Content.GetContentItem(ctx, o.org.ID, missing)
	checkNotFound(t, "GetContentItem of a missing item", err, "content item", missing)
	list, _ = listAllContentItems(t, s, o.org.ID, ports.ContentFilter{}, 0)
	checkListedItems(t, "ListContentItems after refused creates", list, []ports.ContentItem{full, failed, wantBare, noChecks})
	list, _ = listAllContentItems(t, s, stranger.org.ID, ports.ContentFilter{}, 0)
	checkListedItems(t, "ListContentItems of the other org after refused creates", list, nil)
}

// testCreateContentItemsAtomic checks that a batch with one bad item stores
// none of its items.
func testCreateContentItemsAtomic(t *testing.T, s contentStores) {
	ctx := t.Context()
	o, b, stored := newContent(t, s)
	for _, tc := range []struct {
		name  string
		spoil func(bad *ports.ContentItem, good ports.ContentItem)
		want  error
	}{
		{"the same id twice", func(bad *ports.ContentItem, good ports.ContentItem) { bad.ID = good.ID }, ports.ErrConflict},
		{"a taken id", func(bad *ports.ContentItem, _ ports.ContentItem) { bad.ID = stored.ID }, ports.ErrConflict},
		{"a missing brief", func(bad *ports.ContentItem, _ ports.ContentItem) { bad.BriefID = newID() }, ports.ErrNotFound},
		{"an unknown status", func(bad *ports.ContentItem, _ ports.ContentItem) { bad.Status = "pending" }, ports.ErrInvalid},
	} {
		good, other, bad := newContentItem(b, 1), newContentItem(b, 2), newContentItem(b, 3)
		bad.Title = "Spoiled"
		tc.spoil(&bad, good)
		err := s.Content.CreateContentItems(ctx, good, other, bad)
		checkErr(t, "CreateContentItems with "+tc.name, err, tc.want)
		for _, it := range []ports.ContentItem{good, other} {
			_, err := s.Content.GetContentItem(ctx, o.org.ID, it.ID)
			checkNotFound(t, "GetContentItem of an item of a batch with "+tc.name, err, "content item", it.ID)
		}
	}
	checkContentItem(t, "GetContentItem of the stored item", mustGetContentItem(t, s, o.org.ID, stored.ID), stored)
	list, _ := listAllContentItems(t, s, o.org.ID, ports.ContentFilter{}, 0)
	checkListedItems(t, "ListContentItems after the refused batches", list, []ports.ContentItem{stored})
}

func testContentItemOrgIsolation(t *testing.T, s contentStores) {
	ctx := t.Context()
	o, b, it := newContent(t, s)
	stranger, _, theirs := newContent(t, s)
	for name, orgID := range map[string]string{"another org": stranger.org.ID, "no org": "", "a missing org": newID()} {
		_, err := s.Content.GetContentItem(ctx, orgID, it.ID)
		checkNotFound(t, "GetContentItem by "+name, err, "content item", it.ID)
		hijack := it
		hijack.OrgID, hijack.Title, hijack.Version, hijack.UpdatedAt = orgID, "hijacked", 2, base.Add(time.Hour)
		checkNotFound(t, "UpdateContentItem by "+name, s.Content.UpdateContentItem(ctx, hijack), "content item", it.ID)
		checkNotFound(t, "DeleteContentItem by "+name, s.Content.DeleteContentItem(ctx, orgID, it.ID), "content item", it.ID)
		for _, f := range []ports.ContentFilter{{}, {ProjectID: b.ProjectID}, {BriefID: b.ID}, {Status: ports.ContentDraft}} {
			list, _ := listAllContentItems(t, s, orgID, f, 200)
			if slices.ContainsFunc(list, func(x ports.ContentItem) bool { return x.ID == it.ID }) {
				t.Errorf("ListContentItems(%+v) by %s lists another org's item", f, name)
			}
		}
	}
	checkContentItem(t, "GetContentItem by the org afterwards", mustGetContentItem(t, s, o.org.ID, it.ID), it)
	list, _ := listAllContentItems(t, s, o.org.ID, ports.ContentFilter{}, 0)
	checkListedItems(t, "ListContentItems by the org", list, []ports.ContentItem{it})
	list, _ = listAllContentItems(t, s, stranger.org.ID, ports.ContentFilter{}, 0)
	checkListedItems(t, "ListContentItems by the other org", list, []ports.ContentItem{theirs})
}

func testListContentItemsFilters(t *testing.T, s contentStores) {
	o := newContentOwner(t, s)
	p, q := newProjectID(), newProjectID()
	b1, b2 := mustCreateBrief(t, s, newBrief(o, p)), mustCreateBrief(t, s, newBrief(o, p))
	b3 := mustCreateBrief(t, s, newBrief(o, q))
	stranger := newContentOwner(t, s)
	theirBrief := mustCreateBrief(t, s, newBrief(stranger, p))
	theirs := newContentItem(theirBrief, 1)
	mustCreateContentItems(t, s, theirs)

	var items []ports.ContentItem
	for i, x := range []struct {
		brief  ports.Brief
		status ports.ContentStatus
	}{
		{b1, ports.ContentDraft}, {b1, ports.ContentApproved}, {b1, ports.ContentDraft},
		{b2, ports.ContentFailed}, {b2, ports.ContentDraft},
		{b3, ports.ContentDraft}, {b3, ports.ContentPublished},
	} {
		it := newContentItem(x.brief, i+1)
		it.Status = x.status
		it.UpdatedAt = base.Add(time.Duration(i%3) * time.Minute)
		items = append(items, it)
	}
	mustCreateContentItems(t, s, items...)
	pick := func(idx ...int) []ports.ContentItem {
		out := make([]ports.ContentItem, len(idx))
		for i, j := range idx {
			out[i] = items[j]
		}
		return out
	}
	for _, tc := range []struct {
		f    ports.ContentFilter
		want []ports.ContentItem
	}{
		{ports.ContentFilter{}, items},
		{ports.ContentFilter{ProjectID: p}, pick(0, 1, 2, 3, 4)},
		{ports.ContentFilter{ProjectID: q}, pick(5, 6)},
		{ports.ContentFilter{BriefID: b1.ID}, pick(0, 1, 2)},
		{ports.ContentFilter{BriefID: b3.ID}, pick(5, 6)},
		{ports.ContentFilter{Status: ports.ContentDraft}, pick(0, 2, 4, 5)},
		{ports.ContentFilter{Status: ports.ContentFailed}, pick(3)},
		{ports.ContentFilter{ProjectID: p, Status: ports.ContentDraft}, pick(0, 2, 4)},
		{ports.ContentFilter{BriefID: b2.ID, Status: ports.ContentDraft}, pick(4)},
		{ports.ContentFilter{ProjectID: p, BriefID: b1.ID, Status: ports.ContentApproved}, pick(1)},
		{ports.ContentFilter{ProjectID: p, BriefID: b3.ID}, nil},
		{ports.ContentFilter{Status: ports.ContentArchived}, nil},
		{ports.ContentFilter{ProjectID: newProjectID()}, nil},
		{ports.ContentFilter{BriefID: theirBrief.ID}, nil},
		{ports.ContentFilter{BriefID: newID()}, nil},
	} {
		for _, limit := range []int{2, 0} {
			got, _ := listAllContentItems(t, s, o.org.ID, tc.f, limit)
			checkListedItems(t, fmt.Sprintf("ListContentItems(%+v, limit %d)", tc.f, limit), got, tc.want)
		}
	}
	got, _ := listAllContentItems(t, s, stranger.org.ID, ports.ContentFilter{ProjectID: p, Status: ports.ContentDraft}, 0)
	checkListedItems(t, "ListContentItems of the other org", got, []ports.ContentItem{theirs})
	for _, status := range []ports.ContentStatus{"pending", "DRAFT"} {
		_, _, err := s.Content.ListContentItems(t.Context(), o.org.ID, ports.ContentFilter{Status: status}, ports.Page{})
		checkInvalidField(t, fmt.Sprintf("ListContentItems(status %q)", status), err, "status")
	}
}

func testListContentItemsPages(t *testing.T, s contentStores) {
	ctx := t.Context()
	o := newContentOwner(t, s)
	b := mustCreateBrief(t, s, newBrief(o, newProjectID()))
	var items []ports.ContentItem
	// Minutes after base in no order; four tie across the first two pages.
	for i, minutes := range []int{2, 0, 3, 2, 2, 1, 2} {
		it := newContentItem(b, i+1)
		it.UpdatedAt = base.Add(time.Duration(minutes) * time.Minute)
		items = append(items, it)
	}
	mustCreateContentItems(t, s, items...)

	for _, f := range []ports.ContentFilter{{}, {ProjectID: b.ProjectID, BriefID: b.ID, Status: ports.ContentDraft}} {
		got, sizes := listAllContentItems(t, s, o.org.ID, f, 3)
		checkEqual(t, fmt.Sprintf("page sizes of ListContentItems(%+v)", f), sizes, []int{3, 3, 1})
		checkListedItems(t, fmt.Sprintf("pages of ListContentItems(%+v)", f), got, items)
	}
	whole, next, err := s.Content.ListContentItems(ctx, o.org.ID, ports.ContentFilter{}, ports.Page{Limit: len(items)})
	if err != nil || len(whole) != len(items) || next != "" {
		t.Errorf("ListContentItems(limit %d) = %d items, next %q, %v; want all, \"\", nil", len(items), len(whole), next, err)
	}

	oldest := whole[len(whole)-1]
	oldest.Title, oldest.Version, oldest.UpdatedAt = "Edited", 2, base.Add(10*time.Minute)
	if err := s.Content.UpdateContentItem(ctx, oldest); err != nil {
		t.Fatalf("UpdateContentItem: %v", err)
	}
	first, _, err := s.Content.ListContentItems(ctx, o.org.ID, ports.ContentFilter{}, ports.Page{Limit: 3})
	if err != nil {
		t.Fatalf("ListContentItems after UpdateContentItem: %v", err)
	}
	if len(first) == 0 || first[0].ID != oldest.ID || first[0].Title != "Edited" {
		t.Errorf("the updated item is not first, as updated, after UpdateContentItem")
	}
}

func testListContentItemsLimits(t *testing.T, s contentStores) {
	ctx := t.Context()
	o := newContentOwner(t, s)
	b := mustCreateBrief(t, s, newBrief(o, newProjectID()))
	items := make([]ports.ContentItem, 201)
	for i := range items {
		items[i] = newContentItem(b, i+1)
		items[i].UpdatedAt = base.Add(time.Duration(i) * time.Second)
	}
	mustCreateContentItems(t, s, items...)
	for _, tc := range []struct {
		limit, want int
	}{
		{0, 50}, {-1, 50}, {1, 1}, {200, 200}, {201, 200}, {10_000, 200},
	} {
		page, next, err := s.Content.ListContentItems(ctx, o.org.ID, ports.ContentFilter{BriefID: b.ID}, ports.Page{Limit: tc.limit})
		if err != nil {
			t.Fatalf("ListContentItems(limit %d): %v", tc.limit, err)
		}
		if len(page) != tc.want || next == "" {
			t.Errorf("ListContentItems(limit %d) = %d items, next %q; want %d and a next cursor", tc.limit, len(page), next, tc.want)
		}
	}
	_, sizes := listAllContentItems(t, s, o.org.ID, ports.ContentFilter{}, 0)
	checkEqual(t, "sizes of the default pages", sizes, []int{50, 50, 50, 50, 1})
}

func testListContentItemsMalformedCursor(t *testing.T, s contentStores) {
	o, b, _ := newContent(t, s)
	for _, cursor := range malformedCursors() {
		for _, f := range []ports.ContentFilter{{}, {ProjectID: b.ProjectID, BriefID: b.ID, Status: ports.ContentDraft}} {
			_, _, err := s.Content.ListContentItems(t.Context(), o.org.ID, f, ports.Page{Cursor: cursor})
			checkInvalidField(t, fmt.Sprintf("ListContentItems(%+v, cursor %q)", f, cursor), err, "cursor")
		}
	}
}

// itemStale is the message of an UpdateContentItem refused because the
// stored version is stored, not version - 1.
func itemStale(id string, stored, version int) string {
	return fmt.Sprintf("content item %s is at version %d, not %d", id, stored, version-1)
}

func testUpdateContentItem(t *testing.T, s contentStores) {
	ctx := t.Context()
	o, b, it := newContent(t, s)
	_, _, sibling := newContent(t, s)
	other := mustCreateContentItems(t, s, newContentItem(b, 2))[0]

	v2 := it
	v2.Title, v2.Body, v2.Format = "Edited — «title» ✓", "Edited body.\r\n", "html"
	v2.Status, v2.Model, v2.Version, v2.UpdatedAt = ports.ContentInReview, "gpt-4.1", 2, base.Add(time.Minute)
	v2.PublishedAt = ptr(base.Add(time.Minute))
	v2.PublishedURL, v2.PublishedVia = "https://blog.example.com/posts/«launch»?a=1&b=2", ports.PublishedViaElsewhere
	v2.Override = &ports.ContentOverride{Reason: "Legal approved «synergy» ✓", By: o.user.ID, At: base.Add(time.Minute).In(time.FixedZone("CET", 3600))}
	v2.Checks = []ports.ContentCheck{{Kind: "preferred_term", Term: "utilize", Message: "say «use»"}}
	v2.EditedBy, v2.EditedByName = o.user.ID, "Zoë «editor» <zoe@example.com>"
	// Kept whatever the update says.
	v2.ProjectID, v2.BriefID, v2.CreatedBy, v2.Variant, v2.CreatedAt = newProjectID(), newID(), newID(), 9, base.Add(time.Hour)
	if err := s.Content.UpdateContentItem(ctx, v2); err != nil {
		t.Fatalf("UpdateContentItem(version 2): %v", err)
	}
	want := v2
	want.ProjectID, want.BriefID, want.CreatedBy, want.Variant, want.CreatedAt = it.ProjectID, it.BriefID, it.CreatedBy, it.Variant, it.CreatedAt
	checkContentItem(t, "GetContentItem at version 2", mustGetContentItem(t, s, o.org.ID, it.ID), want)

	v3 := want
	v3.Status, v3.Checks, v3.Version, v3.UpdatedAt = ports.ContentFailed, nil, 3, base.Add(2*time.Minute)
	v3.PublishedURL, v3.PublishedVia, v3.Override = "", "", nil
	v3.EditedBy, v3.EditedByName = "", "" // the model wrote it again
	v3.Error = &ports.ContentError{Code: "timeout", Message: "no answer in 60 s"}
	if err := s.Content.UpdateContentItem(ctx, v3); err != nil {
		t.Fatalf("UpdateContentItem(version 3): %v", err)
	}
	checkContentItem(t, "GetContentItem at version 3, with an error and no checks", mustGetContentItem(t, s, o.org.ID, it.ID), v3)
	v4 := v3
	v4.Status, v4.Error, v4.Version, v4.UpdatedAt = ports.ContentDraft, nil, 4, base.Add(3*time.Minute)
	v4.Checks = []ports.ContentCheck{{Kind: "length", Message: "too short"}}
	if err := s.Content.UpdateContentItem(ctx, v4); err != nil {
		t.Fatalf("UpdateContentItem(version 4): %v", err)
	}
	checkContentItem(t, "GetContentItem at version 4, the error cleared", mustGetContentItem(t, s, o.org.ID, it.ID), v4)

	for _, version := range []int{4, 3, 2, 1, 0, 6} {
		stale := v4
		stale.Title, stale.Version, stale.UpdatedAt = "Stale", version, base.Add(time.Hour)
		checkPreconditionFailed(t, fmt.Sprintf("UpdateContentItem(version %d) at version 4", version),
			s.Content.UpdateContentItem(ctx, stale), itemStale(it.ID, 4, version))
	}
	for _, status := range []ports.ContentStatus{"", "pending", "Draft"} {
		bad := v4
		bad.Status, bad.Version = status, 5
		checkInvalidField(t, fmt.Sprintf("UpdateContentItem with status %q", status), s.Content.UpdateContentItem(ctx, bad), "status")
	}
	checkContentItem(t, "GetContentItem after refused updates", mustGetContentItem(t, s, o.org.ID, it.ID), v4)
	checkContentItem(t, "GetContentItem of the brief's other item", mustGetContentItem(t, s, o.org.ID, other.ID), other)
	checkContentItem(t, "GetContentItem of another org's item", mustGetContentItem(t, s, sibling.OrgID, sibling.ID), sibling)

	missing := newContentItem(b, 3)
	missing.Version = 2
	checkNotFound(t, "UpdateContentItem of a missing item", s.Content.UpdateContentItem(ctx, missing), "content item", missing.ID)
}

// testRaceUpdateContentItem updates one item from one version from many
// callers at once: exactly one succeeds, and it is the one stored.
func testRaceUpdateContentItem(t *testing.T, s contentStores) {
	for _, n := range []int{2, 50} {
		o, _, it := newContent(t, s)
		updates := make([]ports.ContentItem, n)
		for i := range updates {
			updates[i] = it
			updates[i].Title = fmt.Sprintf("Edit %d of %d", i, n)
			updates[i].Body = strings.Repeat(updates[i].Title+"\n", 10)
			updates[i].Status, updates[i].Version, updates[i].UpdatedAt = ports.ContentInReview, 2, base.Add(time.Duration(i)*time.Second)
		}
		errs := race(n, func(i int) error { return s.Content.UpdateContentItem(t.Context(), updates[i]) })
		winner := oneWinner(t, fmt.Sprintf("UpdateContentItem (%d callers)", n), errs, ports.ErrPreconditionFailed)
		for i, err := range errs {
			if err != nil && errors.Is(err, ports.ErrPreconditionFailed) {
				checkPreconditionFailed(t, fmt.Sprintf("UpdateContentItem %d of %d", i, n), err, itemStale(it.ID, 2, 2))
			}
		}
		if winner < 0 {
			t.FailNow()
		}
		checkContentItem(t, fmt.Sprintf("GetContentItem after the race of %d", n), mustGetContentItem(t, s, o.org.ID, it.ID), updates[winner])
	}
}

func testDeleteContentItem(t *testing.T, s contentStores) {
	ctx := t.Context()
	o, b, it := newContent(t, s)
	kept := mustCreateContentItems(t, s, newContentItem(b, 2))[0]
	if err := s.Content.DeleteContentItem(ctx, o.org.ID, it.ID); err != nil {
		t.Fatalf("DeleteContentItem: %v", err)
	}
	_, err := s.Content.GetContentItem(ctx, o.org.ID, it.ID)
	checkNotFound(t, "GetContentItem after DeleteContentItem", err, "content item", it.ID)
	checkNotFound(t, "DeleteContentItem twice", s.Content.DeleteContentItem(ctx, o.org.ID, it.ID), "content item", it.ID)
	updated := it
	updated.Version = 2
	checkNotFound(t, "UpdateContentItem of a deleted item", s.Content.UpdateContentItem(ctx, updated), "content item", it.ID)
	missing := newID()
	checkNotFound(t, "DeleteContentItem of a missing item", s.Content.DeleteContentItem(ctx, o.org.ID, missing), "content item", missing)

	checkContentItem(t, "GetContentItem of the other item", mustGetContentItem(t, s, o.org.ID, kept.ID), kept)
	list, _ := listAllContentItems(t, s, o.org.ID, ports.ContentFilter{BriefID: b.ID}, 0)
	checkListedItems(t, "ListContentItems after DeleteContentItem", list, []ports.ContentItem{kept})
	checkBrief(t, "GetBrief after DeleteContentItem", mustGetBrief(t, s, o.org.ID, b.ID), b)

	// The id of a deleted item is free again.
	again := newContentItem(b, 3)
	again.ID = it.ID
	mustCreateContentItems(t, s, again)
	checkContentItem(t, "GetContentItem of an item reusing a deleted id", mustGetContentItem(t, s, o.org.ID, it.ID), again)
}

// contentTxWrites are the writes the transaction tests make, and the state
// those writes leave.
type contentTxWrites struct {
	o            contentOwner
	brand        ports.Brand
	brief        ports.Brief
	item, gone   ports.ContentItem
	updated      ports.ContentItem
	staleBrand   ports.Brand
	staleUpdated ports.ContentItem
}

func newContentTxWrites(t *testing.T, s contentStores) contentTxWrites {
	t.Helper()
	o := newContentOwner(t, s)
	w := contentTxWrites{o: o, brief: newBrief(o, newProjectID())}
	w.brand = newBrand(o, w.brief.ProjectID, 2)
	w.staleBrand = newBrand(o, w.brief.ProjectID, 2)
	w.item, w.gone = newContentItem(w.brief, 1), newContentItem(w.brief, 2)
	w.updated = w.item
	w.updated.Title, w.updated.Version, w.updated.UpdatedAt = "Updated", 2, base.Add(time.Minute)
	w.staleUpdated = w.updated
	w.staleUpdated.Title = "Stale"
	return w
}

// write makes every write inside the transaction of ctx, including refused
// conditional writes, which must leave the transaction usable, and checks
// that the reads see them. It returns the first unexpected error.
func (w contentTxWrites) write(ctx context.Context, t *testing.T, s contentStores) error {
	var failedErr error
	step := func(what string, err error) bool {
		if err != nil && failedErr == nil {
			t.Errorf("%s inside the transaction: %v", what, err)
			failedErr = err
		}
		return failedErr == nil
	}
	refused := func(what string, err error) error {
		if !errors.Is(err, ports.ErrPreconditionFailed) {
			return fmt.Errorf("%s: %v, want precondition_failed", what, err)
		}
		return nil
	}
	_ = step("PutBrand(version 1)", s.Content.PutBrand(ctx, newBrand(w.o, w.brand.ProjectID, 1))) &&
		step("stale PutBrand", refused("PutBrand(version 1) twice", s.Content.PutBrand(ctx, newBrand(w.o, w.brand.ProjectID, 1)))) &&
		step("PutBrand(version 2)", s.Content.PutBrand(ctx, w.brand)) &&
		step("stale PutBrand", refused("PutBrand(version 2) twice", s.Content.PutBrand(ctx, w.staleBrand))) &&
		step("CreateBrief", s.Content.CreateBrief(ctx, w.brief)) &&
		step("CreateContentItems", s.Content.CreateContentItems(ctx, w.item, w.gone)) &&
		step("UpdateContentItem", s.Content.UpdateContentItem(ctx, w.updated)) &&
		step("stale UpdateContentItem", refused("UpdateContentItem twice", s.Content.UpdateContentItem(ctx, w.staleUpdated))) &&
		step("DeleteContentItem", s.Content.DeleteContentItem(ctx, w.o.org.ID, w.gone.ID))
	if failedErr != nil {
		return failedErr
	}
	orgID := w.o.org.ID
	brand, err := s.Content.GetBrand(ctx, orgID, w.brand.ProjectID)
	if step("GetBrand", err) && brand.Version != 2 {
		t.Errorf("GetBrand inside the transaction = version %d, want 2", brand.Version)
	}
	_, err = s.Content.GetBrief(ctx, orgID, w.brief.ID)
	step("GetBrief", err)
	briefs, _, err := s.Content.ListBriefs(ctx, orgID, "", ports.Page{})
	if step("ListBriefs", err) && len(briefs) != 1 {
		t.Errorf("ListBriefs inside the transaction = %d briefs, want 1", len(briefs))
	}
	it, err := s.Content.GetContentItem(ctx, orgID, w.item.ID)
	if step("GetContentItem", err) && (it.Version != 2 || it.Title != "Updated") {
		t.Errorf("GetContentItem inside the transaction = %+v, want its update", it)
	}
	items, _, err := s.Content.ListContentItems(ctx, orgID, ports.ContentFilter{BriefID: w.brief.ID}, ports.Page{})
	if step("ListContentItems", err) && len(items) != 1 {
		t.Errorf("ListContentItems inside the transaction = %d items, want 1", len(items))
	}
	return failedErr
}

// testContentTxRollback calls every method inside one transaction, checks
// that the reads see the transaction's writes, and that a rollback undoes
// them.
func testContentTxRollback(t *testing.T, s contentStores) {
	// A method writing outside the transaction may wait for it forever on a
	// single-writer database: bound the wait.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	w := newContentTxWrites(t, s)
	err := s.Tx.WithinTx(ctx, func(ctx context.Context) error {
		if err := w.write(ctx, t, s); err != nil {
			return err
		}
		return errAbort
	})
	if !errors.Is(err, errAbort) {
		t.Fatalf("WithinTx = %v, want fn's error", err)
	}
	orgID := w.o.org.ID
	_, err = s.Content.GetBrand(t.Context(), orgID, w.brand.ProjectID)
	checkNotFound(t, "GetBrand after rollback", err, "brand settings of project", w.brand.ProjectID)
	_, err = s.Content.GetBrief(t.Context(), orgID, w.brief.ID)
	checkNotFound(t, "GetBrief after rollback", err, "brief", w.brief.ID)
	for _, it := range []ports.ContentItem{w.item, w.gone} {
		_, err = s.Content.GetContentItem(t.Context(), orgID, it.ID)
		checkNotFound(t, "GetContentItem after rollback", err, "content item", it.ID)
	}
	if briefs, _ := listAllBriefs(t, s, orgID, "", 0); len(briefs) != 0 {
		t.Errorf("ListBriefs after rollback = %d briefs", len(briefs))
	}
	if items, _ := listAllContentItems(t, s, orgID, ports.ContentFilter{}, 0); len(items) != 0 {
		t.Errorf("ListContentItems after rollback = %d items", len(items))
	}
	// Nothing of the rolled back transaction is left behind to clash.
	mustPutBrand(t, s, newBrand(w.o, w.brand.ProjectID, 1))
	mustCreateBrief(t, s, w.brief)
	mustCreateContentItems(t, s, w.item, w.gone)
}

// testContentTxCommit makes the same writes in a transaction that commits:
// they stay, and refused conditional writes inside it did not spoil it.
func testContentTxCommit(t *testing.T, s contentStores) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	w := newContentTxWrites(t, s)
	err := s.Tx.WithinTx(ctx, func(ctx context.Context) error { return w.write(ctx, t, s) })
	if err != nil {
		t.Fatalf("WithinTx: %v", err)
	}
	orgID := w.o.org.ID
	checkBrand(t, "GetBrand after commit", mustGetBrand(t, s, orgID, w.brand.ProjectID), w.brand)
	checkBrief(t, "GetBrief after commit", mustGetBrief(t, s, orgID, w.brief.ID), w.brief)
	checkContentItem(t, "GetContentItem after commit", mustGetContentItem(t, s, orgID, w.item.ID), w.updated)
	_, err = s.Content.GetContentItem(t.Context(), orgID, w.gone.ID)
	checkNotFound(t, "GetContentItem of the item deleted in the transaction", err, "content item", w.gone.ID)
	items, _ := listAllContentItems(t, s, orgID, ports.ContentFilter{}, 0)
	checkListedItems(t, "ListContentItems after commit", items, []ports.ContentItem{w.updated})
}
