package cloud_test

import (
	"context"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/adapters/memstore"
	"github.com/devpilot/devpilot/core/cloud"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
	"github.com/devpilot/devpilot/testkit/mocks"
)

var (
	alice = ports.Principal{UserID: "user-alice", OrgID: "org-1", Role: ports.RoleMember}
	admin = ports.Principal{UserID: "user-admin", OrgID: "org-1", Role: ports.RoleAdmin}
	other = ports.Principal{UserID: "user-olga", OrgID: "org-2", Role: ports.RoleAdmin}
)

func as(p ports.Principal) context.Context { return ports.WithPrincipal(context.Background(), p) }

const (
	roleARN    = "arn:aws:iam::123456789012:role/devpilot"
	externalID = "devpilot-ext-1"
	keyID      = "AKIAIOSFODNN7EXAMPLE"
	secret     = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
)

var orgs = []string{"org-1", "org-2", "org-3"}

type sealCall struct{ plaintext, aad string }

// faultyAccounts is the store's CloudAccountStore with secrets to spoil;
// it counts the tests recorded and notes the external id candidates.
type faultyAccounts struct {
	ports.CloudAccountStore
	mu sync.Mutex
	// unopenable are accounts whose sealed secret reads back spoilt.
	unopenable map[string]bool
	tests      int
	candidates []string
}

func (f *faultyAccounts) GetCloudAccount(ctx context.Context, orgID, id string) (ports.CloudAccount, error) {
	a, err := f.CloudAccountStore.GetCloudAccount(ctx, orgID, id)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil && f.unopenable[id] {
		a.Auth.SealedSecret = "sealed:00:00"
	}
	return a, err
}

func (f *faultyAccounts) RecordCloudTest(ctx context.Context, orgID, id string, status ports.CloudAccountStatus, lastError string, at time.Time) error {
	err := f.CloudAccountStore.RecordCloudTest(ctx, orgID, id, status, lastError, at)
	if err == nil {
		f.mu.Lock()
		f.tests++
		f.mu.Unlock()
	}
	return err
}

func (f *faultyAccounts) OrgExternalID(ctx context.Context, orgID, candidate string, at time.Time) (string, error) {
	f.mu.Lock()
	f.candidates = append(f.candidates, candidate)
	f.mu.Unlock()
	return f.CloudAccountStore.OrgExternalID(ctx, orgID, candidate, at)
}

// countedCosts is the store's CostCacheStore noting the keys put.
type countedCosts struct {
	ports.CostCacheStore
	mu   sync.Mutex
	puts []string
}

func (c *countedCosts) PutCachedCost(ctx context.Context, accountID, key string, r ports.CostReport, expiresAt time.Time) error {
	c.mu.Lock()
	c.puts = append(c.puts, key)
	c.mu.Unlock()
	return c.CostCacheStore.PutCachedCost(ctx, accountID, key, r, expiresAt)
}

// failingAudit is the store's AuditStore failing every RecordAudit while
// err is set.
type failingAudit struct {
	ports.AuditStore
	err error
}

func (f *failingAudit) RecordAudit(ctx context.Context, a ports.AuditEntry) error {
	if f.err != nil {
		return f.err
	}
	return f.AuditStore.RecordAudit(ctx, a)
}

type env struct {
	t        *testing.T
	svc      *cloud.Service
	prov     *mocks.MockCloudProvider
	clock    *fixture.Clock
	store    *memstore.Store
	accounts *faultyAccounts
	costs    *countedCosts
	audit    *failingAudit
	mu       sync.Mutex
	seals    []sealCall
	opens    []sealCall
}

