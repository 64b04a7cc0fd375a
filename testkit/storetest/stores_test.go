package storetest

import (
	"reflect"
	"slices"
	"testing"
)

// Every field a suite needs is a store (or Reopen) of Stores.
func TestNeedsNameStoresFields(t *testing.T) {
	typ := reflect.TypeFor[Stores]()
	for suite, need := range map[string][]string{
		"Assistant": needAssistant, "Budgets": needBudgets, "Cloud": needCloud, "Content": needContent,
		"Idempotency": needIdempotency, "Identity": needIdentity, "Invitation": needInvitation,
		"IssueExport": needIssueExport, "Permission": needPermission, "Publish": needPublish, "Rate": needRate,
		"Retention": needRetention, "SCM": needSCM, "Spec": needSpec, "SpecDigest": needSpecDigest,
		"ToolPolicy": needToolPolicy, "Usage": needUsage,
	} {
		for _, name := range need {
			f, ok := typ.FieldByName(name)
			if !ok {
				t.Errorf("need%s names %q, not a field of Stores", suite, name)
				continue
			}
			if k := f.Type.Kind(); k != reflect.Interface && k != reflect.Func {
				t.Errorf("need%s names %q, a %s", suite, name, k)
			}
		}
	}
}

func TestMissing(t *testing.T) {
	reopen := Stores{Reopen: func(*testing.T) Stores { return Stores{} }}
	for _, tc := range []struct {
		s    Stores
		need []string
		want []string
	}{
		{Stores{}, []string{"Orgs", "Rates"}, []string{"Orgs", "Rates"}},
		{reopen, []string{"Reopen"}, nil},
		{reopen, []string{"Reopen", "Usage", "NoSuchField"}, []string{"Usage", "NoSuchField"}},
	} {
		if got := missing(tc.s, tc.need); !slices.Equal(got, tc.want) {
			t.Errorf("missing(%v) = %v, want %v", tc.need, got, tc.want)
		}
	}
}
