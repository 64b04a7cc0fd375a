package storetest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// cloudStores are the cloud stores under test, the Transactor whose
// transactions they join, and the identity stores that seed the orgs owning
// their records.
type cloudStores struct {
	Accounts ports.CloudAccountStore
	Costs    ports.CostCacheStore
	Audit    ports.AuditStore
	Tx       ports.Transactor
	Identity identityStores
}

// TestCloud runs the contract of ports.CloudAccountStore,
// ports.CostCacheStore, ports.AuditStore and their Transactor. newStores is
// called by every subtest (subtests run in parallel) and may return stores
// over a shared database.
//
// Where the ports leave a case open, the suite expects: CreateCloudAccount
// stores a zero Status as untested and a zero UpdatedAt as CreatedAt, and is
// not_found in a missing org; account names order bytewise; RecordCloudTest
// sets LastTestedAt and UpdatedAt to its time; PutCachedCost is not_found
// for a missing account; a report expires at its expiry time exactly, and
// PutCachedCost replaces the expiry too (an earlier one included); audit
// entries of the same time are listed by id, highest first; RecordAudit is a
// conflict for a taken id and not_found in a missing org; an unknown auth
// mode, account status or audit outcome is invalid. OrgExternalID is
// invalid for an empty candidate when the org has none; a build reads back
// with its time in UTC, and goes with its account.
func TestCloud(t *testing.T, newStores Factory) {
	runSuite(t, view(newStores, Stores.cloud, needCloud), []suiteCase[cloudStores]{
		{"AccountRoundTrip", testCloudAccountRoundTrip},
		{"AccountInvalid", testCloudAccountInvalid},
		{"AccountNameConflict", testCloudAccountNameConflict},
		{"AccountOrgIsolation", testCloudAccountOrgIsolation},
		{"ListCloudAccountsPages", testListCloudAccountsPages},
		{"ListCloudAccountsLimits", testListCloudAccountsLimits},
		{"ListCloudAccountsMalformedCursor", testListCloudAccountsMalformedCursor},
		{"RecordCloudTest", testRecordCloudTest},
		{"DeleteCloudAccount", testDeleteCloudAccount},
		{"CachedCostRoundTrip", testCachedCostRoundTrip},
		{"CachedCostExpiry", testCachedCostExpiry},
		{"CachedCostReplace", testCachedCostReplace},
		{"AuditRoundTrip", testAuditRoundTrip},
		{"ListAuditPages", testListAuditPages},
		{"ListAuditLimits", testListAuditLimits},
		{"ListAuditMalformedCursor", testListAuditMalformedCursor},
		{"AuditOrgIsolation", testAuditOrgIsolation},
		{"RaceCreateCloudAccount", testRaceCreateCloudAccount},
		{"RacePutCachedCost", testRacePutCachedCost},
		{"RaceRecordAudit", testRaceRecordAudit},
		{"CloudTxJoins", testCloudTxJoins},
		{"OrgExternalID", testOrgExternalID},
		{"RaceOrgExternalID", testRaceOrgExternalID},
		{"CloudBuildRoundTrip", testCloudBuildRoundTrip},
	})
}

func newCloudAccount(orgID string) ports.CloudAccount {
	id := newID()
	return ports.CloudAccount{
		ID: id, OrgID: orgID, Provider: "aws", Name: "account-" + id, Region: "eu-west-1",
		Auth: ports.CloudAuth{
			Mode: ports.AuthAssumeRole, RoleARN: "arn:aws:iam::123456789012:role/devpilot", ExternalID: "ext-" + id[:8],
		},
		Status: ports.CloudUntested, CreatedAt: base, UpdatedAt: base,
	}
}

// newAccessKeyAccount is an account authenticating with an access key,
// read-only, tested and failed.
func newAccessKeyAccount(orgID string) ports.CloudAccount {
	a := newCloudAccount(orgID)
	a.Region = "us-east-1"
	a.Auth = ports.CloudAuth{Mode: ports.AuthAccessKey, AccessKeyID: "AKIAIOSFODNN7EXAMPLE", SealedSecret: "v1.k1.c2VhbGVk_c2VjcmV0-PQ"}
	a.ReadOnly, a.Status, a.LastError = true, ports.CloudFailed, "AccessDenied: «sts:GetCallerIdentity» ✗\nretry later"
	a.LastTestedAt = ptr(base.Add(30 * time.Second))
	a.UpdatedAt = base.Add(30 * time.Second)
	return a
}

func mustCreateCloudAccount(t *testing.T, s cloudStores, a ports.CloudAccount) ports.CloudAccount {
	t.Helper()
	if err := s.Accounts.CreateCloudAccount(t.Context(), a); err != nil {
		t.Fatalf("CreateCloudAccount: %v", err)
	}
	return a
}

// newCloud stores a fresh org and an assume-role account of it.
func newCloud(t *testing.T, s cloudStores) (ports.Org, ports.CloudAccount) {
	t.Helper()
	org := mustCreateOrg(t, s.Identity, newOrg())
	return org, mustCreateCloudAccount(t, s, newCloudAccount(org.ID))
}

func mustGetCloudAccount(t *testing.T, s cloudStores, orgID, id string) ports.CloudAccount {
	t.Helper()
	a, err := s.Accounts.GetCloudAccount(t.Context(), orgID, id)
	if err != nil {
		t.Fatalf("GetCloudAccount: %v", err)
	}
	return a
}

func mustListCloudAccounts(t *testing.T, s cloudStores, orgID string) []ports.CloudAccount {
	t.Helper()
	list, next, err := s.Accounts.ListCloudAccounts(t.Context(), orgID, ports.Page{Limit: 200})
	if err != nil {
		t.Fatalf("ListCloudAccounts: %v", err)
	}
	if next != "" {
		t.Fatalf("ListCloudAccounts: more than one page")
	}
	return list
}

func normCloudAccount(a ports.CloudAccount) ports.CloudAccount {
	a.CreatedAt, a.UpdatedAt, a.LastTestedAt = ms(a.CreatedAt), ms(a.UpdatedAt), msPtr(a.LastTestedAt)
	return a
}

func checkCloudAccount(t *testing.T, what string, got, want ports.CloudAccount) {
	t.Helper()
	checkUTC(t, what, &got.CreatedAt, &got.UpdatedAt, got.LastTestedAt)
	checkEqual(t, what, normCloudAccount(got), normCloudAccount(want))
}

func checkCloudAccounts(t *testing.T, what string, got, want []ports.CloudAccount) {
	t.Helper()
	norm := func(accounts []ports.CloudAccount) []ports.CloudAccount {
		out := make([]ports.CloudAccount, len(accounts))
		for i, a := range accounts {
			out[i] = normCloudAccount(a)
		}
		return out
	}
	for _, a := range got {
		checkUTC(t, what, &a.CreatedAt, &a.UpdatedAt, a.LastTestedAt)
	}
	if len(got) == 0 && len(want) == 0 {
		return
	}
	checkEqual(t, what, norm(got), norm(want))
}

// checkError fails the test unless err is an Error of the kind with the
// message.
func checkError(t *testing.T, what string, err error, kind ports.Kind, message string) {
	t.Helper()
	e, ok := ports.AsError(err)
	if !ok || e.Kind != kind || e.Message != message {
		t.Errorf("%s: error %v, want %s %q", what, err, kind, message)
	}
}

