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

type testRecord struct {
	orgID, id string
	status    ports.CloudAccountStatus
	lastError string
	at        time.Time
}

type cacheEntry struct {
	report    ports.CostReport
	expiresAt time.Time
}

type sealCall struct{ plaintext, aad string }

// mem is the state behind the store and cipher mocks: the tests read what
// was stored.
type mem struct {
	mu       sync.Mutex
	accounts map[string]ports.CloudAccount
	tests    []testRecord
	cache    map[string]cacheEntry // account id + "#" + key
	puts     []string
	audit    []ports.AuditEntry
	seals    []sealCall
	opens    []sealCall
	// auditErr, when set, fails every RecordAudit.
	auditErr error
	// extIDs are the orgs' external ids; org-1's is externalID from the
	// start, as if it had been generated.
	extIDs     map[string]string
	candidates []string
	builds     map[string]ports.CloudBuild
	// buildErr, when set, fails every RecordCloudBuild.
	buildErr error
}

type env struct {
	t     *testing.T
	svc   *cloud.Service
	prov  *mocks.MockCloudProvider
	clock *fixture.Clock
	m     *mem
}

func newEnv(t *testing.T, cfg cloud.Config) *env {
	t.Helper()
	ctrl := gomock.NewController(t)
	e := &env{t: t, prov: mocks.NewMockCloudProvider(ctrl), clock: fixture.NewClock(),
		m: &mem{accounts: map[string]ports.CloudAccount{}, cache: map[string]cacheEntry{},
			extIDs: map[string]string{alice.OrgID: externalID}, builds: map[string]ports.CloudBuild{}}}
	m := e.m
	accounts := mocks.NewMockCloudAccountStore(ctrl)
	costs := mocks.NewMockCostCacheStore(ctrl)
	audit := mocks.NewMockAuditStore(ctrl)
	cipher := mocks.NewMockCipher(ctrl)

	accounts.EXPECT().CreateCloudAccount(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, a ports.CloudAccount) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, b := range m.accounts {
				if b.OrgID == a.OrgID && b.Name == a.Name {
					return ports.Errorf(ports.KindConflict, "a cloud account named %q exists", a.Name)
				}
			}
			m.accounts[a.ID] = a
			return nil
		})
	accounts.EXPECT().GetCloudAccount(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, orgID, id string) (ports.CloudAccount, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			if a, ok := m.accounts[id]; ok && a.OrgID == orgID {
				return a, nil
			}
			return ports.CloudAccount{}, ports.NotFound("cloud account", id)
		})
	accounts.EXPECT().ListCloudAccounts(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, orgID string, page ports.Page) ([]ports.CloudAccount, string, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			var out []ports.CloudAccount
			for _, a := range m.accounts {
				if a.OrgID == orgID {
					out = append(out, a)
				}
			}
			slices.SortFunc(out, func(a, b ports.CloudAccount) int { return strings.Compare(a.Name, b.Name) })
			if len(out) > page.Limit {
				return out[:page.Limit], out[page.Limit].Name, nil
			}
			return out, "", nil
		})
	accounts.EXPECT().RecordCloudTest(gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, orgID, id string, status ports.CloudAccountStatus, lastError string, at time.Time) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			a, ok := m.accounts[id]
			if !ok || a.OrgID != orgID {
				return ports.NotFound("cloud account", id)
			}
			a.Status, a.LastError, a.LastTestedAt = status, lastError, &at
			m.accounts[id] = a
			m.tests = append(m.tests, testRecord{orgID, id, status, lastError, at})
			return nil
		})
	accounts.EXPECT().DeleteCloudAccount(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, orgID, id string) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			if a, ok := m.accounts[id]; !ok || a.OrgID != orgID {
				return ports.NotFound("cloud account", id)
			}
			delete(m.accounts, id)
			return nil
		})

	accounts.EXPECT().OrgExternalID(gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, orgID, candidate string, _ time.Time) (string, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.candidates = append(m.candidates, candidate)
			if id, ok := m.extIDs[orgID]; ok {
				return id, nil
			}
			for _, id := range m.extIDs {
				if id == candidate {
					return "", ports.Errorf(ports.KindConflict, "external id taken")
				}
			}
			m.extIDs[orgID] = candidate
			return candidate, nil
		})
	accounts.EXPECT().RecordCloudBuild(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, b ports.CloudBuild) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			if m.buildErr != nil {
				return m.buildErr
			}
			m.builds[b.ID] = b
			return nil
		})
	accounts.EXPECT().GetCloudBuild(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, orgID, id string) (ports.CloudBuild, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			if b, ok := m.builds[id]; ok && b.OrgID == orgID {
				if _, ok := m.accounts[b.AccountID]; ok {
					return b, nil
				}
			}
			return ports.CloudBuild{}, ports.NotFound("cloud build", id)
		})

	costs.EXPECT().GetCachedCost(gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, accountID, key string, now time.Time) (ports.CostReport, bool, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			c, ok := m.cache[accountID+"#"+key]
			if !ok || !now.Before(c.expiresAt) {
				return ports.CostReport{}, false, nil
			}
			return c.report, true, nil
		})
	costs.EXPECT().PutCachedCost(gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, accountID, key string, r ports.CostReport, expiresAt time.Time) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.cache[accountID+"#"+key] = cacheEntry{r, expiresAt}
			m.puts = append(m.puts, key)
			return nil
		})

	audit.EXPECT().RecordAudit(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, a ports.AuditEntry) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			if m.auditErr != nil {
				return m.auditErr
			}
			m.audit = append(m.audit, a)
			return nil
		})
	audit.EXPECT().ListAudit(gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, orgID, accountID string, page ports.Page) ([]ports.AuditEntry, string, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			var out []ports.AuditEntry
			for _, a := range slices.Backward(m.audit) {
				if a.OrgID == orgID && (accountID == "" || a.AccountID == accountID) {
					out = append(out, a)
				}
			}
			return out, "", nil
		})

	// The cipher "seals" as sealed:<hex aad>:<hex plaintext>, and opens only
	// with the same aad.
	cipher.EXPECT().Seal(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(plaintext, aad []byte) (string, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.seals = append(m.seals, sealCall{string(plaintext), string(aad)})
			return "sealed:" + hex.EncodeToString(aad) + ":" + hex.EncodeToString(plaintext), nil
		})
	cipher.EXPECT().Open(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(sealed string, aad []byte) ([]byte, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.opens = append(m.opens, sealCall{sealed, string(aad)})
			parts := strings.Split(sealed, ":")
			if len(parts) != 3 || parts[0] != "sealed" || parts[1] != hex.EncodeToString(aad) {
				return nil, ports.Wrap(ports.KindInternal, errors.New("message authentication failed"), "cannot open")
			}
			return hex.DecodeString(parts[2])
		})

	e.svc = cloud.New(cfg, cloud.Deps{Accounts: accounts, Costs: costs, Audit: audit, Provider: e.prov,
		Cipher: cipher, Clock: e.clock, IDs: &fixture.IDs{}})
	return e
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

func (e *env) auditLog() []ports.AuditEntry {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	return slices.Clone(e.m.audit)
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
