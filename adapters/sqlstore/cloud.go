package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/devpilot/devpilot/ports"
)

var (
	_ ports.CloudAccountStore = (*Cloud)(nil)
	_ ports.CostCacheStore    = (*Cloud)(nil)
	_ ports.AuditStore        = (*Cloud)(nil)
)

// Cloud keeps cloud accounts, their cached cost reports and the audit log of
// writes to them; it implements ports.CloudAccountStore,
// ports.CostCacheStore and ports.AuditStore, with the errors those ports
// document.
type Cloud struct {
	db *DB
}

// NewCloud returns the cloud stores over db.
func NewCloud(db *DB) *Cloud {
	return &Cloud{db: db}
}

// checkAuthMode is an invalid error, naming the field "auth.mode", unless
// mode is one of the ports' authentication modes.
func checkAuthMode(mode ports.CloudAuthMode) error {
	switch mode {
	case ports.AuthAssumeRole, ports.AuthAccessKey:
		return nil
	}
	return ports.Invalid(fmt.Sprintf("unknown auth mode %q", mode), ports.FieldError{Field: "auth.mode", Reason: "unknown"})
}

// checkCloudStatus is an invalid error, naming the field "status", unless
// status is one of the ports' account statuses.
func checkCloudStatus(status ports.CloudAccountStatus) error {
	switch status {
	case ports.CloudUntested, ports.CloudOK, ports.CloudFailed:
		return nil
	}
	return ports.Invalid(fmt.Sprintf("unknown cloud account status %q", status), ports.FieldError{Field: "status", Reason: "unknown"})
}

type cloudAccountRow struct {
	ID           string     `db:"id"`
	OrgID        string     `db:"org_id"`
	Provider     string     `db:"provider"`
	Name         string     `db:"name"`
	Region       string     `db:"region"`
	AuthMode     string     `db:"auth_mode"`
	RoleARN      string     `db:"role_arn"`
	ExternalID   string     `db:"external_id"`
	AccessKeyID  string     `db:"access_key_id"`
	SealedSecret string     `db:"sealed_secret"`
	ReadOnly     bool       `db:"read_only"`
	Status       string     `db:"status"`
	LastTestedAt *timestamp `db:"last_tested_at"`
	LastError    string     `db:"last_error"`
	CreatedAt    timestamp  `db:"created_at"`
	UpdatedAt    timestamp  `db:"updated_at"`
}

func (r cloudAccountRow) account() ports.CloudAccount {
	return ports.CloudAccount{
		ID: r.ID, OrgID: r.OrgID, Provider: r.Provider, Name: r.Name, Region: r.Region,
		Auth: ports.CloudAuth{
			Mode: ports.CloudAuthMode(r.AuthMode), RoleARN: r.RoleARN, ExternalID: r.ExternalID,
			AccessKeyID: r.AccessKeyID, SealedSecret: r.SealedSecret,
		},
		ReadOnly: r.ReadOnly, Status: ports.CloudAccountStatus(r.Status), LastTestedAt: r.LastTestedAt.timePtr(),
		LastError: r.LastError, CreatedAt: time.Time(r.CreatedAt), UpdatedAt: time.Time(r.UpdatedAt),
	}
}

const cloudAccountColumns = `id, org_id, provider, name, region, auth_mode, role_arn, external_id, access_key_id,
	sealed_secret, read_only, status, last_tested_at, last_error, created_at, updated_at`

// CreateCloudAccount implements ports.CloudAccountStore; a zero Status is
// stored as untested and a zero UpdatedAt as CreatedAt. It is a conflict
// when the org has an account of that name (or the id exists), not_found
// when the org does not exist, and invalid for an unknown auth mode or
// status.
func (s *Cloud) CreateCloudAccount(ctx context.Context, a ports.CloudAccount) error {
	status := a.Status
	if status == "" {
		status = ports.CloudUntested
	}
	if err := checkAuthMode(a.Auth.Mode); err != nil {
		return err
	}
	if err := checkCloudStatus(status); err != nil {
		return err
	}
	updated := a.UpdatedAt
	if updated.IsZero() {
		updated = a.CreatedAt
	}
	_, err := s.db.write(ctx).exec(ctx,
		"INSERT INTO cloud_accounts ("+cloudAccountColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		a.ID, a.OrgID, a.Provider, a.Name, a.Region, string(a.Auth.Mode), a.Auth.RoleARN, a.Auth.ExternalID,
		a.Auth.AccessKeyID, a.Auth.SealedSecret, a.ReadOnly, string(status), timestampPtr(a.LastTestedAt),
		a.LastError, timestamp(a.CreatedAt), timestamp(updated))
	return storeErr(err, "cloud account "+a.Name, "org "+a.OrgID)
}

// GetCloudAccount implements ports.CloudAccountStore.
func (s *Cloud) GetCloudAccount(ctx context.Context, orgID, id string) (ports.CloudAccount, error) {
	var r cloudAccountRow
	err := s.db.read(ctx).get(ctx, &r, "SELECT "+cloudAccountColumns+" FROM cloud_accounts WHERE id = ? AND org_id = ?", id, orgID)
	if err != nil {
		return ports.CloudAccount{}, storeErr(err, "cloud account "+id, "")
	}
	return r.account(), nil
}