// checkInvalidField fails the test unless err is invalid naming field.
func checkInvalidField(t *testing.T, what string, err error, field string) {
	t.Helper()
	e, ok := ports.AsError(err)
	if !ok || e.Kind != ports.KindInvalid {
		t.Errorf("%s: error %v, want invalid", what, err)
		return
	}
	if !slices.ContainsFunc(e.Fields, func(f ports.FieldError) bool { return f.Field == field }) {
		t.Errorf("%s: fields %+v, want one named %s", what, e.Fields, field)
	}
}

// malformedCursors are cursors no list returns.
func malformedCursors() []string {
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	return []string{
		"!!!", "%%", ".", "not a cursor", b64("nonsense"), b64("2030-05-06T01:38:09.123456Z"),
		b64("yesterday " + newID()), base64.StdEncoding.EncodeToString([]byte{0xff, 0xfe, 0x00}),
		b64("account") + ".", "!." + b64(newID()), b64("account") + ".%%",
	}
}

func testCloudAccountRoundTrip(t *testing.T, s cloudStores) {
	ctx := t.Context()
	org := mustCreateOrg(t, s.Identity, newOrg())
	role := newCloudAccount(org.ID)
	role.Name = "Production — «eu» ✓"
	role.ReadOnly, role.Status, role.UpdatedAt = false, ports.CloudOK, base.Add(time.Minute)
	key := newAccessKeyAccount(org.ID)
	key.Provider = "aws-gov"
	for _, a := range []ports.CloudAccount{role, key} {
		mustCreateCloudAccount(t, s, a)
		checkCloudAccount(t, "GetCloudAccount of a "+string(a.Auth.Mode)+" account", mustGetCloudAccount(t, s, org.ID, a.ID), a)
	}

	bare := newCloudAccount(org.ID)
	bare.Status, bare.UpdatedAt = "", time.Time{}
	mustCreateCloudAccount(t, s, bare)
	want := bare
	want.Status, want.UpdatedAt = ports.CloudUntested, bare.CreatedAt
	checkCloudAccount(t, "GetCloudAccount of an account created without status and update time", mustGetCloudAccount(t, s, org.ID, bare.ID), want)

	list := mustListCloudAccounts(t, s, org.ID)
	wantList := []ports.CloudAccount{role, key, want}
	slices.SortFunc(wantList, func(a, b ports.CloudAccount) int { return strings.Compare(a.Name, b.Name) })
	checkCloudAccounts(t, "ListCloudAccounts", list, wantList)

	dup := newCloudAccount(org.ID)
	dup.ID = role.ID
	checkConflict(t, "CreateCloudAccount with a taken id", s.Accounts.CreateCloudAccount(ctx, dup))
	missingOrg := newID()
	checkErr(t, "CreateCloudAccount in a missing org", s.Accounts.CreateCloudAccount(ctx, newCloudAccount(missingOrg)), ports.ErrNotFound)
	missing := newID()
	_, err := s.Accounts.GetCloudAccount(ctx, org.ID, missing)
	checkNotFound(t, "GetCloudAccount of a missing account", err, "cloud account", missing)
	checkCloudAccounts(t, "ListCloudAccounts after failed creates", mustListCloudAccounts(t, s, org.ID), wantList)
}

func testCloudAccountInvalid(t *testing.T, s cloudStores) {
	ctx := t.Context()
	org, a := newCloud(t, s)
	for _, mode := range []ports.CloudAuthMode{"", "password", "ASSUME_ROLE"} {
		bad := newCloudAccount(org.ID)
		bad.Auth.Mode = mode
		checkInvalidField(t, fmt.Sprintf("CreateCloudAccount with auth mode %q", mode), s.Accounts.CreateCloudAccount(ctx, bad), "auth.mode")
		_, err := s.Accounts.GetCloudAccount(ctx, org.ID, bad.ID)
		checkErr(t, "GetCloudAccount of a refused account", err, ports.ErrNotFound)
	}
	bad := newCloudAccount(org.ID)
	bad.Status = "broken"
	checkInvalidField(t, "CreateCloudAccount with an unknown status", s.Accounts.CreateCloudAccount(ctx, bad), "status")
	for _, status := range []ports.CloudAccountStatus{"", "broken", "OK"} {
		err := s.Accounts.RecordCloudTest(ctx, org.ID, a.ID, status, "", base.Add(time.Hour))
		checkInvalidField(t, fmt.Sprintf("RecordCloudTest with status %q", status), err, "status")
	}
	checkCloudAccounts(t, "ListCloudAccounts after invalid calls", mustListCloudAccounts(t, s, org.ID), []ports.CloudAccount{a})
}

func testCloudAccountNameConflict(t *testing.T, s cloudStores) {
	ctx := t.Context()
	org, a := newCloud(t, s)
	dup := newAccessKeyAccount(org.ID)
	dup.Name = a.Name
	checkError(t, "CreateCloudAccount with a taken name", s.Accounts.CreateCloudAccount(ctx, dup),
		ports.KindConflict, "cloud account "+a.Name+" already exists")
	checkCloudAccounts(t, "ListCloudAccounts after the conflict", mustListCloudAccounts(t, s, org.ID), []ports.CloudAccount{a})

	other := mustCreateOrg(t, s.Identity, newOrg())
	elsewhere := newCloudAccount(other.ID)
	elsewhere.Name = a.Name
	mustCreateCloudAccount(t, s, elsewhere)
	checkCloudAccount(t, "GetCloudAccount of the same name in another org", mustGetCloudAccount(t, s, other.ID, elsewhere.ID), elsewhere)
	checkCloudAccount(t, "GetCloudAccount of the first account", mustGetCloudAccount(t, s, org.ID, a.ID), a)

	// Deleting an account frees its name.
	if err := s.Accounts.DeleteCloudAccount(ctx, org.ID, a.ID); err != nil {
		t.Fatalf("DeleteCloudAccount: %v", err)
	}
	mustCreateCloudAccount(t, s, dup)
	checkCloudAccounts(t, "ListCloudAccounts after reusing a deleted account's name", mustListCloudAccounts(t, s, org.ID), []ports.CloudAccount{dup})
}

func testCloudAccountOrgIsolation(t *testing.T, s cloudStores) {
	ctx := t.Context()
	org, a := newCloud(t, s)
	stranger, theirs := newCloud(t, s)
	for name, orgID := range map[string]string{"another org": stranger.ID, "no org": "", "a missing org": newID()} {
		_, err := s.Accounts.GetCloudAccount(ctx, orgID, a.ID)
		checkNotFound(t, "GetCloudAccount by "+name, err, "cloud account", a.ID)
		err = s.Accounts.RecordCloudTest(ctx, orgID, a.ID, ports.CloudOK, "", base.Add(time.Hour))
		checkNotFound(t, "RecordCloudTest by "+name, err, "cloud account", a.ID)
		checkNotFound(t, "DeleteCloudAccount by "+name, s.Accounts.DeleteCloudAccount(ctx, orgID, a.ID), "cloud account", a.ID)
		if slices.ContainsFunc(mustListCloudAccounts(t, s, orgID), func(x ports.CloudAccount) bool { return x.ID == a.ID }) {
			t.Errorf("ListCloudAccounts by %s lists another org's account", name)
		}
	}
	checkCloudAccount(t, "GetCloudAccount by the org afterwards", mustGetCloudAccount(t, s, org.ID, a.ID), a)
	checkCloudAccounts(t, "ListCloudAccounts by the org", mustListCloudAccounts(t, s, org.ID), []ports.CloudAccount{a})
	checkCloudAccounts(t, "ListCloudAccounts by the other org", mustListCloudAccounts(t, s, stranger.ID), []ports.CloudAccount{theirs})
}

