package ports_test

import (
	"slices"
	"testing"

	"github.com/devpilot/devpilot/ports"
)

func TestScopeGrammar(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"read", "write", "assistant", "spec:read", "cloud:write", "content", "voice:read", "scm:write"} {
		if !ports.ValidScope(s) {
			t.Errorf("ValidScope(%q) = false", s)
		}
	}
	for _, s := range []string{"", "admin", "read:cloud", "cloud:", "cloud:admin", "Cloud", "cloud:read:write", " read", "members"} {
		if ports.ValidScope(s) {
			t.Errorf("ValidScope(%q) = true", s)
		}
	}
	if got, err := ports.CheckScopes(nil); err != nil || !slices.Equal(got, ports.DefaultScopes) {
		t.Errorf("CheckScopes(nil) = %v, %v", got, err)
	}
}

func TestScopesAllow(t *testing.T) {
	t.Parallel()
	const r, w = false, true
	for _, tc := range []struct {
		scopes []string
		area   ports.ScopeArea
		write  bool
		want   bool
	}{
		{nil, ports.ScopeCloud, w, true},
		{[]string{"read"}, ports.ScopeCloud, r, true},
		{[]string{"read"}, ports.ScopeCloud, w, false},
		{[]string{"read"}, ports.ScopeAccount, r, true},
		{[]string{"write"}, ports.ScopeAccount, w, true},
		{[]string{"write"}, ports.ScopeSpec, r, true},
		{[]string{"cloud:read"}, ports.ScopeCloud, r, true},
		{[]string{"cloud:read"}, ports.ScopeCloud, w, false},
		{[]string{"cloud:read"}, ports.ScopeSpec, r, false},
		{[]string{"cloud:write"}, ports.ScopeCloud, r, true},
		{[]string{"cloud"}, ports.ScopeCloud, w, true},
		{[]string{"cloud", "spec"}, ports.ScopeAccount, r, false},
	} {
		if got := ports.ScopesAllow(tc.scopes, tc.area, tc.write); got != tc.want {
			t.Errorf("ScopesAllow(%v, %q, write %v) = %v", tc.scopes, tc.area, tc.write, got)
		}
	}
	if !(ports.Principal{Session: true, Scopes: []string{"read"}}).Allows(ports.ScopeCloud, w) {
		t.Error("a console session is scoped")
	}
	if !ports.ScopesWithin([]string{"spec:write"}, []string{"spec"}) || ports.ScopesWithin([]string{"read"}, []string{"spec", "cloud"}) ||
		ports.ScopesWithin(nil, []string{"read"}) || !ports.ScopesWithin([]string{"read"}, nil) {
		t.Error("ScopesWithin")
	}
}
