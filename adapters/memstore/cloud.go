package memstore

import (
	"bytes"
	"context"
	"slices"
	"time"

	"github.com/devpilot/devpilot/ports"
)

var (
	_ ports.CloudAccountStore = (*Store)(nil)
	_ ports.CostCacheStore    = (*Store)(nil)
	_ ports.AuditStore        = (*Store)(nil)
)

type costKey struct{ account, key string }

type cachedCost struct {
	report    ports.CostReport
	expiresAt time.Time
}

type externalID struct {
	id string
	at time.Time
}

type cloudData struct {
	accounts    map[string]ports.CloudAccount
	costs       map[costKey]cachedCost
	audit       map[string]ports.AuditEntry
	builds      map[string]ports.CloudBuild
	externalIDs map[string]externalID // by org id
}

func (d *cloudData) init() {
	d.accounts = map[string]ports.CloudAccount{}
	d.costs = map[costKey]cachedCost{}
	d.audit = map[string]ports.AuditEntry{}
	d.builds = map[string]ports.CloudBuild{}
	d.externalIDs = map[string]externalID{}
}

func copyAccount(a ports.CloudAccount) ports.CloudAccount {
	a.LastTestedAt, a.CreatedAt, a.UpdatedAt = utcPtr(a.LastTestedAt), utc(a.CreatedAt), utc(a.UpdatedAt)
	return a
}

// copyReport copies r with its times in UTC, keeping nil and empty lists apart.
func copyReport(r ports.CostReport) ports.CostReport {
	r.Periods = slices.Clone(r.Periods)
	for i, p := range r.Periods {
		p.Start, p.End, p.Groups = utc(p.Start), utc(p.End), slices.Clone(p.Groups)
		r.Periods[i] = p
	}
	return r
}

func validAccountStatus(st ports.CloudAccountStatus) bool {
	return st == ports.CloudUntested || st == ports.CloudOK || st == ports.CloudFailed
}

func invalidField(field, message string) error {
	return ports.Invalid(message, ports.FieldError{Field: field, Reason: "invalid"})
}

func notFoundAccount(id string) error { return ports.NotFound("cloud account", id) }

// CreateCloudAccount stores a new account, a zero Status as untested and a
// zero UpdatedAt as CreatedAt. Errors: conflict for a taken id or a name the
// org uses; not_found for a missing org; invalid for an unknown auth mode
// (field auth.mode) or status (field status).
func (s *Store) CreateCloudAccount(ctx context.Context, a ports.CloudAccount) error {
	if a.Auth.Mode != ports.AuthAssumeRole && a.Auth.Mode != ports.AuthAccessKey {
		return invalidField("auth.mode", "unknown auth mode")
	}
	if a.Status == "" {
		a.Status = ports.CloudUntested
	}
	if !validAccountStatus(a.Status) {
		return invalidField("status", "unknown account status")
	}
	if a.UpdatedAt.IsZero() {
		a.UpdatedAt = a.CreatedAt
	}
	defer s.lock()()
	if _, ok := s.identity.orgs[a.OrgID]; !ok {
		return ports.NotFound("org", a.OrgID)
	}
	if _, ok := s.cloud.accounts[a.ID]; ok {
		return ports.Errorf(ports.KindConflict, "cloud account %s already exists", a.ID)
	}
	for _, x := range s.cloud.accounts {
		if x.OrgID == a.OrgID && x.Name == a.Name {
			return &ports.Error{Kind: ports.KindConflict, Message: "cloud account " + a.Name + " already exists"}
		}
	}
	put(ctx, s, s.cloud.accounts, a.ID, copyAccount(a))
	return nil
}

// ownedAccount returns the org's account (s.mu held); not_found otherwise.
func (s *Store) ownedAccount(orgID, id string) (ports.CloudAccount, error) {
	a, ok := s.cloud.accounts[id]
	if !ok || a.OrgID != orgID {
		return ports.CloudAccount{}, notFoundAccount(id)
	}
	return a, nil
}

// GetCloudAccount returns the org's account; not_found when absent or
// another org's.
func (s *Store) GetCloudAccount(_ context.Context, orgID, id string) (ports.CloudAccount, error) {
	defer s.lock()()
	a, err := s.ownedAccount(orgID, id)
	return copyAccount(a), err
}

// ListCloudAccounts returns the org's accounts by name (bytewise), and the
// next page's cursor; invalid for a malformed cursor.
func (s *Store) ListCloudAccounts(_ context.Context, orgID string, page ports.Page) ([]ports.CloudAccount, string, error) {
	defer s.lock()()
	var all []ports.CloudAccount
	for _, a := range s.cloud.accounts {
		if a.OrgID == orgID {
			all = append(all, copyAccount(a))
		}
	}
	return paginate(all, page, keyset[ports.CloudAccount]{
		key: func(a ports.CloudAccount) (string, string) { return a.Name, a.ID }})
}

// RecordCloudTest records a connection test's status and error message, and
// sets LastTestedAt and UpdatedAt to at. Errors: not_found as
// GetCloudAccount; invalid (field status) for an unknown status.
func (s *Store) RecordCloudTest(ctx context.Context, orgID, id string, status ports.CloudAccountStatus, lastError string, at time.Time) error {
	if !validAccountStatus(status) {
		return invalidField("status", "unknown account status")
	}
	defer s.lock()()
	a, err := s.ownedAccount(orgID, id)
	if err != nil {
		return err
	}
	a.Status, a.LastError, a.LastTestedAt, a.UpdatedAt = status, lastError, utcPtr(&at), utc(at)
	put(ctx, s, s.cloud.accounts, id, a)
	return nil
}