// listAllCloudAccounts follows the pages of ListCloudAccounts of the size
// given and returns the accounts and the page sizes.
func listAllCloudAccounts(t *testing.T, s cloudStores, orgID string, limit int) ([]ports.CloudAccount, []int) {
	t.Helper()
	var all []ports.CloudAccount
	var sizes []int
	cursor := ""
	for range 300 {
		page, next, err := s.Accounts.ListCloudAccounts(t.Context(), orgID, ports.Page{Limit: limit, Cursor: cursor})
		if err != nil {
			t.Fatalf("ListCloudAccounts(cursor %q): %v", cursor, err)
		}
		all = append(all, page...)
		sizes = append(sizes, len(page))
		if next == "" {
			return all, sizes
		}
		cursor = next
	}
	t.Fatalf("ListCloudAccounts: pages do not end")
	return nil, nil
}

func testListCloudAccountsPages(t *testing.T, s cloudStores) {
	ctx := t.Context()
	org := mustCreateOrg(t, s.Identity, newOrg())
	other := mustCreateOrg(t, s.Identity, newOrg())
	// Bytewise order: space < digits < upper case < "_" < lower case < non-ASCII.
	names := []string{"staging", "prod", "Prod", "prod eu", "prod-eu", "prod_eu", "prod 2", "Ärger", "z", "a b c", " lead", "prod\teu"}
	var want []ports.CloudAccount
	for i, name := range names {
		a := newCloudAccount(org.ID)
		if i%2 == 1 {
			a = newAccessKeyAccount(org.ID)
		}
		a.Name = name
		want = append(want, mustCreateCloudAccount(t, s, a))
		theirs := newCloudAccount(other.ID)
		theirs.Name = name
		mustCreateCloudAccount(t, s, theirs)
	}
	slices.SortFunc(want, func(a, b ports.CloudAccount) int { return strings.Compare(a.Name, b.Name) })

	all, sizes := listAllCloudAccounts(t, s, org.ID, 5)
	checkEqual(t, "page sizes", sizes, []int{5, 5, 2})
	checkCloudAccounts(t, "pages of ListCloudAccounts", all, want)
	all, sizes = listAllCloudAccounts(t, s, org.ID, 1)
	checkEqual(t, "number of pages of one", len(sizes), len(want))
	checkCloudAccounts(t, "pages of one of ListCloudAccounts", all, want)

	whole, next, err := s.Accounts.ListCloudAccounts(ctx, org.ID, ports.Page{Limit: len(want)})
	if err != nil || next != "" {
		t.Errorf("ListCloudAccounts(limit %d) = next %q, %v; want \"\", nil", len(want), next, err)
	}
	checkCloudAccounts(t, "ListCloudAccounts of one full page", whole, want)

	// A cursor still continues after its account is deleted, and the pages
	// after it see accounts created meanwhile.
	first, cursor, err := s.Accounts.ListCloudAccounts(ctx, org.ID, ports.Page{Limit: 4})
	if err != nil || len(first) != 4 || cursor == "" {
		t.Fatalf("ListCloudAccounts(limit 4) = %d accounts, next %q, %v", len(first), cursor, err)
	}
	if err := s.Accounts.DeleteCloudAccount(ctx, org.ID, first[3].ID); err != nil {
		t.Fatalf("DeleteCloudAccount: %v", err)
	}
	late := newCloudAccount(org.ID)
	late.Name = "zz late"
	mustCreateCloudAccount(t, s, late)
	rest, next, err := s.Accounts.ListCloudAccounts(ctx, org.ID, ports.Page{Limit: 200, Cursor: cursor})
	if err != nil || next != "" {
		t.Fatalf("ListCloudAccounts after a deleted cursor account = next %q, %v", next, err)
	}
	wantRest := append(slices.Clone(want[4:]), late)
	slices.SortFunc(wantRest, func(a, b ports.CloudAccount) int { return strings.Compare(a.Name, b.Name) })
	checkCloudAccounts(t, "ListCloudAccounts after a deleted cursor account", rest, wantRest)

	empty, next, err := s.Accounts.ListCloudAccounts(ctx, mustCreateOrg(t, s.Identity, newOrg()).ID, ports.Page{})
	if err != nil || len(empty) != 0 || next != "" {
		t.Errorf("ListCloudAccounts of an org without accounts = %d, %q, %v; want none", len(empty), next, err)
	}
}

