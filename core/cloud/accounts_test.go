package cloud_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/core/cloud"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
)

func TestCreateAccountValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, cloud.Config{})
	tests := []struct {
		name   string
		edit   func(*cloud.NewAccount)
		fields []string
	}{
		{"no name", func(a *cloud.NewAccount) { a.Name = "  " }, []string{"name"}},
		{"long name", func(a *cloud.NewAccount) { a.Name = strings.Repeat("é", 101) }, []string{"name"}},
		{"gcp", func(a *cloud.NewAccount) { a.Provider = "gcp" }, []string{"provider"}},
		{"no region", func(a *cloud.NewAccount) { a.Region = "" }, []string{"region"}},
		{"bad region", func(a *cloud.NewAccount) { a.Region = "Europe" }, []string{"region"}},
		{"no mode", func(a *cloud.NewAccount) { a.Auth.Mode = "" }, []string{"auth.mode"}},
		{"unknown mode", func(a *cloud.NewAccount) { a.Auth.Mode = "password" }, []string{"auth.mode"}},
		{"no role", func(a *cloud.NewAccount) { a.Auth.RoleARN = "" }, []string{"auth.role_arn"}},
		{"user arn", func(a *cloud.NewAccount) { a.Auth.RoleARN = "arn:aws:iam::123456789012:user/bob" }, []string{"auth.role_arn"}},
		{"short account", func(a *cloud.NewAccount) { a.Auth.RoleARN = "arn:aws:iam::12345:role/x" }, []string{"auth.role_arn"}},
		{"another external id", func(a *cloud.NewAccount) { a.Auth.ExternalID = "chosen-by-the-tenant" }, []string{"auth.external_id"}},
		{"external id with spaces", func(a *cloud.NewAccount) { a.Auth.ExternalID = "a b c" }, []string{"auth.external_id"}},
		{"role with a secret", func(a *cloud.NewAccount) { a.Auth.SecretAccessKey = secret }, []string{"auth.secret_access_key"}},
		{"everything wrong", func(a *cloud.NewAccount) { *a = cloud.NewAccount{Provider: "azure"} },
			[]string{"provider", "name", "region", "auth.mode"}},
	}
	keyTests := []struct {
		name   string
		edit   func(*cloud.NewAccount)
		fields []string
	}{
		{"no key id", func(a *cloud.NewAccount) { a.Auth.AccessKeyID = "" }, []string{"auth.access_key_id"}},
		{"lower-case key id", func(a *cloud.NewAccount) { a.Auth.AccessKeyID = "akiaiosfodnn7example" }, []string{"auth.access_key_id"}},
		{"no secret", func(a *cloud.NewAccount) { a.Auth.SecretAccessKey = "" }, []string{"auth.secret_access_key"}},
		{"secret with spaces", func(a *cloud.NewAccount) { a.Auth.SecretAccessKey = "two words" }, []string{"auth.secret_access_key"}},
		{"key with a role", func(a *cloud.NewAccount) { a.Auth.RoleARN = roleARN }, []string{"auth.role_arn"}},
	}
	check := func(name string, in cloud.NewAccount, fields []string) {
		_, err := e.svc.CreateAccount(as(admin), in)
		if !errors.Is(err, ports.ErrInvalid) || !slices.Equal(fieldsOf(err), fields) {
			t.Errorf("%s: %v (fields %v), want invalid %v", name, err, fieldsOf(err), fields)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the error shows the secret: %v", name, err)
		}
	}
	for _, tt := range tests {
		in := roleAccount("Production")
		tt.edit(&in)
		check(tt.name, in, tt.fields)
	}
	for _, tt := range keyTests {
		in := keyAccount("Production")
		tt.edit(&in)
		check(tt.name, in, tt.fields)
	}
	if len(e.storedAccounts()) != 0 || len(e.seals) != 0 || len(e.auditLog()) != 0 {
		t.Error("an invalid account was stored, sealed or audited")
	}

	// Accepted shapes: another partition, a role path, a GovCloud region, no provider.
	in := roleAccount("  Gov  ")
	in.Provider, in.Region, in.Auth.RoleARN = "", "us-gov-west-1", "arn:aws-us-gov:iam::123456789012:role/ops/devpilot"
	a, err := e.svc.CreateAccount(as(admin), in)
	if err != nil || a.Name != "Gov" || a.Provider != "aws" {
		t.Errorf("CreateAccount = %+v, %v", a, err)
	}
}

