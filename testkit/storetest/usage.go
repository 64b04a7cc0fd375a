package storetest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// usageStores is the usage store under test.
type usageStores struct {
	Usage ports.UsageStore
}

// TestUsage runs the contract of ports.UsageStore. newStores is called by
// every subtest (subtests run in parallel) and may return stores over a
// shared database; each subtest uses organisations of its own.
func TestUsage(t *testing.T, newStores Factory) {
	runSuite(t, view(newStores, Stores.usage, needUsage), []suiteCase[usageStores]{
		{"Empty", testUsageEmpty},
		{"AddAndGroup", testUsageAddAndGroup},
		{"DaysAreUTC", testUsageDaysAreUTC},
		{"RangeAndUser", testUsageRangeAndUser},
		{"OrgIsolation", testUsageOrgIsolation},
		{"Invalid", testUsageInvalid},
		{"RaceAdd", testUsageRaceAdd},
		{"KeyedOnce", testUsageKeyedOnce},
		{"RaceKeyed", testUsageRaceKeyed},
		{"PruneKeys", testUsagePruneKeys},
	})
}

var usageDay = time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)

func day(n int) time.Time { return usageDay.AddDate(0, 0, n) }

func mustAddUsage(t *testing.T, s usageStores, r ports.UsageRecord) {
	t.Helper()
	if err := s.Usage.AddUsage(t.Context(), r); err != nil {
		t.Fatalf("AddUsage(%+v): %v", r, err)
	}
}

func mustSumUsage(t *testing.T, s usageStores, q ports.UsageQuery) []ports.UsageTotal {
	t.Helper()
	got, err := s.Usage.SumUsage(t.Context(), q)
	if err != nil {
		t.Fatalf("SumUsage(%+v): %v", q, err)
	}
	if len(got) == 0 {
		return nil
	}
	return got
}

func usageOf(org, user, model string, f ports.Feature, on time.Time, prompt, completion int64) ports.UsageRecord {
	return ports.UsageRecord{Attribution: ports.Attribution{OrgID: org, UserID: user, Feature: f}, Model: model, Day: on,
		PromptTokens: prompt, CompletionTokens: completion, Calls: 1}
}

func testUsageEmpty(t *testing.T, s usageStores) {
	org := newID()
	for _, g := range []ports.UsageGroup{"", ports.UsageByDay, ports.UsageByModel, ports.UsageByUser, ports.UsageByFeature} {
		if got := mustSumUsage(t, s, ports.UsageQuery{OrgID: org, From: day(0), To: day(30), GroupBy: g}); got != nil {
			t.Errorf("group %q of an org without usage: %+v", g, got)
		}
	}
}

