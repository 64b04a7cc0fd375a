package identity_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/ports"
)

// TestCreateOwnTokenScopes: a token is made with the scopes asked for (the
// default without), which its principal then carries; unknown scopes are
// invalid naming the field; a scoped token cannot make a wider one.
func TestCreateOwnTokenScopes(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, func(d *identity.Deps) { d.Random = nil })
	session := ports.WithPrincipal(t.Context(), ports.Principal{UserID: "u1", OrgID: "o1", Role: ports.RoleMember, Session: true})

	for _, tc := range []struct {
		ask, want []string
	}{
		{nil, ports.DefaultScopes},
		{[]string{"read"}, []string{"read"}},
		{[]string{"cloud:read", "spec:write", "cloud:read", "content"}, []string{"cloud:read", "spec:write", "content"}},
	} {
		issued, err := e.svc.CreateOwnToken(session, "t", 24*time.Hour, tc.ask)
		if err != nil {
			t.Fatalf("CreateOwnToken(%v): %v", tc.ask, err)
		}
		if !reflect.DeepEqual(issued.Record.Scopes, tc.want) {
			t.Errorf("CreateOwnToken(%v): scopes %v, want %v", tc.ask, issued.Record.Scopes, tc.want)
		}
		p, err := e.svc.Authenticate(t.Context(), issued.Token)
		if err != nil || !reflect.DeepEqual(p.Scopes, tc.want) {
			t.Errorf("Authenticate: scopes %v (%v), want %v", p.Scopes, err, tc.want)
		}
	}

	_, err := e.svc.CreateOwnToken(session, "t", 24*time.Hour, []string{"read", "cloud:admin"})
	var pe *ports.Error
	if !errors.As(err, &pe) || pe.Kind != ports.KindInvalid || len(pe.Fields) != 1 || pe.Fields[0].Field != "scopes[1]" {
		t.Errorf("unknown scope: %v, want invalid naming scopes[1]", err)
	}

	scoped := ports.WithPrincipal(t.Context(), ports.Principal{UserID: "u1", OrgID: "o1", Role: ports.RoleMember, TokenID: "x", Scopes: []string{"cloud:read", "spec"}})
	for _, ask := range [][]string{nil, {"cloud:write"}, {"read"}, {"spec", "content:read"}} {
		if _, err := e.svc.CreateOwnToken(scoped, "t", 24*time.Hour, ask); !ports.IsKind(err, ports.KindForbidden) {
			t.Errorf("a cloud:read spec token making %v: %v, want forbidden", ask, err)
		}
	}
	if _, err := e.svc.CreateOwnToken(scoped, "t", 24*time.Hour, []string{"spec:write", "cloud:read"}); err != nil {
		t.Errorf("a cloud:read spec token making a narrower one: %v", err)
	}
}

// TestIssueTokenScopes: the operator's token create takes scopes too.
func TestIssueTokenScopes(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, func(d *identity.Deps) { d.Random = nil })
	issued, err := e.svc.IssueToken(t.Context(), identity.IssueTokenInput{Email: "ops@example.com", OrgName: "acme", Scopes: []string{"scm:read", "read"}})
	if err != nil || !reflect.DeepEqual(issued.Record.Scopes, []string{"scm:read", "read"}) {
		t.Fatalf("IssueToken with scopes: %v %v", issued.Record.Scopes, err)
	}
	issued, err = e.svc.IssueToken(t.Context(), identity.IssueTokenInput{Email: "ops@example.com", OrgName: "acme"})
	if err != nil || !reflect.DeepEqual(issued.Record.Scopes, ports.DefaultScopes) {
		t.Fatalf("IssueToken without scopes: %v %v", issued.Record.Scopes, err)
	}
	_, err = e.svc.IssueToken(t.Context(), identity.IssueTokenInput{Email: "ops@example.com", OrgName: "acme", Scopes: []string{"root"}})
	var pe *ports.Error
	if !errors.As(err, &pe) || pe.Kind != ports.KindInvalid || len(pe.Fields) != 1 || pe.Fields[0].Field != "scopes[0]" {
		t.Fatalf("IssueToken with an unknown scope: %v", err)
	}
}
