package cloud

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// op describes a write for the audit log.
type op struct {
	action   string // such as "ecs.scale_service"
	resource string // such as "prod/checkout"
	args     any    // encoded as the entry's arguments; never a secret
}

// write carries out a write on an account: refused (forbidden) when the
// account is read-only, otherwise fn runs with the account's credentials.
// Either way the audit log records who did what, and how it ended.
func write[T any](ctx context.Context, s *Service, p ports.Principal, a ports.CloudAccount, o op, fn func(context.Context, ports.CloudCredentials) (T, error)) (T, error) {
	return writeChecked(ctx, s, p, a, o, fn, nil)
}

// writeChecked is write whose result may itself say that the operation
// failed: failed, when set, returns why ("" when it did not), and the audit
// log records the call as failed with that reason, though it is returned
// as a result, not an error (a function that raised an error, say).
func writeChecked[T any](ctx context.Context, s *Service, p ports.Principal, a ports.CloudAccount, o op, fn func(context.Context, ports.CloudCredentials) (T, error), failed func(T) string) (T, error) {
	var zero T
	at := s.d.Clock.Now()
	if a.ReadOnly {
		err := ports.Errorf(ports.KindForbidden, "cloud account %s is read-only", a.Name)
		s.audit(ctx, p, a, o, at, ports.AuditRefused, err.Message)
		return zero, err
	}
	v, err := call(ctx, s, a, fn)
	var r refusal
	if errors.As(err, &r) {
		s.audit(ctx, p, a, o, at, ports.AuditRefused, message(r.err))
		return zero, r.err
	}
	if err != nil {
		s.audit(ctx, p, a, o, at, ports.AuditFailed, message(err))
		return zero, err
	}
	if failed != nil {
		if why := failed(v); why != "" {
			s.audit(ctx, p, a, o, at, ports.AuditFailed, why)
			return v, nil
		}
	}
	s.audit(ctx, p, a, o, at, ports.AuditOK, "")
	return v, nil
}

// refusal is an error a write's fn returns when it refuses to go on (a
// large scale without the name typed, say): audited as refused, and
// returned unwrapped.
type refusal struct{ err error }

func (r refusal) Error() string { return r.err.Error() }
func (r refusal) Unwrap() error { return r.err }

// audit records an entry. The operation has happened (or been refused) by
// now, so a failure to record it is logged rather than returned, and the
// entry is written even when the caller has gone away.
func (s *Service) audit(ctx context.Context, p ports.Principal, a ports.CloudAccount, o op, at time.Time, outcome, errMsg string) {
	args, err := json.Marshal(o.args)
	if err != nil {
		args = json.RawMessage(`{}`)
	}
	e := ports.AuditEntry{
		ID: s.d.IDs.NewID(), OrgID: p.OrgID, UserID: p.UserID, AccountID: a.ID,
		Action: o.action, Resource: o.resource, Arguments: args, Outcome: outcome, Error: errMsg, At: at,
	}
	if err := s.d.Audit.RecordAudit(context.WithoutCancel(ctx), e); err != nil {
		s.log.Error("recording an audit entry", "err", err, "action", e.Action, "account", e.AccountID,
			"resource", e.Resource, "user", e.UserID, "outcome", e.Outcome)
	}
}

// ListAudit returns a page of the caller's organisation's audit log, newest
// first, only one account's when accountID is not "" (a deleted account's
// entries included), and the next page's cursor ("" at the end). A zero Limit
// means 50. Errors: invalid for a limit outside 1..200 or a bad cursor;
// not_found for an account id that is neither an account of the
// organisation nor one it has entries of (another organisation's account,
// say).
func (s *Service) ListAudit(ctx context.Context, accountID string, page ports.Page) ([]ports.AuditEntry, string, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return nil, "", err
	}
	if page, err = checkPage(page); err != nil {
		return nil, "", err
	}
	if accountID != "" {
		if err := s.auditedAccount(ctx, p, accountID); err != nil {
			return nil, "", err
		}
	}
	return s.d.Audit.ListAudit(ctx, p.OrgID, accountID, page)
}

// auditedAccount is nil when id is an account of the caller's organisation,
// or a deleted one the organisation's audit log has entries of; not_found
// otherwise.
func (s *Service) auditedAccount(ctx context.Context, p ports.Principal, id string) error {
	_, err := s.account(ctx, p, id)
	if !ports.IsKind(err, ports.KindNotFound) {
		return err
	}
	if !ports.IsID(id) {
		return err
	}
	entries, _, lerr := s.d.Audit.ListAudit(ctx, p.OrgID, id, ports.Page{Limit: 1})
	if lerr != nil {
		return lerr
	}
	if len(entries) == 0 {
		return err
	}
	return nil
}