// TestExternalIDIsDevpilots: the external id of an assumed role is the one
// devpilot generated for the organisation, never one a tenant chose, so that
// no organisation can use another's role.
func TestExternalIDIsDevpilots(t *testing.T) {
	t.Parallel()
	e := newEnv(t, cloud.Config{})
	otherAdmin := ports.Principal{UserID: "user-oscar", OrgID: "org-3", Role: ports.RoleAdmin}
	ext, err := e.svc.ExternalID(as(otherAdmin))
	if err != nil || !strings.HasPrefix(ext, "devpilot-") || len(ext) < len("devpilot-")+26 {
		t.Fatalf("ExternalID = %q, %v; want a generated one", ext, err)
	}
	if again, err := e.svc.ExternalID(as(otherAdmin)); err != nil || again != ext {
		t.Errorf("ExternalID again = %q, %v; want %q", again, err, ext)
	}
	if mine, err := e.svc.ExternalID(as(alice)); err != nil || mine != externalID || mine == ext {
		t.Errorf("ExternalID of org-1 = %q, %v; want its own %q", mine, err, externalID)
	}
	e.accounts.mu.Lock()
	first, second := e.accounts.candidates[0], e.accounts.candidates[1]
	e.accounts.mu.Unlock()
	if first == second {
		t.Errorf("the candidates are not random: %q twice", first)
	}

	tests := []struct {
		name, given string
		kind        ports.Kind
	}{
		{"left out: the org's", "", ""},
		{"the org's, given", ext, ""},
		{"another org's", externalID, ports.KindInvalid},
		{"chosen by the tenant", "my-own-id", ports.KindInvalid},
	}
	for i, tt := range tests {
		in := roleAccount(fmt.Sprintf("Account %d", i))
		in.Auth.ExternalID = tt.given
		a, err := e.svc.CreateAccount(as(otherAdmin), in)
		if tt.kind != "" {
			if ports.KindOf(err) != tt.kind || !slices.Equal(fieldsOf(err), []string{"auth.external_id"}) || !strings.Contains(err.Error(), ext) {
				t.Errorf("%s: %v (fields %v), want %s naming auth.external_id and %s", tt.name, err, fieldsOf(err), tt.kind, ext)
			}
			continue
		}
		if err != nil || a.Auth.ExternalID != ext {
			t.Errorf("%s: CreateAccount = %+v, %v; want external id %s", tt.name, a.Auth, err, ext)
		}
	}
}

func TestCreateAccountIsForAdmins(t *testing.T) {
	t.Parallel()
	e := newEnv(t, cloud.Config{})
	if _, err := e.svc.CreateAccount(as(alice), keyAccount("Production")); !errors.Is(err, ports.ErrForbidden) {
		t.Errorf("member create: %v", err)
	}
	if _, err := e.svc.CreateAccount(as(alice), cloud.NewAccount{}); !errors.Is(err, ports.ErrForbidden) {
		t.Errorf("member create of an invalid account: %v", err)
	}
	if _, err := e.svc.CreateAccount(context.Background(), keyAccount("Production")); !errors.Is(err, ports.ErrUnauthenticated) {
		t.Errorf("anonymous create: %v", err)
	}
	if len(e.storedAccounts()) != 0 || len(e.seals) != 0 {
		t.Error("a refused account was stored or sealed")
	}
}

