package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// permissionStores are the permission grant store under test and the
// identity stores that seed the orgs owning its grants.
type permissionStores struct {
	Grants   ports.PermissionStore
	Identity identityStores
}

// TestPermissionGrants runs the contract of ports.PermissionStore.
// newStores is called by every subtest (subtests run in parallel) and may
// return stores over a shared database.
//
// Where the port leaves a case open, the suite expects times to read back in
// UTC, at least to the millisecond, and no roles to read back as nil.
func TestPermissionGrants(t *testing.T, newStores Factory) {
	runSuite(t, view(newStores, Stores.permission, needPermission), []suiteCase[permissionStores]{
		{"ListEmpty", testGrantsEmpty},
		{"SetAndList", testGrantsSetAndList},
		{"Upsert", testGrantsUpsert},
		{"OrgIsolation", testGrantsOrgIsolation},
		{"MissingOrg", testGrantsMissingOrg},
		{"RaceSet", testGrantsRace},
	})
}

func mustSetGrant(t *testing.T, s permissionStores, g ports.PermissionGrant) ports.PermissionGrant {
	t.Helper()
	if err := s.Grants.SetPermissionRoles(t.Context(), g.OrgID, g.Permission, g.Roles, g.UpdatedBy, g.UpdatedAt); err != nil {
		t.Fatalf("SetPermissionRoles(%s, %s, %v): %v", g.OrgID, g.Permission, g.Roles, err)
	}
	return g
}

func mustListGrants(t *testing.T, s permissionStores, orgID string) []ports.PermissionGrant {
	t.Helper()
	got, err := s.Grants.ListPermissionGrants(t.Context(), orgID)
	if err != nil {
		t.Fatalf("ListPermissionGrants(%s): %v", orgID, err)
	}
	return got
}

func checkGrants(t *testing.T, what string, got, want []ports.PermissionGrant) {
	t.Helper()
	norm := func(gs []ports.PermissionGrant) []ports.PermissionGrant {
		if len(gs) == 0 {
			return nil
		}
		out := make([]ports.PermissionGrant, len(gs))
		for i, g := range gs {
			g.UpdatedAt = ms(g.UpdatedAt)
			if len(g.Roles) == 0 {
				g.Roles = nil
			}
			out[i] = g
		}
		return out
	}
	for i := range got {
		checkUTC(t, what, &got[i].UpdatedAt)
	}
	checkEqual(t, what, norm(got), norm(want))
}

func newGrantOrg(t *testing.T, s permissionStores) (ports.Org, ports.User) {
	t.Helper()
	org := mustCreateOrg(t, s.Identity, newOrg())
	u := newUser(org.ID)
	u.Role = ports.RoleAdmin
	return org, mustCreateUser(t, s.Identity, u)
}

func testGrantsEmpty(t *testing.T, s permissionStores) {
	org, _ := newGrantOrg(t, s)
	if got := mustListGrants(t, s, org.ID); len(got) != 0 {
		t.Errorf("a new org's grants: %+v, want none", got)
	}
	if got := mustListGrants(t, s, newID()); len(got) != 0 {
		t.Errorf("an unknown org's grants: %+v, want none", got)
	}
}

func testGrantsSetAndList(t *testing.T, s permissionStores) {
	org, admin := newGrantOrg(t, s)
	// Set out of order: the list is ordered by permission name.
	want := []ports.PermissionGrant{
		{OrgID: org.ID, Permission: ports.PermContentPublish, Roles: []ports.Role{ports.RoleAdmin}, UpdatedBy: admin.ID, UpdatedAt: base.Add(time.Minute)},
		{OrgID: org.ID, Permission: ports.PermCloudScale, Roles: []ports.Role{ports.RoleAdmin, ports.RoleOperator, ports.RoleMember}, UpdatedBy: admin.ID, UpdatedAt: base},
		{OrgID: org.ID, Permission: ports.PermSpecWrite, Roles: nil, UpdatedBy: admin.ID, UpdatedAt: base.Add(2 * time.Minute)},
	}
	for _, g := range want {
		mustSetGrant(t, s, g)
	}
	checkGrants(t, "grants", mustListGrants(t, s, org.ID), []ports.PermissionGrant{want[1], want[0], want[2]})
}