// ListCloudAccounts implements ports.CloudAccountStore. Names compare
// bytewise; a page holds at most page.Size() items.
func (s *Cloud) ListCloudAccounts(ctx context.Context, orgID string, page ports.Page) ([]ports.CloudAccount, string, error) {
	rows, next, err := listPage(ctx, s.db.read(ctx), "SELECT "+cloudAccountColumns+" FROM cloud_accounts WHERE org_id = ?",
		[]any{orgID}, page, keyset[cloudAccountRow]{key: "name", id: "id",
			last: func(r cloudAccountRow) (string, string) { return r.Name, r.ID }})
	if err != nil {
		return nil, "", storeErr(err, "cloud accounts", "")
	}
	accounts := make([]ports.CloudAccount, len(rows))
	for i, r := range rows {
		accounts[i] = r.account()
	}
	return accounts, next, nil
}

// RecordCloudTest implements ports.CloudAccountStore: it sets the status,
// the error message and LastTestedAt and UpdatedAt to at. It is invalid for
// an unknown status.
func (s *Cloud) RecordCloudTest(ctx context.Context, orgID, id string, status ports.CloudAccountStatus, lastError string, at time.Time) error {
	if err := checkCloudStatus(status); err != nil {
		return err
	}
	n, err := s.db.write(ctx).exec(ctx,
		"UPDATE cloud_accounts SET status = ?, last_error = ?, last_tested_at = ?, updated_at = ? WHERE id = ? AND org_id = ?",
		string(status), lastError, timestamp(at), timestamp(at), id, orgID)
	if err == nil && n == 0 {
		return ports.NotFound("cloud account", id)
	}
	return storeErr(err, "cloud account "+id, "")
}

// DeleteCloudAccount implements ports.CloudAccountStore.
func (s *Cloud) DeleteCloudAccount(ctx context.Context, orgID, id string) error {
	n, err := s.db.write(ctx).exec(ctx, "DELETE FROM cloud_accounts WHERE id = ? AND org_id = ?", id, orgID)
	if err == nil && n == 0 {
		return ports.NotFound("cloud account", id)
	}
	return storeErr(err, "cloud account "+id, "")
}

// GetCachedCost implements ports.CostCacheStore: a report is found while
// now is before its expiry. Its times read back in UTC.
func (s *Cloud) GetCachedCost(ctx context.Context, accountID, key string, now time.Time) (ports.CostReport, bool, error) {
	var report string
	err := s.db.read(ctx).get(ctx, &report,
		"SELECT report FROM cost_cache WHERE account_id = ? AND cache_key = ? AND expires_at > ?",
		accountID, key, timestamp(now))
	if errors.Is(err, sql.ErrNoRows) {
		return ports.CostReport{}, false, nil
	}
	if err != nil {
		return ports.CostReport{}, false, storeErr(err, "cached cost", "")
	}
	var r ports.CostReport
	if err := json.Unmarshal([]byte(report), &r); err != nil {
		return ports.CostReport{}, false, ports.Wrap(ports.KindInternal, fmt.Errorf("sqlstore: bad cost report: %w", err), "database error")
	}
	for i := range r.Periods {
		r.Periods[i].Start, r.Periods[i].End = r.Periods[i].Start.UTC(), r.Periods[i].End.UTC()
	}
	return r, true, nil
}

// PutCachedCost implements ports.CostCacheStore; it is not_found when the
// account does not exist.
func (s *Cloud) PutCachedCost(ctx context.Context, accountID, key string, r ports.CostReport, expiresAt time.Time) error {
	report, err := json.Marshal(r)
	if err != nil {
		return ports.Wrap(ports.KindInternal, err, "encode cost report")
	}
	_, err = s.db.write(ctx).exec(ctx, `INSERT INTO cost_cache (account_id, cache_key, report, expires_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (account_id, cache_key) DO UPDATE SET report = excluded.report, expires_at = excluded.expires_at`,
		accountID, key, string(report), timestamp(expiresAt))
	return storeErr(err, "cached cost", "cloud account "+accountID)
}

type auditRow struct {
	ID        string    `db:"id"`
	OrgID     string    `db:"org_id"`
	UserID    string    `db:"user_id"`
	AccountID string    `db:"account_id"`
	Action    string    `db:"action"`
	Resource  string    `db:"resource"`
	Arguments jsonText  `db:"arguments"`
	Outcome   string    `db:"outcome"`
	Error     string    `db:"error"`
	At        timestamp `db:"at"`
}

func (r auditRow) entry() ports.AuditEntry {
	return ports.AuditEntry{
		ID: r.ID, OrgID: r.OrgID, UserID: r.UserID, AccountID: r.AccountID, Action: r.Action,
		Resource: r.Resource, Arguments: json.RawMessage(r.Arguments), Outcome: r.Outcome, Error: r.Error,
		At: time.Time(r.At),
	}
}

const auditColumns = "id, org_id, user_id, account_id, action, resource, arguments, outcome, error, at"