// DeleteCloudAccount deletes the org's account, its cached costs and its
// builds, keeping its audit entries; not_found as GetCloudAccount.
func (s *Store) DeleteCloudAccount(ctx context.Context, orgID, id string) error {
	defer s.lock()()
	if _, err := s.ownedAccount(orgID, id); err != nil {
		return err
	}
	del(ctx, s, s.cloud.accounts, id)
	for k := range s.cloud.costs {
		if k.account == id {
			del(ctx, s, s.cloud.costs, k)
		}
	}
	for bid, b := range s.cloud.builds {
		if b.AccountID == id {
			del(ctx, s, s.cloud.builds, bid)
		}
	}
	return nil
}

// OrgExternalID returns the org's external id, storing candidate as it when
// the org has none. Errors: conflict when candidate is another org's;
// not_found for a missing org; invalid (field external_id) for an empty
// candidate when the org has none.
func (s *Store) OrgExternalID(ctx context.Context, orgID, candidate string, at time.Time) (string, error) {
	defer s.lock()()
	if _, ok := s.identity.orgs[orgID]; !ok {
		return "", ports.NotFound("org", orgID)
	}
	if x, ok := s.cloud.externalIDs[orgID]; ok {
		return x.id, nil
	}
	if candidate == "" {
		return "", invalidField("external_id", "an external id is required")
	}
	for _, x := range s.cloud.externalIDs {
		if x.id == candidate {
			return "", ports.Errorf(ports.KindConflict, "external id %s is taken", candidate)
		}
	}
	put(ctx, s, s.cloud.externalIDs, orgID, externalID{candidate, utc(at)})
	return candidate, nil
}

// RecordCloudBuild remembers a build devpilot started. Errors: conflict for
// a taken id; not_found when the org has no such account.
func (s *Store) RecordCloudBuild(ctx context.Context, b ports.CloudBuild) error {
	defer s.lock()()
	if _, err := s.ownedAccount(b.OrgID, b.AccountID); err != nil {
		return err
	}
	if _, ok := s.cloud.builds[b.ID]; ok {
		return ports.Errorf(ports.KindConflict, "cloud build %s already exists", b.ID)
	}
	b.CreatedAt = utc(b.CreatedAt)
	put(ctx, s, s.cloud.builds, b.ID, b)
	return nil
}

// GetCloudBuild returns a build the org started; not_found when absent,
// another org's, or its account was deleted.
func (s *Store) GetCloudBuild(_ context.Context, orgID, id string) (ports.CloudBuild, error) {
	defer s.lock()()
	b, ok := s.cloud.builds[id]
	if !ok || b.OrgID != orgID {
		return ports.CloudBuild{}, ports.NotFound("cloud build", id)
	}
	return b, nil
}

// GetCachedCost returns the report cached under the account and key, if it
// has not expired at now (it expires at its expiry time exactly).
func (s *Store) GetCachedCost(_ context.Context, accountID, key string, now time.Time) (ports.CostReport, bool, error) {
	defer s.lock()()
	c, ok := s.cloud.costs[costKey{accountID, key}]
	if !ok || !now.Before(c.expiresAt) {
		return ports.CostReport{}, false, nil
	}
	return copyReport(c.report), true, nil
}

// PutCachedCost caches a report under the account and key until expiresAt,
// replacing any earlier one and its expiry; not_found for a missing account.
func (s *Store) PutCachedCost(ctx context.Context, accountID, key string, r ports.CostReport, expiresAt time.Time) error {
	defer s.lock()()
	if _, ok := s.cloud.accounts[accountID]; !ok {
		return notFoundAccount(accountID)
	}
	put(ctx, s, s.cloud.costs, costKey{accountID, key}, cachedCost{copyReport(r), utc(expiresAt)})
	return nil
}

// RecordAudit appends an entry. Errors: conflict for a taken id; not_found
// for a missing org; invalid (field outcome) for an unknown outcome.
func (s *Store) RecordAudit(ctx context.Context, e ports.AuditEntry) error {
	if e.Outcome != ports.AuditOK && e.Outcome != ports.AuditFailed && e.Outcome != ports.AuditRefused {
		return invalidField("outcome", "unknown audit outcome")
	}
	defer s.lock()()
	if _, ok := s.identity.orgs[e.OrgID]; !ok {
		return ports.NotFound("org", e.OrgID)
	}
	if _, ok := s.cloud.audit[e.ID]; ok {
		return ports.Errorf(ports.KindConflict, "audit entry %s already exists", e.ID)
	}
	e.At = utc(e.At)
	if len(e.Arguments) == 0 {
		e.Arguments = nil
	} else {
		e.Arguments = bytes.Clone(e.Arguments)
	}
	put(ctx, s, s.cloud.audit, e.ID, e)
	return nil
}

// ListAudit returns the org's entries (only one account's unless accountID
// is ""), newest first, entries of one millisecond by id, highest first, and
// the next page's cursor; invalid for a malformed cursor.
func (s *Store) ListAudit(_ context.Context, orgID, accountID string, page ports.Page) ([]ports.AuditEntry, string, error) {
	defer s.lock()()
	var all []ports.AuditEntry
	for _, e := range s.cloud.audit {
		if e.OrgID == orgID && (accountID == "" || e.AccountID == accountID) {
			e.Arguments = bytes.Clone(e.Arguments)
			all = append(all, e)
		}
	}
	return paginate(all, page, keyset[ports.AuditEntry]{desc: true, byTime: true,
		key: func(e ports.AuditEntry) (string, string) { return timeKey(e.At.Truncate(time.Millisecond)), e.ID }})
}