func testGrantsUpsert(t *testing.T, s permissionStores) {
	org, admin := newGrantOrg(t, s)
	op := newUser(org.ID)
	op.Role = ports.RoleOperator // the operator role is stored like the others
	other := mustCreateUser(t, s.Identity, op)
	if u, err := s.Identity.Users.GetUser(t.Context(), other.ID); err != nil || u.Role != ports.RoleOperator {
		t.Fatalf("an operator reads back as %+v, %v", u, err)
	}
	first := mustSetGrant(t, s, ports.PermissionGrant{OrgID: org.ID, Permission: ports.PermCloudScale,
		Roles: []ports.Role{ports.RoleAdmin}, UpdatedBy: admin.ID, UpdatedAt: base})
	checkGrants(t, "after the first set", mustListGrants(t, s, org.ID), []ports.PermissionGrant{first})
	second := mustSetGrant(t, s, ports.PermissionGrant{OrgID: org.ID, Permission: ports.PermCloudScale,
		Roles: []ports.Role{ports.RoleAdmin, ports.RoleMember}, UpdatedBy: other.ID, UpdatedAt: base.Add(time.Hour)})
	checkGrants(t, "after the second set", mustListGrants(t, s, org.ID), []ports.PermissionGrant{second})
	none := mustSetGrant(t, s, ports.PermissionGrant{OrgID: org.ID, Permission: ports.PermCloudScale,
		UpdatedBy: admin.ID, UpdatedAt: base.Add(2 * time.Hour)})
	checkGrants(t, "after allowing no role", mustListGrants(t, s, org.ID), []ports.PermissionGrant{none})
}

func testGrantsOrgIsolation(t *testing.T, s permissionStores) {
	orgA, adminA := newGrantOrg(t, s)
	orgB, adminB := newGrantOrg(t, s)
	a := mustSetGrant(t, s, ports.PermissionGrant{OrgID: orgA.ID, Permission: ports.PermCloudDeploy,
		Roles: []ports.Role{ports.RoleAdmin}, UpdatedBy: adminA.ID, UpdatedAt: base})
	b := mustSetGrant(t, s, ports.PermissionGrant{OrgID: orgB.ID, Permission: ports.PermCloudDeploy,
		Roles: []ports.Role{ports.RoleMember}, UpdatedBy: adminB.ID, UpdatedAt: base.Add(time.Second)})
	bOnly := mustSetGrant(t, s, ports.PermissionGrant{OrgID: orgB.ID, Permission: ports.PermCloudAccounts,
		Roles: []ports.Role{ports.RoleAdmin, ports.RoleOperator}, UpdatedBy: adminB.ID, UpdatedAt: base})
	checkGrants(t, "org A", mustListGrants(t, s, orgA.ID), []ports.PermissionGrant{a})
	checkGrants(t, "org B", mustListGrants(t, s, orgB.ID), []ports.PermissionGrant{bOnly, b})
}

func testGrantsMissingOrg(t *testing.T, s permissionStores) {
	err := s.Grants.SetPermissionRoles(t.Context(), newID(), ports.PermCloudScale, []ports.Role{ports.RoleAdmin}, newID(), base)
	if !errors.Is(err, ports.ErrNotFound) {
		t.Fatalf("SetPermissionRoles for a missing org: %v, want not_found", err)
	}
}

func testGrantsRace(t *testing.T, s permissionStores) {
	org, admin := newGrantOrg(t, s)
	const n = 8
	rolesOf := func(i int) []ports.Role {
		if i%2 == 0 {
			return []ports.Role{ports.RoleAdmin}
		}
		return []ports.Role{ports.RoleAdmin, ports.RoleOperator}
	}
	errs := race(n, func(i int) error {
		return s.Grants.SetPermissionRoles(t.Context(), org.ID, ports.PermCloudScale, rolesOf(i), admin.ID, base.Add(time.Duration(i)*time.Second))
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("SetPermissionRoles %d: %v", i, err)
		}
	}
	got := mustListGrants(t, s, org.ID)
	if len(got) != 1 || got[0].Permission != ports.PermCloudScale {
		t.Fatalf("after racing sets: %+v, want one grant of cloud.scale", got)
	}
	i := int(ms(got[0].UpdatedAt).Sub(ms(base)).Round(time.Second) / time.Second)
	if i < 0 || i >= n || len(got[0].Roles) != len(rolesOf(i)) {
		t.Errorf("after racing sets: %+v is no single call's grant", got[0])
	}
}