func TestCreateAccountSealsTheSecret(t *testing.T) {
	t.Parallel()
	e := newEnv(t, cloud.Config{})
	got, err := e.svc.CreateAccount(as(admin), keyAccount(" Production "))
	if err != nil {
		t.Fatal(err)
	}
	stored := e.account(got.ID)
	if len(e.seals) != 1 || e.seals[0].plaintext != secret || e.seals[0].aad != got.ID {
		t.Errorf("seal calls %+v, want the secret bound to %s", e.seals, got.ID)
	}
	if stored.Auth.SealedSecret == "" || strings.Contains(stored.Auth.SealedSecret, secret) {
		t.Errorf("stored sealed secret %q", stored.Auth.SealedSecret)
	}
	if b, _ := json.Marshal(stored); strings.Contains(string(b), secret) {
		t.Errorf("the store received the secret: %s", b)
	}
	want := ports.CloudAccount{ID: got.ID, OrgID: admin.OrgID, Provider: "aws", Name: "Production", Region: "us-east-1",
		Auth:   ports.CloudAuth{Mode: ports.AuthAccessKey, AccessKeyID: keyID, SealedSecret: stored.Auth.SealedSecret},
		Status: ports.CloudUntested, CreatedAt: fixture.Epoch, UpdatedAt: fixture.Epoch}
	if !equalAccounts(stored, want) {
		t.Errorf("stored %+v\nwant %+v", stored, want)
	}
	// Nothing the service returns carries the sealed secret.
	want.Auth.SealedSecret = ""
	if !equalAccounts(got, want) {
		t.Errorf("returned %+v", got)
	}
	if a, err := e.svc.GetAccount(as(alice), got.ID); err != nil || !equalAccounts(a, want) {
		t.Errorf("GetAccount = %+v, %v", a, err)
	}
	if list, next, err := e.svc.ListAccounts(as(alice), ports.Page{}); err != nil || len(list) != 1 || !equalAccounts(list[0], want) || next != "" {
		t.Errorf("ListAccounts = %+v, %q, %v", list, next, err)
	}

	// A role is stored as given, nothing sealed.
	role, err := e.svc.CreateAccount(as(admin), roleAccount("Staging"))
	if err != nil {
		t.Fatal(err)
	}
	if a := e.account(role.ID); a.Auth != (ports.CloudAuth{Mode: ports.AuthAssumeRole, RoleARN: roleARN, ExternalID: externalID}) || len(e.seals) != 1 {
		t.Errorf("stored role %+v", a.Auth)
	}
	if _, err := e.svc.CreateAccount(as(admin), roleAccount("Staging")); !errors.Is(err, ports.ErrConflict) {
		t.Errorf("a second Staging: %v", err)
	}

	// Creation is audited, without the secret.
	log := e.auditOf("account.create")
	if len(log) != 2 || log[0].AccountID != got.ID || log[0].UserID != admin.UserID || log[0].Outcome != ports.AuditOK || log[0].Resource != "Production" {
		t.Errorf("audit %+v", log)
	}
	if b, _ := json.Marshal(e.auditLog()); strings.Contains(string(b), secret) || strings.Contains(string(b), "sealed:") {
		t.Errorf("the audit log holds the secret: %s", b)
	}
}

func equalAccounts(a, b ports.CloudAccount) bool {
	return a.ID == b.ID && a.OrgID == b.OrgID && a.Provider == b.Provider && a.Name == b.Name && a.Region == b.Region &&
		a.Auth == b.Auth && a.ReadOnly == b.ReadOnly && a.Status == b.Status && a.LastError == b.LastError &&
		a.CreatedAt.Equal(b.CreatedAt) && a.UpdatedAt.Equal(b.UpdatedAt)
}

func TestAccountsBelongToTheOrg(t *testing.T) {
	t.Parallel()
	e := newEnv(t, cloud.Config{})
	id := e.add(roleAccount("Production"))
	if _, err := e.svc.GetAccount(as(other), id); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("another org gets: %v", err)
	}
	if list, _, _ := e.svc.ListAccounts(as(other), ports.Page{}); len(list) != 0 {
		t.Errorf("another org lists %+v", list)
	}
	if _, err := e.svc.GetAccount(as(alice), "nope"); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("a malformed id: %v", err)
	}
	if _, _, err := e.svc.ListAccounts(as(alice), ports.Page{Limit: 201}); !errors.Is(err, ports.ErrInvalid) {
		t.Errorf("limit 201: %v", err)
	}
	if _, err := e.svc.TestAccount(as(other), id); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("another org tests: %v", err)
	}
	if _, err := e.svc.ListClusters(as(other), id); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("another org lists clusters: %v", err)
	}

	if err := e.svc.DeleteAccount(as(alice), id); !errors.Is(err, ports.ErrForbidden) {
		t.Errorf("member delete: %v", err)
	}
	if err := e.svc.DeleteAccount(as(other), id); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("another org's admin deletes: %v", err)
	}
	if err := e.svc.DeleteAccount(as(admin), id); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteAccount(as(admin), id); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("delete twice: %v", err)
	}
	if log := e.auditOf("account.delete"); len(log) != 1 || log[0].AccountID != id || log[0].UserID != admin.UserID {
		t.Errorf("audit %+v", log)
	}
	// The deleted account's entries stay listable.
	if list, _, err := e.svc.ListAudit(as(alice), id, ports.Page{}); err != nil || len(list) != 2 || list[0].Action != "account.delete" {
		t.Errorf("ListAudit = %+v, %v", list, err)
	}
	if list, _, err := e.svc.ListAudit(as(other), "", ports.Page{}); err != nil || len(list) != 0 {
		t.Errorf("another org's audit = %+v, %v", list, err)
	}
}

