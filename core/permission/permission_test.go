package permission_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/memstore"
	"github.com/devpilot/devpilot/core/permission"
	"github.com/devpilot/devpilot/ports"
)

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

type seqIDs struct{ n *int }

func (s seqIDs) NewID() string {
	*s.n++
	return "01a22734-0000-7000-8000-" + time.Duration(*s.n).String()
}

func as(role ports.Role) context.Context {
	return ports.WithPrincipal(context.Background(), ports.Principal{UserID: "u-" + string(role), OrgID: "org-1", Role: role})
}

// TestPolicy: the defaults refuse a member cloud.scale with an error naming
// it, let an operator and an admin; a grant replaces the defaults; admin
// cannot be taken from policy.permissions; only its holders change the
// policy.
func TestPolicy(t *testing.T) {
	t.Parallel()
	store := memstore.New()
	if err := store.CreateOrg(context.Background(), ports.Org{ID: "org-1", Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	n := 0
	svc := permission.New(permission.Deps{Store: store, Audit: store, Clock: fixedClock{time.Unix(1e9, 0).UTC()}, IDs: seqIDs{&n}})

	err := svc.CheckTool(as(ports.RoleMember), "scale_service")
	var pe *ports.Error
	if !errors.As(err, &pe) || pe.Kind != ports.KindForbidden || pe.Code != ports.CodePermissionDenied ||
		pe.Message != "cloud.scale needs the admin or operator role" {
		t.Fatalf("member scales: %v", err)
	}
	for _, r := range []ports.Role{ports.RoleOperator, ports.RoleAdmin} {
		if err := svc.Check(as(r), ports.PermCloudScale); err != nil {
			t.Errorf("%s scales: %v", r, err)
		}
	}
	if err := svc.CheckTool(as(ports.RoleMember), "list_services"); err != nil {
		t.Errorf("a read is guarded: %v", err)
	}
	if err := svc.CheckRoute(as(ports.RoleMember), "POST", "/api/v1/infrastructure/containers/services/:service/scale"); !errors.Is(err, ports.ErrForbidden) {
		t.Errorf("the /api/v1 alias is not guarded: %v", err)
	}
	if err := svc.CheckRoute(as(ports.RoleMember), "POST", "/pse/sessions"); err != nil {
		t.Errorf("a member may not write a spec: %v", err)
	}

	if _, err := svc.Set(as(ports.RoleOperator), "cloud.scale", []ports.Role{ports.RoleMember}); !errors.Is(err, ports.ErrForbidden) {
		t.Errorf("an operator changed the policy: %v", err)
	}
	if _, err := svc.Set(as(ports.RoleAdmin), "policy.permissions", []ports.Role{ports.RoleOperator}); !errors.Is(err, ports.ErrInvalid) {
		t.Errorf("admin taken from policy.permissions: %v", err)
	}
	if _, err := svc.Set(as(ports.RoleAdmin), "cloud.nothing", nil); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("an unknown permission: %v", err)
	}
	if _, err := svc.Set(as(ports.RoleAdmin), "cloud.scale", []ports.Role{"root"}); !errors.Is(err, ports.ErrInvalid) {
		t.Errorf("an unknown role: %v", err)
	}
	e, err := svc.Set(as(ports.RoleAdmin), "cloud.scale", []ports.Role{ports.RoleMember, ports.RoleAdmin, ports.RoleMember})
	if err != nil || e.Default || len(e.Roles) != 2 || e.Roles[0] != ports.RoleAdmin || e.Roles[1] != ports.RoleMember {
		t.Fatalf("set cloud.scale: %+v, %v", e, err)
	}
	if err := svc.Check(as(ports.RoleMember), ports.PermCloudScale); err != nil {
		t.Errorf("member after the grant: %v", err)
	}
	if err := svc.Check(as(ports.RoleOperator), ports.PermCloudScale); err == nil || ports.Public(err).Message != "cloud.scale needs the admin or member role" {
		t.Errorf("operator after the grant: %v", err)
	}
	if _, err := svc.Set(as(ports.RoleAdmin), "cloud.scale", []ports.Role{}); err != nil {
		t.Fatal(err)
	}
	if err := svc.Check(as(ports.RoleAdmin), ports.PermCloudScale); err == nil || ports.Public(err).Message != "cloud.scale is allowed to no role in this organisation" {
		t.Errorf("admin after allowing nobody: %v", err)
	}
	entries, _, err := store.ListAudit(context.Background(), "org-1", "", ports.Page{Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	var sets, denied []ports.AuditEntry
	for _, e := range entries {
		switch e.Action {
		case "permission.set":
			sets = append(sets, e)
		case permission.ActionDenied:
			denied = append(denied, e)
		default:
			t.Errorf("audit entry %+v", e)
		}
	}
	if len(sets) != 2 || sets[0].Resource != "permission/cloud.scale" || sets[0].Outcome != ports.AuditOK {
		t.Errorf("audit of the changes: %+v", sets)
	}
	// The refusals of CheckTool, CheckRoute and Set are audited, oldest
	// last, each naming what was asked; Check's own are not (it is a
	// question, not an attempt).
	want := []struct{ user, resource, args string }{
		{"u-operator", "permission/policy.permissions", `{"permission":"cloud.scale"}`},
		{"u-member", "permission/cloud.scale", `{"operation":"POST /api/v1/infrastructure/containers/services/:service/scale"}`},
		{"u-member", "permission/cloud.scale", `{"tool":"scale_service"}`},
	}
	if len(denied) != len(want) {
		t.Fatalf("audited refusals: %+v", denied)
	}
	for i, w := range want {
		e := denied[i]
		if e.UserID != w.user || e.Resource != w.resource || string(e.Arguments) != w.args || e.Outcome != ports.AuditRefused ||
			!strings.Contains(e.Error, "needs the admin") {
			t.Errorf("refusal %d: %+v, want %+v", i, e, w)
		}
	}
	var nilSvc *permission.Service
	if err := nilSvc.Check(as(ports.RoleMember), ports.PermCloudScale); err != nil {
		t.Errorf("no policy refuses: %v", err)
	}
}