func testListCloudAccountsLimits(t *testing.T, s cloudStores) {
	ctx := t.Context()
	org := mustCreateOrg(t, s.Identity, newOrg())
	const total = 201
	err := s.Tx.WithinTx(ctx, func(ctx context.Context) error {
		for i := range total {
			a := newCloudAccount(org.ID)
			a.Name = fmt.Sprintf("account %03d", i)
			if err := s.Accounts.CreateCloudAccount(ctx, a); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("CreateCloudAccount: %v", err)
	}
	for _, tc := range []struct {
		limit, want int
	}{
		{0, 50}, {-1, 50}, {1, 1}, {200, 200}, {201, 200}, {10_000, 200},
	} {
		page, next, err := s.Accounts.ListCloudAccounts(ctx, org.ID, ports.Page{Limit: tc.limit})
		if err != nil {
			t.Fatalf("ListCloudAccounts(limit %d): %v", tc.limit, err)
		}
		if len(page) != tc.want || next == "" {
			t.Errorf("ListCloudAccounts(limit %d) = %d accounts, next %q; want %d and a next cursor", tc.limit, len(page), next, tc.want)
		}
	}
	all, sizes := listAllCloudAccounts(t, s, org.ID, 0)
	checkEqual(t, "sizes of the default pages", sizes, []int{50, 50, 50, 50, 1})
	for i, a := range all {
		if want := fmt.Sprintf("account %03d", i); a.Name != want {
			t.Fatalf("default pages: account %d is %q, want %q", i, a.Name, want)
		}
	}
}

func testListCloudAccountsMalformedCursor(t *testing.T, s cloudStores) {
	org, _ := newCloud(t, s)
	for _, cursor := range malformedCursors() {
		_, _, err := s.Accounts.ListCloudAccounts(t.Context(), org.ID, ports.Page{Cursor: cursor})
		checkInvalidField(t, fmt.Sprintf("ListCloudAccounts(cursor %q)", cursor), err, "cursor")
	}
}

func testRecordCloudTest(t *testing.T, s cloudStores) {
	ctx := t.Context()
	org, a := newCloud(t, s)
	untouched := mustCreateCloudAccount(t, s, newAccessKeyAccount(org.ID))
	want := a
	for i, step := range []struct {
		status ports.CloudAccountStatus
		err    string
	}{
		{ports.CloudOK, ""},
		{ports.CloudFailed, "AccessDenied: not authorized to perform sts:AssumeRole «✗»"},
		{ports.CloudFailed, "ExpiredToken"},
		{ports.CloudOK, ""},
		{ports.CloudUntested, ""},
	} {
		at := base.Add(time.Duration(i+1) * time.Hour)
		if err := s.Accounts.RecordCloudTest(ctx, org.ID, a.ID, step.status, step.err, at); err != nil {
			t.Fatalf("RecordCloudTest(%s): %v", step.status, err)
		}
		want.Status, want.LastError, want.LastTestedAt, want.UpdatedAt = step.status, step.err, &at, at
		checkCloudAccount(t, fmt.Sprintf("GetCloudAccount after RecordCloudTest %d (%s)", i, step.status), mustGetCloudAccount(t, s, org.ID, a.ID), want)
	}
	checkCloudAccount(t, "GetCloudAccount of an untested account", mustGetCloudAccount(t, s, org.ID, untouched.ID), untouched)
	missing := newID()
	checkNotFound(t, "RecordCloudTest of a missing account",
		s.Accounts.RecordCloudTest(ctx, org.ID, missing, ports.CloudOK, "", base), "cloud account", missing)
}

func newCostReport(seed int) ports.CostReport {
	day := time.Date(2030, 5, 1, 0, 0, 0, 0, time.UTC)
	return ports.CostReport{
		Currency: "USD",
		Periods: []ports.CostPeriod{
			{
				Start: day, End: day.AddDate(0, 0, 1), Total: fmt.Sprintf("%d.0000001234", seed),
				Groups: []ports.CostGroup{
					{Key: "Amazon Elastic Container Service", Amount: "12.3456789012345678901234567890"},
					{Key: "AWS Lambda «eu» ✓", Amount: "-0.01"},
					{Key: "Tax", Amount: "0"},
				},
			},
			{Start: day.AddDate(0, 0, 1), End: day.AddDate(0, 0, 2), Total: "1e-10", Groups: []ports.CostGroup{}},
			{Start: day.AddDate(0, 0, 2), End: day.AddDate(0, 0, 3), Total: "00012.50"},
		},
	}
}

// checkCostReport fails the test unless got is want with its times in UTC,
// exactly: amounts as given, nil and empty lists kept apart.
func checkCostReport(t *testing.T, what string, got, want ports.CostReport) {
	t.Helper()
	for _, p := range got.Periods {
		checkUTC(t, what, &p.Start, &p.End)
	}
	want.Periods = slices.Clone(want.Periods)
	for i := range want.Periods {
		want.Periods[i].Start, want.Periods[i].End = want.Periods[i].Start.UTC(), want.Periods[i].End.UTC()
	}
	checkEqual(t, what, got, want)
}

func getCachedCost(t *testing.T, s cloudStores, accountID, key string, now time.Time) (ports.CostReport, bool) {
	t.Helper()
	r, ok, err := s.Costs.GetCachedCost(t.Context(), accountID, key, now)
	if err != nil {
		t.Fatalf("GetCachedCost: %v", err)
	}
	return r, ok
}

func mustPutCachedCost(t *testing.T, s cloudStores, accountID, key string, r ports.CostReport, expiresAt time.Time) {
	t.Helper()
	if err := s.Costs.PutCachedCost(t.Context(), accountID, key, r, expiresAt); err != nil {
		t.Fatalf("PutCachedCost: %v", err)
	}
}

// checkCached fails the test unless the report cached under the account and
// key at now is want (nil: none).
func checkCached(t *testing.T, what string, s cloudStores, accountID, key string, now time.Time, want *ports.CostReport) {
	t.Helper()
	got, ok := getCachedCost(t, s, accountID, key, now)
	switch {
	case want == nil && ok:
		t.Errorf("%s: found %+v, want none", what, got)
	case want != nil && !ok:
		t.Errorf("%s: found none, want a report", what)
	case want != nil:
		checkCostReport(t, what, got, *want)
	}
}

func testCachedCostRoundTrip(t *testing.T, s cloudStores) {
	org, a := newCloud(t, s)
	b := mustCreateCloudAccount(t, s, newAccessKeyAccount(org.ID))
	expires := base.Add(6 * time.Hour)
	report := newCostReport(1)
	zoned := newCostReport(2)
	zone := time.FixedZone("UTC-9:30", -(9*3600 + 1800))
	zoned.Currency = "EUR"
	zoned.Periods[0].Start = base.In(zone)
	zoned.Periods[0].End = base.Add(24*time.Hour + 987*time.Nanosecond).In(zone)
	keys := []string{
		"2030-05-01|2030-05-04|DAILY|SERVICE", "2030-05-01|2030-05-04|MONTHLY|", "", "key with «odd» characters ✓ \t|",
	}
	reports := []ports.CostReport{report, zoned, {}, {Currency: "USD", Periods: []ports.CostPeriod{}}}
	for i, key := range keys {
		mustPutCachedCost(t, s, a.ID, key, reports[i], expires)
		mustPutCachedCost(t, s, b.ID, key, newCostReport(100+i), expires)
	}
	for i, key := range keys {
		checkCached(t, fmt.Sprintf("GetCachedCost of key %q", key), s, a.ID, key, base, &reports[i])
		other := newCostReport(100 + i)
		checkCached(t, fmt.Sprintf("GetCachedCost of key %q of the other account", key), s, b.ID, key, base, &other)
	}
	checkCached(t, "GetCachedCost of a missing key", s, a.ID, "2030-01-01|2030-01-02|DAILY|", base, nil)
	checkCached(t, "GetCachedCost of a missing account", s, newID(), keys[0], base, nil)
	missing := newID()
	checkError(t, "PutCachedCost for a missing account", s.Costs.PutCachedCost(t.Context(), missing, keys[0], report, expires),
		ports.KindNotFound, "cloud account "+missing+" not found")
}

func testCachedCostExpiry(t *testing.T, s cloudStores) {
	_, a := newCloud(t, s)
	report := newCostReport(1)
	expires := base.Add(6 * time.Hour).Truncate(time.Millisecond)
	mustPutCachedCost(t, s, a.ID, "k", report, expires)
	for _, tc := range []struct {
		name  string
		now   time.Time
		found bool
	}{
		{"long before the expiry", base.Add(-24 * time.Hour), true},
		{"when put", base, true},
		{"a millisecond before the expiry", expires.Add(-time.Millisecond), true},
		{"a millisecond before the expiry in another zone", expires.Add(-time.Millisecond).In(time.FixedZone("UTC+14", 14*3600)), true},
		{"at the expiry", expires, false},
		{"at the expiry in another zone", expires.In(time.FixedZone("UTC-12", -12*3600)), false},
		{"after the expiry", expires.Add(time.Hour), false},
	} {
		want := &report
		if !tc.found {
			want = nil
		}
		checkCached(t, "GetCachedCost "+tc.name, s, a.ID, "k", tc.now, want)
	}
}

func testCachedCostReplace(t *testing.T, s cloudStores) {
	_, a := newCloud(t, s)
	first, second, third := newCostReport(1), newCostReport(2), ports.CostReport{Currency: "USD"}
	mustPutCachedCost(t, s, a.ID, "k", first, base.Add(time.Hour))
	mustPutCachedCost(t, s, a.ID, "k", second, base.Add(6*time.Hour))
	checkCached(t, "GetCachedCost after a replacement", s, a.ID, "k", base, &second)
	checkCached(t, "GetCachedCost after the first expiry", s, a.ID, "k", base.Add(2*time.Hour), &second)

	// An earlier expiry replaces a later one.
	mustPutCachedCost(t, s, a.ID, "k", third, base.Add(time.Minute))
	checkCached(t, "GetCachedCost after a replacement expiring sooner", s, a.ID, "k", base, &third)
	checkCached(t, "GetCachedCost after the sooner expiry", s, a.ID, "k", base.Add(2*time.Hour), nil)

	// An expired report is replaced by a fresh one.
	mustPutCachedCost(t, s, a.ID, "k", first, base.Add(12*time.Hour))
	checkCached(t, "GetCachedCost after refreshing an expired report", s, a.ID, "k", base.Add(2*time.Hour), &first)
}

func newAuditEntry(orgID, accountID string, at time.Time) ports.AuditEntry {
	return ports.AuditEntry{
		ID: newID(), OrgID: orgID, UserID: newID(), AccountID: accountID, Action: "ecs.scale",
		Resource: "cluster/prod/service/api", Arguments: json.RawMessage(`{"cluster": "prod", "desired_count": 3}`),
		Outcome: ports.AuditOK, At: at,
	}
}

func mustRecordAudit(t *testing.T, s cloudStores, e ports.AuditEntry) ports.AuditEntry {
	t.Helper()
	if err := s.Audit.RecordAudit(t.Context(), e); err != nil {
		t.Fatalf("RecordAudit: %v", err)
	}
	return e
}

func mustListAudit(t *testing.T, s cloudStores, orgID, accountID string) []ports.AuditEntry {
	t.Helper()
	list, next, err := s.Audit.ListAudit(t.Context(), orgID, accountID, ports.Page{Limit: 200})
	if err != nil {
		t.Fatalf("ListAudit: %v", err)
	}
	if next != "" {
		t.Fatalf("ListAudit: more than one page")
	}
	return list
}

func checkAudit(t *testing.T, what string, got, want []ports.AuditEntry) {
	t.Helper()
	norm := func(entries []ports.AuditEntry) []ports.AuditEntry {
		out := make([]ports.AuditEntry, len(entries))
		for i, e := range entries {
			e.At, e.Arguments = ms(e.At), normJSON(e.Arguments)
			out[i] = e
		}
		return out
	}
	for _, e := range got {
		checkUTC(t, what, &e.At)
	}
	if len(got) == 0 && len(want) == 0 {
		return
	}
	checkEqual(t, what, norm(got), norm(want))
}

// newestFirst sorts entries as ListAudit lists them.
func newestFirst(entries []ports.AuditEntry) []ports.AuditEntry {
	entries = slices.Clone(entries)
	slices.SortFunc(entries, func(a, b ports.AuditEntry) int {
		if c := ms(b.At).Compare(ms(a.At)); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return entries
}

func testAuditRoundTrip(t *testing.T, s cloudStores) {
	ctx := t.Context()
	org, a := newCloud(t, s)
	ok := newAuditEntry(org.ID, a.ID, base)
	failed := newAuditEntry(org.ID, a.ID, base.Add(time.Second))
	failed.Action, failed.Resource, failed.Outcome = "lambda.invoke", "function/resize «images» ✓", ports.AuditFailed
	failed.Arguments = json.RawMessage(`{"payload": {"nested": [1, 2.5, "x\n"]}, "dry_run": false}`)
	failed.Error = "upstream: AccessDenied\n(403)"
	refused := newAuditEntry(org.ID, a.ID, base.Add(2*time.Second))
	refused.Outcome, refused.Arguments, refused.Error = ports.AuditRefused, nil, "the account is read-only"
	noAccount := newAuditEntry(org.ID, "", base.Add(3*time.Second))
	for _, e := range []ports.AuditEntry{ok, failed, refused, noAccount} {
		mustRecordAudit(t, s, e)
	}
	checkAudit(t, "ListAudit", mustListAudit(t, s, org.ID, ""), []ports.AuditEntry{noAccount, refused, failed, ok})
	got := mustListAudit(t, s, org.ID, a.ID)
	checkAudit(t, "ListAudit of the account", got, []ports.AuditEntry{refused, failed, ok})
	if len(got) == 3 && got[0].Arguments != nil {
		t.Errorf("ListAudit: arguments recorded empty read back %q, want nil", got[0].Arguments)
	}

	dup := newAuditEntry(org.ID, a.ID, base)
	dup.ID = ok.ID
	checkConflict(t, "RecordAudit with a taken id", s.Audit.RecordAudit(ctx, dup))
	checkErr(t, "RecordAudit in a missing org", s.Audit.RecordAudit(ctx, newAuditEntry(newID(), a.ID, base)), ports.ErrNotFound)
	for _, outcome := range []string{"", "denied", "OK"} {
		bad := newAuditEntry(org.ID, a.ID, base)
		bad.Outcome = outcome
		checkInvalidField(t, fmt.Sprintf("RecordAudit with outcome %q", outcome), s.Audit.RecordAudit(ctx, bad), "outcome")
	}
	checkAudit(t, "ListAudit after failed records", mustListAudit(t, s, org.ID, ""), []ports.AuditEntry{noAccount, refused, failed, ok})
	if n := len(mustListAudit(t, s, org.ID, newID())); n != 0 {
		t.Errorf("ListAudit of an account without entries = %d entries", n)
	}
}

// listAllAudit follows the pages of ListAudit of the size given and returns
// the entries and the page sizes.
func listAllAudit(t *testing.T, s cloudStores, orgID, accountID string, limit int) ([]ports.AuditEntry, []int) {
	t.Helper()
	var all []ports.AuditEntry
	var sizes []int
	cursor := ""
	for range 300 {
		page, next, err := s.Audit.ListAudit(t.Context(), orgID, accountID, ports.Page{Limit: limit, Cursor: cursor})
		if err != nil {
			t.Fatalf("ListAudit(cursor %q): %v", cursor, err)
		}
		all = append(all, page...)
		sizes = append(sizes, len(page))
		if next == "" {
			return all, sizes
		}
		cursor = next
	}
	t.Fatalf("ListAudit: pages do not end")
	return nil, nil
}

func testListAuditPages(t *testing.T, s cloudStores) {
	ctx := t.Context()
	org, a := newCloud(t, s)
	b := mustCreateCloudAccount(t, s, newAccessKeyAccount(org.ID))
	other, theirs := newCloud(t, s)
	var all, ofA, ofB []ports.AuditEntry
	// Seconds after base in no order; ties that only the id orders span pages.
	for i, seconds := range []int{2, 0, 3, 2, 2, 1, 2, 0, 5, 2} {
		account := a
		if i%3 == 2 {
			account = b
		}
		e := mustRecordAudit(t, s, newAuditEntry(org.ID, account.ID, base.Add(time.Duration(seconds)*time.Second)))
		all = append(all, e)
		if account.ID == a.ID {
			ofA = append(ofA, e)
		} else {
			ofB = append(ofB, e)
		}
		mustRecordAudit(t, s, newAuditEntry(other.ID, theirs.ID, e.At))
		mustRecordAudit(t, s, newAuditEntry(other.ID, a.ID, e.At)) // another org naming this org's account
	}
	for _, tc := range []struct {
		name, accountID string
		limit           int
		want            []ports.AuditEntry
		sizes           []int
	}{
		{"the org", "", 3, all, []int{3, 3, 3, 1}},
		{"the org", "", 2, all, []int{2, 2, 2, 2, 2}},
		{"the org", "", 1, all, []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
		{"account a", a.ID, 3, ofA, []int{3, 3, 1}},
		{"account b", b.ID, 2, ofB, []int{2, 1}},
	} {
		got, sizes := listAllAudit(t, s, org.ID, tc.accountID, tc.limit)
		what := fmt.Sprintf("pages of %d of ListAudit of %s", tc.limit, tc.name)
		checkEqual(t, what+": sizes", sizes, tc.sizes)
		checkAudit(t, what, got, newestFirst(tc.want))
	}

	// A cursor continues after its entry, and pages after it do not see
	// entries recorded since at a later time.
	first, cursor, err := s.Audit.ListAudit(ctx, org.ID, "", ports.Page{Limit: 4})
	if err != nil || len(first) != 4 || cursor == "" {
		t.Fatalf("ListAudit(limit 4) = %d entries, next %q, %v", len(first), cursor, err)
	}
	mustRecordAudit(t, s, newAuditEntry(org.ID, a.ID, base.Add(time.Hour)))
	rest, next, err := s.Audit.ListAudit(ctx, org.ID, "", ports.Page{Limit: 200, Cursor: cursor})
	if err != nil || next != "" {
		t.Fatalf("ListAudit after the first page = next %q, %v", next, err)
	}
	checkAudit(t, "ListAudit after the first page", rest, newestFirst(all)[4:])

	empty, next, err := s.Audit.ListAudit(ctx, mustCreateOrg(t, s.Identity, newOrg()).ID, "", ports.Page{})
	if err != nil || len(empty) != 0 || next != "" {
		t.Errorf("ListAudit of an org without entries = %d, %q, %v; want none", len(empty), next, err)
	}
}

func testListAuditLimits(t *testing.T, s cloudStores) {
	ctx := t.Context()
	org, a := newCloud(t, s)
	const total = 201
	var want []ports.AuditEntry
	err := s.Tx.WithinTx(ctx, func(ctx context.Context) error {
		for i := range total {
			e := newAuditEntry(org.ID, a.ID, base.Add(time.Duration(i%7)*time.Second))
			if err := s.Audit.RecordAudit(ctx, e); err != nil {
				return err
			}
			want = append(want, e)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("RecordAudit: %v", err)
	}
	for _, accountID := range []string{"", a.ID} {
		for _, tc := range []struct {
			limit, want int
		}{
			{0, 50}, {-1, 50}, {1, 1}, {200, 200}, {201, 200}, {10_000, 200},
		} {
			page, next, err := s.Audit.ListAudit(ctx, org.ID, accountID, ports.Page{Limit: tc.limit})
			if err != nil {
				t.Fatalf("ListAudit(limit %d): %v", tc.limit, err)
			}
			if len(page) != tc.want || next == "" {
				t.Errorf("ListAudit(account %q, limit %d) = %d entries, next %q; want %d and a next cursor", accountID, tc.limit, len(page), next, tc.want)
			}
		}
		all, sizes := listAllAudit(t, s, org.ID, accountID, 0)
		checkEqual(t, "sizes of the default pages", sizes, []int{50, 50, 50, 50, 1})
		checkAudit(t, "default pages of ListAudit", all, newestFirst(want))
	}
}

func testListAuditMalformedCursor(t *testing.T, s cloudStores) {
	org, a := newCloud(t, s)
	mustRecordAudit(t, s, newAuditEntry(org.ID, a.ID, base))
	// A page of accounts continues after a name, not a time.
	mustCreateCloudAccount(t, s, newCloudAccount(org.ID))
	_, accountCursor, err := s.Accounts.ListCloudAccounts(t.Context(), org.ID, ports.Page{Limit: 1})
	if err != nil || accountCursor == "" {
		t.Fatalf("ListCloudAccounts(limit 1) = next %q, %v", accountCursor, err)
	}
	for _, cursor := range append(malformedCursors(), accountCursor) {
		for _, accountID := range []string{"", a.ID} {
			_, _, err := s.Audit.ListAudit(t.Context(), org.ID, accountID, ports.Page{Cursor: cursor})
			checkInvalidField(t, fmt.Sprintf("ListAudit(account %q, cursor %q)", accountID, cursor), err, "cursor")
		}
	}
}

func testAuditOrgIsolation(t *testing.T, s cloudStores) {
	org, a := newCloud(t, s)
	mine := mustRecordAudit(t, s, newAuditEntry(org.ID, a.ID, base))
	stranger, theirs := newCloud(t, s)
	// Another org's entry naming this org's account, as a forged request would.
	forged := mustRecordAudit(t, s, newAuditEntry(stranger.ID, a.ID, base.Add(time.Second)))
	own := mustRecordAudit(t, s, newAuditEntry(stranger.ID, theirs.ID, base.Add(2*time.Second)))
	checkAudit(t, "ListAudit of the org", mustListAudit(t, s, org.ID, ""), []ports.AuditEntry{mine})
	checkAudit(t, "ListAudit of the org's account", mustListAudit(t, s, org.ID, a.ID), []ports.AuditEntry{mine})
	checkAudit(t, "ListAudit of the org filtered by another org's account", mustListAudit(t, s, org.ID, theirs.ID), nil)
	checkAudit(t, "ListAudit of the other org", mustListAudit(t, s, stranger.ID, ""), []ports.AuditEntry{own, forged})
	checkAudit(t, "ListAudit of the other org filtered by the org's account", mustListAudit(t, s, stranger.ID, a.ID), []ports.AuditEntry{forged})
	for name, orgID := range map[string]string{"no org": "", "a missing org": newID()} {
		checkAudit(t, "ListAudit by "+name, mustListAudit(t, s, orgID, ""), nil)
		checkAudit(t, "ListAudit of the account by "+name, mustListAudit(t, s, orgID, a.ID), nil)
	}
}

func testDeleteCloudAccount(t *testing.T, s cloudStores) {
	ctx := t.Context()
	org, a := newCloud(t, s)
	kept := mustCreateCloudAccount(t, s, newAccessKeyAccount(org.ID))
	report := newCostReport(1)
	for _, key := range []string{"k1", "k2"} {
		mustPutCachedCost(t, s, a.ID, key, report, base.Add(time.Hour))
		mustPutCachedCost(t, s, kept.ID, key, report, base.Add(time.Hour))
	}
	entries := []ports.AuditEntry{
		mustRecordAudit(t, s, newAuditEntry(org.ID, a.ID, base.Add(2*time.Second))),
		mustRecordAudit(t, s, newAuditEntry(org.ID, a.ID, base.Add(time.Second))),
	}
	keptEntry := mustRecordAudit(t, s, newAuditEntry(org.ID, kept.ID, base))

	if err := s.Accounts.DeleteCloudAccount(ctx, org.ID, a.ID); err != nil {
		t.Fatalf("DeleteCloudAccount: %v", err)
	}
	_, err := s.Accounts.GetCloudAccount(ctx, org.ID, a.ID)
	checkNotFound(t, "GetCloudAccount after DeleteCloudAccount", err, "cloud account", a.ID)
	checkNotFound(t, "DeleteCloudAccount twice", s.Accounts.DeleteCloudAccount(ctx, org.ID, a.ID), "cloud account", a.ID)
	checkNotFound(t, "RecordCloudTest of a deleted account",
		s.Accounts.RecordCloudTest(ctx, org.ID, a.ID, ports.CloudOK, "", base.Add(time.Hour)), "cloud account", a.ID)
	checkCloudAccounts(t, "ListCloudAccounts after DeleteCloudAccount", mustListCloudAccounts(t, s, org.ID), []ports.CloudAccount{kept})
	for _, key := range []string{"k1", "k2"} {
		checkCached(t, "GetCachedCost of the deleted account", s, a.ID, key, base, nil)
		checkCached(t, "GetCachedCost of the kept account", s, kept.ID, key, base, &report)
	}
	checkErr(t, "PutCachedCost for the deleted account", s.Costs.PutCachedCost(ctx, a.ID, "k1", report, base.Add(time.Hour)), ports.ErrNotFound)
	checkAudit(t, "ListAudit of the deleted account", mustListAudit(t, s, org.ID, a.ID), entries)
	checkAudit(t, "ListAudit after DeleteCloudAccount", mustListAudit(t, s, org.ID, ""), append(slices.Clone(entries), keptEntry))
	after := mustRecordAudit(t, s, newAuditEntry(org.ID, a.ID, base.Add(time.Minute)))
	checkAudit(t, "ListAudit of the deleted account after another entry", mustListAudit(t, s, org.ID, a.ID), append([]ports.AuditEntry{after}, entries...))
	missing := newID()
	checkNotFound(t, "DeleteCloudAccount of a missing account", s.Accounts.DeleteCloudAccount(ctx, org.ID, missing), "cloud account", missing)
}

// testRaceCreateCloudAccount creates accounts of one name from many callers
// at once: exactly one is stored.
func testRaceCreateCloudAccount(t *testing.T, s cloudStores) {
	org := mustCreateOrg(t, s.Identity, newOrg())
	accounts := make([]ports.CloudAccount, 20)
	for i := range accounts {
		accounts[i] = newCloudAccount(org.ID)
		accounts[i].Name = "production"
	}
	errs := race(len(accounts), func(i int) error {
		return s.Accounts.CreateCloudAccount(t.Context(), accounts[i])
	})
	winner := oneWinner(t, "CreateCloudAccount", errs, ports.ErrConflict)
	if winner < 0 {
		t.FailNow()
	}
	checkCloudAccounts(t, "ListCloudAccounts after the race", mustListCloudAccounts(t, s, org.ID), accounts[winner:winner+1])
}

// testRacePutCachedCost caches reports under one key from many callers at
// once: every call succeeds and one of the reports is cached.
func testRacePutCachedCost(t *testing.T, s cloudStores) {
	_, a := newCloud(t, s)
	reports := make([]ports.CostReport, 20)
	for i := range reports {
		reports[i] = newCostReport(i)
	}
	errs := race(len(reports), func(i int) error {
		return s.Costs.PutCachedCost(t.Context(), a.ID, "2030-05-01|2030-05-04|DAILY|SERVICE", reports[i], base.Add(time.Duration(i+1)*time.Hour))
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("PutCachedCost %d: %v", i, err)
		}
	}
	got, ok := getCachedCost(t, s, a.ID, "2030-05-01|2030-05-04|DAILY|SERVICE", base)
	if !ok {
		t.Fatalf("GetCachedCost after the race found nothing")
	}
	i := slices.IndexFunc(reports, func(r ports.CostReport) bool { return r.Periods[0].Total == got.Periods[0].Total })
	if i < 0 {
		t.Fatalf("GetCachedCost after the race = %+v, none of the reports put", got)
	}
	checkCostReport(t, "GetCachedCost after the race", got, reports[i])
	// The winner's expiry came with it.
	checkCached(t, "GetCachedCost just before the winner's expiry", s, a.ID, "2030-05-01|2030-05-04|DAILY|SERVICE",
		base.Add(time.Duration(i+1)*time.Hour-time.Millisecond), &reports[i])
	checkCached(t, "GetCachedCost at the winner's expiry", s, a.ID, "2030-05-01|2030-05-04|DAILY|SERVICE",
		base.Add(time.Duration(i+1)*time.Hour), nil)
}

// testRaceRecordAudit appends entries from many callers at once: all are kept.
func testRaceRecordAudit(t *testing.T, s cloudStores) {
	org, a := newCloud(t, s)
	entries := make([]ports.AuditEntry, 20)
	for i := range entries {
		entries[i] = newAuditEntry(org.ID, a.ID, base.Add(time.Duration(i%3)*time.Second))
	}
	errs := race(len(entries), func(i int) error { return s.Audit.RecordAudit(t.Context(), entries[i]) })
	for i, err := range errs {
		if err != nil {
			t.Errorf("RecordAudit %d: %v", i, err)
		}
	}
	checkAudit(t, "ListAudit after the race", mustListAudit(t, s, org.ID, ""), newestFirst(entries))
}

// testCloudTxJoins calls every method inside one transaction, checks that
// the reads see the transaction's writes, and that a rollback undoes them.
func testCloudTxJoins(t *testing.T, s cloudStores) {
	// A method writing outside the transaction may wait for it forever on a
	// single-writer database: bound the wait.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	org := mustCreateOrg(t, s.Identity, newOrg())
	a, gone := newCloudAccount(org.ID), newAccessKeyAccount(org.ID)
	entry := newAuditEntry(org.ID, a.ID, base)
	report := newCostReport(1)
	build := newCloudBuild(org.ID, a.ID)
	extID := "devpilot-" + newID()
	err := s.Tx.WithinTx(ctx, func(ctx context.Context) error {
		var failedErr error
		step := func(what string, err error) bool {
			if err != nil && failedErr == nil {
				t.Errorf("%s inside the transaction: %v", what, err)
				failedErr = err
			}
			return failedErr == nil
		}
		_ = step("CreateCloudAccount", s.Accounts.CreateCloudAccount(ctx, a)) &&
			step("CreateCloudAccount", s.Accounts.CreateCloudAccount(ctx, gone)) &&
			step("RecordCloudTest", s.Accounts.RecordCloudTest(ctx, org.ID, a.ID, ports.CloudOK, "", base.Add(time.Minute))) &&
			step("PutCachedCost", s.Costs.PutCachedCost(ctx, a.ID, "k", report, base.Add(time.Hour))) &&
			step("PutCachedCost", s.Costs.PutCachedCost(ctx, gone.ID, "k", report, base.Add(time.Hour))) &&
			step("DeleteCloudAccount", s.Accounts.DeleteCloudAccount(ctx, org.ID, gone.ID)) &&
			step("RecordAudit", s.Audit.RecordAudit(ctx, entry)) &&
			step("RecordCloudBuild", s.Accounts.RecordCloudBuild(ctx, build))
		if failedErr != nil {
			return failedErr
		}
		got, err := s.Accounts.GetCloudAccount(ctx, org.ID, a.ID)
		if step("GetCloudAccount", err) && got.Status != ports.CloudOK {
			t.Errorf("GetCloudAccount inside the transaction = %+v, want its test recorded", got)
		}
		list, _, err := s.Accounts.ListCloudAccounts(ctx, org.ID, ports.Page{})
		if step("ListCloudAccounts", err) && len(list) != 1 {
			t.Errorf("ListCloudAccounts inside the transaction = %d accounts, want 1", len(list))
		}
		_, found, err := s.Costs.GetCachedCost(ctx, a.ID, "k", base)
		if step("GetCachedCost", err) && !found {
			t.Errorf("GetCachedCost inside the transaction found nothing")
		}
		_, found, err = s.Costs.GetCachedCost(ctx, gone.ID, "k", base)
		if step("GetCachedCost", err) && found {
			t.Errorf("GetCachedCost of an account deleted inside the transaction found a report")
		}
		entries, _, err := s.Audit.ListAudit(ctx, org.ID, a.ID, ports.Page{})
		if step("ListAudit", err) && len(entries) != 1 {
			t.Errorf("ListAudit inside the transaction = %d entries, want 1", len(entries))
		}
		gotBuild, err := s.Accounts.GetCloudBuild(ctx, org.ID, build.ID)
		if step("GetCloudBuild", err) && gotBuild.JobID != build.JobID {
			t.Errorf("GetCloudBuild inside the transaction = %+v, want %+v", gotBuild, build)
		}
		id, err := s.Accounts.OrgExternalID(ctx, org.ID, extID, base)
		if step("OrgExternalID", err) && id != extID {
			t.Errorf("OrgExternalID inside the transaction = %q, want %q", id, extID)
		}
		if failedErr != nil {
			return failedErr
		}
		return errAbort
	})
	if !errors.Is(err, errAbort) {
		t.Fatalf("WithinTx = %v, want fn's error", err)
	}
	_, err = s.Accounts.GetCloudAccount(t.Context(), org.ID, a.ID)
	checkNotFound(t, "GetCloudAccount after rollback", err, "cloud account", a.ID)
	checkCloudAccounts(t, "ListCloudAccounts after rollback", mustListCloudAccounts(t, s, org.ID), nil)
	checkCached(t, "GetCachedCost after rollback", s, a.ID, "k", base, nil)
	checkAudit(t, "ListAudit after rollback", mustListAudit(t, s, org.ID, ""), nil)
	_, err = s.Accounts.GetCloudBuild(t.Context(), org.ID, build.ID)
	checkNotFound(t, "GetCloudBuild after rollback", err, "cloud build", build.ID)
	if id, err := s.Accounts.OrgExternalID(t.Context(), org.ID, "devpilot-after", base); err != nil || id != "devpilot-after" {
		t.Errorf("OrgExternalID after rollback = %q, %v; want the new candidate", id, err)
	}
}

// testOrgExternalID: the first candidate an org is given stays its external
// id; no other org can take it.
func testOrgExternalID(t *testing.T, s cloudStores) {
	ctx := t.Context()
	org, other := mustCreateOrg(t, s.Identity, newOrg()), mustCreateOrg(t, s.Identity, newOrg())
	_, err := s.Accounts.OrgExternalID(ctx, org.ID, "", base)
	checkInvalidField(t, "OrgExternalID without a candidate", err, "external_id")
	first := "devpilot-" + newID()
	for i, candidate := range []string{first, "devpilot-" + newID(), ""} {
		got, err := s.Accounts.OrgExternalID(ctx, org.ID, candidate, base.Add(time.Duration(i)*time.Second))
		if err != nil || got != first {
			t.Errorf("OrgExternalID call %d = %q, %v; want %q", i, got, err, first)
		}
	}
	_, err = s.Accounts.OrgExternalID(ctx, other.ID, first, base)
	checkErr(t, "OrgExternalID of another org with the first org's id", err, ports.ErrConflict)
	second := "devpilot-" + newID()
	if got, err := s.Accounts.OrgExternalID(ctx, other.ID, second, base); err != nil || got != second {
		t.Errorf("OrgExternalID of the other org = %q, %v; want %q", got, err, second)
	}
	_, err = s.Accounts.OrgExternalID(ctx, newID(), "devpilot-"+newID(), base)
	checkErr(t, "OrgExternalID of a missing org", err, ports.ErrNotFound)
}

// testRaceOrgExternalID asks for an org's external id from many callers at
// once, each with its own candidate: all get the same one, a candidate.
func testRaceOrgExternalID(t *testing.T, s cloudStores) {
	org := mustCreateOrg(t, s.Identity, newOrg())
	candidates := make([]string, 20)
	for i := range candidates {
		candidates[i] = "devpilot-" + newID()
	}
	got := make([]string, len(candidates))
	errs := race(len(candidates), func(i int) error {
		var err error
		got[i], err = s.Accounts.OrgExternalID(t.Context(), org.ID, candidates[i], base)
		return err
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("OrgExternalID %d: %v", i, err)
		}
	}
	if !slices.Contains(candidates, got[0]) {
		t.Fatalf("OrgExternalID after the race = %q, none of the candidates", got[0])
	}
	for i := range got {
		if got[i] != got[0] {
			t.Errorf("OrgExternalID %d = %q, another caller got %q", i, got[i], got[0])
		}
	}
}

func newCloudBuild(orgID, accountID string) ports.CloudBuild {
	return ports.CloudBuild{ID: newID(), OrgID: orgID, AccountID: accountID, AppID: "d2k4m6n8p0q2r4",
		Branch: "feature/ünïcode", JobID: "42", CreatedAt: base.Add(1234 * time.Millisecond)}
}

func testCloudBuildRoundTrip(t *testing.T, s cloudStores) {
	ctx := t.Context()
	org, a := newCloud(t, s)
	other, _ := newCloud(t, s)
	b := newCloudBuild(org.ID, a.ID)
	if err := s.Accounts.RecordCloudBuild(ctx, b); err != nil {
		t.Fatalf("RecordCloudBuild: %v", err)
	}
	got, err := s.Accounts.GetCloudBuild(ctx, org.ID, b.ID)
	if err != nil {
		t.Fatalf("GetCloudBuild: %v", err)
	}
	checkUTC(t, "GetCloudBuild", &got.CreatedAt)
	want := b
	got.CreatedAt, want.CreatedAt = ms(got.CreatedAt), ms(b.CreatedAt)
	checkEqual(t, "GetCloudBuild", got, want)
	checkErr(t, "RecordCloudBuild of a taken id", s.Accounts.RecordCloudBuild(ctx, b), ports.ErrConflict)
	missingAccount := newCloudBuild(org.ID, newID())
	checkErr(t, "RecordCloudBuild of a missing account", s.Accounts.RecordCloudBuild(ctx, missingAccount), ports.ErrNotFound)
	_, err = s.Accounts.GetCloudBuild(ctx, other.ID, b.ID)
	checkNotFound(t, "GetCloudBuild of another org", err, "cloud build", b.ID)
	missing := newID()
	_, err = s.Accounts.GetCloudBuild(ctx, org.ID, missing)
	checkNotFound(t, "GetCloudBuild of a missing build", err, "cloud build", missing)
	if err := s.Accounts.DeleteCloudAccount(ctx, org.ID, a.ID); err != nil {
		t.Fatalf("DeleteCloudAccount: %v", err)
	}
	_, err = s.Accounts.GetCloudBuild(ctx, org.ID, b.ID)
	checkNotFound(t, "GetCloudBuild after its account was deleted", err, "cloud build", b.ID)
}