func testUsageAddAndGroup(t *testing.T, s usageStores) {
	org, ann, bo := newID(), newID(), newID()
	for _, r := range []ports.UsageRecord{
		usageOf(org, ann, "gpt-a", ports.FeatureChat, day(0), 100, 10),
		usageOf(org, ann, "gpt-a", ports.FeatureChat, day(0).Add(13*time.Hour), 50, 5), // the same row
		usageOf(org, ann, "gpt-b", ports.FeatureTitle, day(1), 7, 3),
		usageOf(org, bo, "gpt-a", ports.FeatureSpec, day(1), 1000, 400),
		usageOf(org, "", "gpt-b", ports.FeatureContent, day(2), 20, 80),
	} {
		mustAddUsage(t, s, r)
	}
	q := ports.UsageQuery{OrgID: org, From: day(0), To: day(2)}
	checkEqual(t, "total", mustSumUsage(t, s, q), []ports.UsageTotal{{Key: "", PromptTokens: 1177, CompletionTokens: 498, Calls: 5}})
	q.GroupBy = ports.UsageByDay
	checkEqual(t, "by day", mustSumUsage(t, s, q), []ports.UsageTotal{
		{Key: "2026-11-03", PromptTokens: 150, CompletionTokens: 15, Calls: 2},
		{Key: "2026-11-04", PromptTokens: 1007, CompletionTokens: 403, Calls: 2},
		{Key: "2026-11-05", PromptTokens: 20, CompletionTokens: 80, Calls: 1},
	})
	q.GroupBy = ports.UsageByModel
	checkEqual(t, "by model", mustSumUsage(t, s, q), []ports.UsageTotal{
		{Key: "gpt-a", PromptTokens: 1150, CompletionTokens: 415, Calls: 3},
		{Key: "gpt-b", PromptTokens: 27, CompletionTokens: 83, Calls: 2},
	})
	q.GroupBy = ports.UsageByFeature
	checkEqual(t, "by feature", mustSumUsage(t, s, q), []ports.UsageTotal{
		{Key: "chat", PromptTokens: 150, CompletionTokens: 15, Calls: 2},
		{Key: "content", PromptTokens: 20, CompletionTokens: 80, Calls: 1},
		{Key: "spec", PromptTokens: 1000, CompletionTokens: 400, Calls: 1},
		{Key: "title", PromptTokens: 7, CompletionTokens: 3, Calls: 1},
	})
	q.GroupBy = ports.UsageByUser
	want := []ports.UsageTotal{
		{Key: "", PromptTokens: 20, CompletionTokens: 80, Calls: 1},
		{Key: ann, PromptTokens: 157, CompletionTokens: 18, Calls: 3},
		{Key: bo, PromptTokens: 1000, CompletionTokens: 400, Calls: 1},
	}
	if ann > bo {
		want[1], want[2] = want[2], want[1]
	}
	checkEqual(t, "by user", mustSumUsage(t, s, q), want)
}

func testUsageDaysAreUTC(t *testing.T, s usageStores) {
	org := newID()
	newYork := time.FixedZone("New York", -5*60*60)
	// 21:00 in New York on 2026-11-02 is 02:00 UTC on 2026-11-03.
	mustAddUsage(t, s, usageOf(org, "u", "m", ports.FeatureChat, time.Date(2026, 11, 2, 21, 0, 0, 0, newYork), 1, 1))
	got := mustSumUsage(t, s, ports.UsageQuery{OrgID: org, From: day(-5), To: day(5), GroupBy: ports.UsageByDay})
	checkEqual(t, "by day", got, []ports.UsageTotal{{Key: "2026-11-03", PromptTokens: 1, CompletionTokens: 1, Calls: 1}})
}

func testUsageRangeAndUser(t *testing.T, s usageStores) {
	org, ann := newID(), newID()
	for i := range 5 {
		mustAddUsage(t, s, usageOf(org, ann, "m", ports.FeatureChat, day(i), int64(i+1), 0))
		mustAddUsage(t, s, usageOf(org, "other", "m", ports.FeatureChat, day(i), 100, 0))
	}
	// From and To are days, both included, whatever their time of day.
	got := mustSumUsage(t, s, ports.UsageQuery{OrgID: org, UserID: ann, From: day(1).Add(20 * time.Hour), To: day(3).Add(time.Minute)})
	checkEqual(t, "ann, days 1 to 3", got, []ports.UsageTotal{{PromptTokens: 2 + 3 + 4, Calls: 3}})
	if got := mustSumUsage(t, s, ports.UsageQuery{OrgID: org, From: day(6), To: day(9)}); got != nil {
		t.Errorf("days without usage: %+v", got)
	}
	if got := mustSumUsage(t, s, ports.UsageQuery{OrgID: org, From: day(3), To: day(1)}); got != nil {
		t.Errorf("From after To: %+v", got)
	}
}

func testUsageOrgIsolation(t *testing.T, s usageStores) {
	a, b := newID(), newID()
	mustAddUsage(t, s, usageOf(a, "u", "m", ports.FeatureChat, day(0), 10, 1))
	mustAddUsage(t, s, usageOf(b, "u", "m", ports.FeatureChat, day(0), 20, 2))
	got := mustSumUsage(t, s, ports.UsageQuery{OrgID: a, UserID: "u", From: day(0), To: day(0)})
	checkEqual(t, "org a", got, []ports.UsageTotal{{PromptTokens: 10, CompletionTokens: 1, Calls: 1}})
}