// newEnv wires a Service to a memstore holding the orgs (org-1's external
// id is externalID from the start, as if it had been generated), a provider
// mock and a cipher that seals visibly.
func newEnv(t *testing.T, cfg cloud.Config) *env {
	t.Helper()
	ctrl := gomock.NewController(t)
	store := memstore.New()
	e := &env{t: t, prov: mocks.NewMockCloudProvider(ctrl), clock: fixture.NewClock(), store: store,
		accounts: &faultyAccounts{CloudAccountStore: store, unopenable: map[string]bool{}},
		costs:    &countedCosts{CostCacheStore: store}, audit: &failingAudit{AuditStore: store}}
	for _, org := range orgs {
		if err := store.CreateOrg(t.Context(), ports.Org{ID: org, Name: org}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.OrgExternalID(t.Context(), alice.OrgID, externalID, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	cipher := mocks.NewMockCipher(ctrl)
	// The cipher "seals" as sealed:<hex aad>:<hex plaintext>, and opens only
	// with the same aad.
	cipher.EXPECT().Seal(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(plaintext, aad []byte) (string, error) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.seals = append(e.seals, sealCall{string(plaintext), string(aad)})
			return "sealed:" + hex.EncodeToString(aad) + ":" + hex.EncodeToString(plaintext), nil
		})
	cipher.EXPECT().Open(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(sealed string, aad []byte) ([]byte, error) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.opens = append(e.opens, sealCall{sealed, string(aad)})
			parts := strings.Split(sealed, ":")
			if len(parts) != 3 || parts[0] != "sealed" || parts[1] != hex.EncodeToString(aad) {
				return nil, ports.Wrap(ports.KindInternal, errors.New("message authentication failed"), "cannot open")
			}
			return hex.DecodeString(parts[2])
		})

	e.svc = cloud.New(cfg, cloud.Deps{Accounts: e.accounts, Costs: e.costs, Audit: e.audit, Provider: e.prov,
		Cipher: cipher, Clock: e.clock, IDs: &fixture.IDs{}})
	return e
}

// account returns a stored account, of whichever org.
func (e *env) account(id string) ports.CloudAccount {
	for _, org := range orgs {
		if a, err := e.store.GetCloudAccount(e.t.Context(), org, id); err == nil {
			return a
		}
	}
	return ports.CloudAccount{}
}

// storedAccounts returns the stored accounts of every org.
func (e *env) storedAccounts() []ports.CloudAccount {
	e.t.Helper()
	var out []ports.CloudAccount
	for _, org := range orgs {
		list, _, err := e.store.ListCloudAccounts(e.t.Context(), org, ports.Page{Limit: ports.MaxPageLimit})
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, list...)
	}
	return out
}

// spoil makes the account's sealed secret no longer open.
func (e *env) spoil(id string) {
	e.accounts.mu.Lock()
	defer e.accounts.mu.Unlock()
	e.accounts.unopenable[id] = true
}

// testsRecorded returns how many connection tests were recorded.
func (e *env) testsRecorded() int {
	e.accounts.mu.Lock()
	defer e.accounts.mu.Unlock()
	return e.accounts.tests
}

// puts returns the cost keys cached.
func (e *env) puts() []string {
	e.costs.mu.Lock()
	defer e.costs.mu.Unlock()
	return slices.Clone(e.costs.puts)
}

func roleAccount(name string) cloud.NewAccount {
	return cloud.NewAccount{Provider: "aws", Name: name, Region: "eu-west-1",
		Auth: cloud.AuthInput{Mode: ports.AuthAssumeRole, RoleARN: roleARN, ExternalID: externalID}}
}

func keyAccount(name string) cloud.NewAccount {
	return cloud.NewAccount{Provider: "aws", Name: name, Region: "us-east-1",
		Auth: cloud.AuthInput{Mode: ports.AuthAccessKey, AccessKeyID: keyID, SecretAccessKey: secret}}
}

// add creates an account as the admin and returns its id.
func (e *env) add(in cloud.NewAccount) string {
	e.t.Helper()
	a, err := e.svc.CreateAccount(as(admin), in)
	if err != nil {
		e.t.Fatalf("CreateAccount(%s): %v", in.Name, err)
	}
	return a.ID
}

// creds are the credentials a provider call for the account must get.
func creds(in cloud.NewAccount) ports.CloudCredentials {
	return ports.CloudCredentials{Region: in.Region, Mode: in.Auth.Mode, RoleARN: in.Auth.RoleARN,
		ExternalID: in.Auth.ExternalID, AccessKeyID: in.Auth.AccessKeyID, SecretAccessKey: in.Auth.SecretAccessKey}
}

// auditLog returns the stored audit entries of every org, oldest first.
func (e *env) auditLog() []ports.AuditEntry {
	e.t.Helper()
	var out []ports.AuditEntry
	for _, org := range orgs {
		list, _, err := e.store.ListAudit(e.t.Context(), org, "", ports.Page{Limit: ports.MaxPageLimit})
		if err != nil {
			e.t.Fatal(err)
		}
		slices.Reverse(list)
		out = append(out, list...)
	}
	return out
}

// auditOf returns the audit entries of one action.
func (e *env) auditOf(action string) []ports.AuditEntry {
	var out []ports.AuditEntry
	for _, a := range e.auditLog() {
		if a.Action == action {
			out = append(out, a)
		}
	}
	return out
}

// fieldsOf returns the fields an error names.
func fieldsOf(err error) []string {
	pe, ok := ports.AsError(err)
	if !ok {
		return nil
	}
	var out []string
	for _, f := range pe.Fields {
		out = append(out, f.Field)
	}
	return out
}

func intp(n int) *int { return &n }