func TestTestAccount(t *testing.T) {
	t.Parallel()
	upstream := &ports.Error{Kind: ports.KindUpstream, Message: "sts: AccessDenied: not authorized to perform sts:AssumeRole"}
	tests := []struct {
		name       string
		in         cloud.NewAccount
		identErr   error
		probeErr   error
		want       cloud.TestResult
		wantStatus ports.CloudAccountStatus
	}{
		{name: "ok with a role", in: roleAccount("Production"),
			want:       cloud.TestResult{OK: true, AccountID: "123456789012", ARN: "arn:aws:sts::123456789012:assumed-role/devpilot/s", LatencyMS: 250},
			wantStatus: ports.CloudOK},
		{name: "ok with a key", in: keyAccount("Production"),
			want:       cloud.TestResult{OK: true, AccountID: "123456789012", ARN: "arn:aws:sts::123456789012:assumed-role/devpilot/s", LatencyMS: 250},
			wantStatus: ports.CloudOK},
		{name: "identity refused", in: roleAccount("Production"), identErr: upstream,
			want:       cloud.TestResult{LatencyMS: 250, Error: "identity check failed: " + upstream.Message},
			wantStatus: ports.CloudFailed},
		{name: "read refused", in: keyAccount("Production"), probeErr: &ports.Error{Kind: ports.KindTimeout, Message: "ecs: ListClusters timed out"},
			want:       cloud.TestResult{AccountID: "123456789012", ARN: "arn:aws:sts::123456789012:assumed-role/devpilot/s", LatencyMS: 250, Error: "read check failed: ecs: ListClusters timed out"},
			wantStatus: ports.CloudFailed},
		{name: "a provider that leaks the secret", in: keyAccount("Production"),
			identErr:   &ports.Error{Kind: ports.KindUpstream, Message: "InvalidClientTokenId for " + secret},
			want:       cloud.TestResult{LatencyMS: 250, Error: "identity check failed: InvalidClientTokenId for [redacted]"},
			wantStatus: ports.CloudFailed},
		{name: "an error that is not a ports.Error", in: roleAccount("Production"), identErr: errors.New("dial tcp: refused"),
			want:       cloud.TestResult{LatencyMS: 250, Error: "identity check failed: internal error"},
			wantStatus: ports.CloudFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, cloud.Config{})
			id := e.add(tt.in)
			e.clock.Advance(time.Hour)
			started := e.clock.Now()
			e.prov.EXPECT().CallerIdentity(gomock.Any(), creds(tt.in)).DoAndReturn(
				func(context.Context, ports.CloudCredentials) (ports.CallerIdentity, error) {
					e.clock.Advance(250 * time.Millisecond)
					if tt.identErr != nil {
						return ports.CallerIdentity{}, tt.identErr
					}
					return ports.CallerIdentity{Account: "123456789012", ARN: "arn:aws:sts::123456789012:assumed-role/devpilot/s", UserID: "AROA:s"}, nil
				})
			if tt.identErr == nil {
				e.prov.EXPECT().Probe(gomock.Any(), creds(tt.in)).Return(tt.probeErr)
			}
			got, err := e.svc.TestAccount(as(alice), id)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("result %+v\nwant   %+v", got, tt.want)
			}
			if n := e.testsRecorded(); n != 1 {
				t.Fatalf("recorded %d tests", n)
			}
			rec := e.account(id)
			if rec.OrgID != alice.OrgID || rec.Status != tt.wantStatus || rec.LastError != tt.want.Error || rec.LastTestedAt == nil || !rec.LastTestedAt.Equal(started) {
				t.Errorf("recorded %+v", rec)
			}
			if a, _ := e.svc.GetAccount(as(alice), id); a.Status != tt.wantStatus || a.LastTestedAt == nil {
				t.Errorf("account after the test %+v", a)
			}
		})
	}
}

func TestTestAccountErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, cloud.Config{})
	if _, err := e.svc.TestAccount(as(alice), "00000000-0000-7000-8000-0000000000ff"); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("an absent account: %v", err)
	}
	// A secret that no longer opens is our fault, not the account's: no provider call, nothing recorded.
	id := e.add(keyAccount("Production"))
	e.spoil(id)
	if _, err := e.svc.TestAccount(as(alice), id); !errors.Is(err, ports.ErrInternal) {
		t.Errorf("a secret that does not open: %v", err)
	}
	if n := e.testsRecorded(); n != 0 {
		t.Errorf("recorded %d tests", n)
	}
	// A caller that gave up records nothing.
	id = e.add(roleAccount("Staging"))
	ctx, cancel := context.WithCancel(as(alice))
	e.prov.EXPECT().CallerIdentity(gomock.Any(), gomock.Any()).DoAndReturn(
		func(context.Context, ports.CloudCredentials) (ports.CallerIdentity, error) {
			cancel()
			return ports.CallerIdentity{}, context.Canceled
		})
	if _, err := e.svc.TestAccount(ctx, id); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if n := e.testsRecorded(); n != 0 {
		t.Errorf("recorded %d tests", n)
	}
}