func testUsageInvalid(t *testing.T, s usageStores) {
	org := newID()
	good := usageOf(org, "u", "m", ports.FeatureChat, day(0), 1, 1)
	bad := map[string]func(r *ports.UsageRecord){
		"no org":      func(r *ports.UsageRecord) { r.OrgID = "" },
		"no model":    func(r *ports.UsageRecord) { r.Model = "" },
		"no feature":  func(r *ports.UsageRecord) { r.Feature = "" },
		"negative":    func(r *ports.UsageRecord) { r.PromptTokens = -1 },
		"negative ct": func(r *ports.UsageRecord) { r.Calls = -1 },
		"long key":    func(r *ports.UsageRecord) { r.Key = strings.Repeat("k", ports.MaxUsageKeyLen+1) },
	}
	for name, change := range bad {
		r := good
		change(&r)
		if err := s.Usage.AddUsage(t.Context(), r); ports.KindOf(err) != ports.KindInvalid {
			t.Errorf("%s: AddUsage = %v, want invalid", name, err)
		}
	}
	if got := mustSumUsage(t, s, ports.UsageQuery{OrgID: org, From: day(0), To: day(0)}); got != nil {
		t.Errorf("invalid records were added: %+v", got)
	}
	if _, err := s.Usage.SumUsage(t.Context(), ports.UsageQuery{OrgID: org, From: day(0), To: day(0), GroupBy: "month"}); ports.KindOf(err) != ports.KindInvalid {
		t.Errorf("SumUsage by month = %v, want invalid", err)
	}
}

func testUsageRaceAdd(t *testing.T, s usageStores) {
	org := newID()
	const n = 16
	for i, err := range race(n, func(i int) error {
		return s.Usage.AddUsage(t.Context(), usageOf(org, "u", "m", ports.FeatureChat, day(0), 3, 2))
	}) {
		if err != nil {
			t.Errorf("AddUsage %d: %v", i, err)
		}
	}
	got := mustSumUsage(t, s, ports.UsageQuery{OrgID: org, From: day(0), To: day(0)})
	checkEqual(t, "after concurrent adds", got, []ports.UsageTotal{{PromptTokens: 3 * n, CompletionTokens: 2 * n, Calls: n}})
}

func keyed(r ports.UsageRecord, key string) ports.UsageRecord {
	r.Key = key
	return r
}

func testUsageKeyedOnce(t *testing.T, s usageStores) {
	org := newID()
	k1, k2 := "voice:"+newID()+":resp_1", "voice:"+newID()+":resp_2"
	mustAddUsage(t, s, keyed(usageOf(org, "u", "m", ports.FeatureVoice, day(0), 100, 40), k1))
	// The same key again, even with other counts or on another day: nothing.
	mustAddUsage(t, s, keyed(usageOf(org, "u", "m", ports.FeatureVoice, day(0), 100, 40), k1))
	mustAddUsage(t, s, keyed(usageOf(org, "u", "m", ports.FeatureVoice, day(1), 7, 7), k1))
	mustAddUsage(t, s, keyed(usageOf(org, "u", "m", ports.FeatureVoice, day(0), 5, 3), k2))
	// Unkeyed records still add up.
	mustAddUsage(t, s, usageOf(org, "u", "m", ports.FeatureVoice, day(0), 1, 1))
	mustAddUsage(t, s, usageOf(org, "u", "m", ports.FeatureVoice, day(0), 1, 1))
	got := mustSumUsage(t, s, ports.UsageQuery{OrgID: org, From: day(0), To: day(1), GroupBy: ports.UsageByFeature})
	checkEqual(t, "keyed once", got, []ports.UsageTotal{{Key: "voice", PromptTokens: 107, CompletionTokens: 45, Calls: 4}})
	// An invalid keyed record does not take its key.
	k3 := "voice:" + newID() + ":resp_3"
	bad := keyed(usageOf(org, "u", "", ports.FeatureVoice, day(0), 1, 1), k3)
	if err := s.Usage.AddUsage(t.Context(), bad); ports.KindOf(err) != ports.KindInvalid {
		t.Fatalf("AddUsage without a model = %v, want invalid", err)
	}
	mustAddUsage(t, s, keyed(usageOf(org, "u", "m", ports.FeatureVoice, day(0), 10, 0), k3))
	got = mustSumUsage(t, s, ports.UsageQuery{OrgID: org, From: day(0), To: day(1)})
	checkEqual(t, "after the retried key", got, []ports.UsageTotal{{PromptTokens: 117, CompletionTokens: 45, Calls: 5}})
}