// RecordAudit implements ports.AuditStore: the arguments are kept byte for
// byte (empty ones read back nil). It is a conflict when the id exists,
// not_found when the org does not exist, and invalid for an outcome other
// than ports.AuditOK, ports.AuditFailed and ports.AuditRefused.
func (s *Cloud) RecordAudit(ctx context.Context, e ports.AuditEntry) error {
	switch e.Outcome {
	case ports.AuditOK, ports.AuditFailed, ports.AuditRefused:
	default:
		return ports.Invalid(fmt.Sprintf("unknown audit outcome %q", e.Outcome), ports.FieldError{Field: "outcome", Reason: "unknown"})
	}
	_, err := s.db.write(ctx).exec(ctx, "INSERT INTO audit_log ("+auditColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		e.ID, e.OrgID, e.UserID, e.AccountID, e.Action, e.Resource, jsonText(e.Arguments), e.Outcome, e.Error, timestamp(e.At))
	return storeErr(err, "audit entry "+e.ID, "org "+e.OrgID)
}

// ListAudit implements ports.AuditStore. A page holds at most page.Size()
// items; entries of the same time are ordered by id, highest first.
func (s *Cloud) ListAudit(ctx context.Context, orgID, accountID string, page ports.Page) ([]ports.AuditEntry, string, error) {
	query := "SELECT " + auditColumns + " FROM audit_log WHERE org_id = ?"
	args := []any{orgID}
	if accountID != "" {
		query += " AND account_id = ?"
		args = append(args, accountID)
	}
	rows, next, err := listPage(ctx, s.db.read(ctx), query, args, page, keyset[auditRow]{key: "at", id: "id", desc: true, byTime: true,
		last: func(r auditRow) (string, string) { return timeKey(time.Time(r.At)), r.ID }})
	if err != nil {
		return nil, "", storeErr(err, "audit entries", "")
	}
	entries := make([]ports.AuditEntry, len(rows))
	for i, r := range rows {
		entries[i] = r.entry()
	}
	return entries, next, nil
}

// OrgExternalID implements ports.CloudAccountStore: the first call for an
// org stores candidate; every later one (and every concurrent one) returns
// what was stored. It is a conflict when candidate is another org's external
// id, not_found when the org does not exist, and invalid for an empty
// candidate.
func (s *Cloud) OrgExternalID(ctx context.Context, orgID, candidate string, at time.Time) (string, error) {
	const query = "SELECT external_id FROM cloud_external_ids WHERE org_id = ?"
	var id string
	err := s.db.read(ctx).get(ctx, &id, query, orgID)
	if err == nil {
		return id, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", storeErr(err, "external id", "")
	}
	if candidate == "" {
		return "", ports.Invalid("an external id is required", ports.FieldError{Field: "external_id", Reason: "required"})
	}
	w := s.db.write(ctx)
	if _, err := w.exec(ctx, `INSERT INTO cloud_external_ids (org_id, external_id, created_at) VALUES (?, ?, ?)
		ON CONFLICT (org_id) DO NOTHING`, orgID, candidate, timestamp(at)); err != nil {
		return "", storeErr(err, "external id", "org "+orgID)
	}
	if err := w.get(ctx, &id, query, orgID); err != nil {
		return "", storeErr(err, "external id of org "+orgID, "")
	}
	return id, nil
}

type cloudBuildRow struct {
	ID        string    `db:"id"`
	OrgID     string    `db:"org_id"`
	AccountID string    `db:"account_id"`
	AppID     string    `db:"app_id"`
	Branch    string    `db:"branch"`
	JobID     string    `db:"job_id"`
	CreatedAt timestamp `db:"created_at"`
}

const cloudBuildColumns = "id, org_id, account_id, app_id, branch, job_id, created_at"

// RecordCloudBuild implements ports.CloudAccountStore. It is a conflict when
// the id exists and not_found when the account or the org does not.
func (s *Cloud) RecordCloudBuild(ctx context.Context, b ports.CloudBuild) error {
	_, err := s.db.write(ctx).exec(ctx, "INSERT INTO cloud_builds ("+cloudBuildColumns+") VALUES (?, ?, ?, ?, ?, ?, ?)",
		b.ID, b.OrgID, b.AccountID, b.AppID, b.Branch, b.JobID, timestamp(b.CreatedAt))
	return storeErr(err, "cloud build "+b.ID, "cloud account "+b.AccountID)
}

// GetCloudBuild implements ports.CloudAccountStore; CreatedAt reads back in
// UTC.
func (s *Cloud) GetCloudBuild(ctx context.Context, orgID, id string) (ports.CloudBuild, error) {
	var r cloudBuildRow
	err := s.db.read(ctx).get(ctx, &r, "SELECT "+cloudBuildColumns+" FROM cloud_builds WHERE id = ? AND org_id = ?", id, orgID)
	if err != nil {
		return ports.CloudBuild{}, storeErr(err, "cloud build "+id, "")
	}
	return ports.CloudBuild{ID: r.ID, OrgID: r.OrgID, AccountID: r.AccountID, AppID: r.AppID, Branch: r.Branch,
		JobID: r.JobID, CreatedAt: time.Time(r.CreatedAt)}, nil
}