func testUsageRaceKeyed(t *testing.T, s usageStores) {
	org := newID()
	key := "voice:" + newID() + ":resp_race"
	const n = 16
	for i, err := range race(n, func(i int) error {
		return s.Usage.AddUsage(t.Context(), keyed(usageOf(org, "u", "m", ports.FeatureVoice, day(0), 3, 2), key))
	}) {
		if err != nil {
			t.Errorf("AddUsage %d: %v", i, err)
		}
	}
	got := mustSumUsage(t, s, ports.UsageQuery{OrgID: org, From: day(0), To: day(0)})
	checkEqual(t, "after concurrent adds of one key", got, []ports.UsageTotal{{PromptTokens: 3, CompletionTokens: 2, Calls: 1}})
}

func testUsagePruneKeys(t *testing.T, s usageStores) {
	// Days long before the other subtests', whose keys stay.
	org, past := newID(), day(-400)
	old, recent := "voice:"+newID()+":old", "voice:"+newID()+":recent"
	mustAddUsage(t, s, keyed(usageOf(org, "u", "m", ports.FeatureVoice, past, 1, 0), old))
	mustAddUsage(t, s, keyed(usageOf(org, "u", "m", ports.FeatureVoice, past.AddDate(0, 0, 2), 10, 0), recent))
	// More old keys than a batch of 2: a sweep takes batches until one is short.
	for range 3 {
		mustAddUsage(t, s, keyed(usageOf(newID(), "u", "m", ports.FeatureVoice, past.AddDate(0, 0, 1), 0, 0), "voice:"+newID()+":old"))
	}
	if _, err := s.Usage.PruneUsageKeys(t.Context(), past, 0); !errors.Is(err, ports.ErrInvalid) {
		t.Errorf("PruneUsageKeys with limit 0: %v, want invalid", err)
	}
	total := 0
	for batch := 0; ; batch++ {
		n, err := s.Usage.PruneUsageKeys(t.Context(), past.AddDate(0, 0, 2).Add(5*time.Hour), 2)
		if err != nil || n > 2 || batch == 0 && n != 2 {
			t.Fatalf("PruneUsageKeys batch %d = %d, %v; want a full batch of 2, then at most 2", batch, n, err)
		}
		if total += n; n < 2 {
			break
		}
	}
	if total < 4 {
		t.Errorf("PruneUsageKeys forgot %d keys in all, want at least 4", total)
	}
	// The old key counts again, the recent one does not; the totals stay.
	mustAddUsage(t, s, keyed(usageOf(org, "u", "m", ports.FeatureVoice, past.AddDate(0, 0, 2), 100, 0), old))
	mustAddUsage(t, s, keyed(usageOf(org, "u", "m", ports.FeatureVoice, past.AddDate(0, 0, 2), 1000, 0), recent))
	got := mustSumUsage(t, s, ports.UsageQuery{OrgID: org, From: past, To: past.AddDate(0, 0, 2)})
	checkEqual(t, "after pruning", got, []ports.UsageTotal{{PromptTokens: 111, Calls: 3}})
}
