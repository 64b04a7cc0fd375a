package memstore

import (
	"bytes"
	"context"
	"time"

	"github.com/devpilot/devpilot/ports"
)

var _ ports.SCMStore = (*Store)(nil)

type repoKey struct {
	connection string
	providerID int64
}

type scmData struct {
	states      map[string]ports.OAuthState
	connections map[string]ports.SCMConnection
	repos       map[string]ports.Repository
	deliveries  map[string]ports.WebhookDelivery
	digests     map[string]ports.WebhookDigest
	activity    map[string]ports.SCMActivity
}

func (d *scmData) init() {
	d.states = map[string]ports.OAuthState{}
	d.connections = map[string]ports.SCMConnection{}
	d.repos = map[string]ports.Repository{}
	d.deliveries = map[string]ports.WebhookDelivery{}
	d.digests = map[string]ports.WebhookDigest{}
	d.activity = map[string]ports.SCMActivity{}
}

// atomically runs fn (s.mu held) so that its changes are undone when it
// fails, and join the transaction ctx carries, if any, when it succeeds.
func (s *Store) atomically(ctx context.Context, fn func(ctx context.Context) error) error {
	local := &txn{}
	if err := fn(context.WithValue(ctx, txKey{s}, local)); err != nil {
		for i := len(local.undo) - 1; i >= 0; i-- {
			local.undo[i]()
		}
		return err
	}
	if outer, ok := ctx.Value(txKey{s}).(*txn); ok {
		outer.undo = append(outer.undo, local.undo...)
	}
	return nil
}

// CreateOAuthState stores a pending authorisation. Errors: conflict for a
// taken state; not_found when the user is not one of the org.
func (s *Store) CreateOAuthState(ctx context.Context, st ports.OAuthState) error {
	defer s.lock()()
	if !s.isUserOf(st.OrgID, st.UserID) {
		return ports.NotFound("user", st.UserID)
	}
	if _, ok := s.scm.states[st.State]; ok {
		return ports.Errorf(ports.KindConflict, "oauth state exists already")
	}
	st.CreatedAt, st.ExpiresAt = utc(st.CreatedAt), utc(st.ExpiresAt)
	put(ctx, s, s.scm.states, st.State, st)
	return nil
}

// ConsumeOAuthState removes and returns the state. Errors: not_found when
// absent or used; gone (code expired) when it expired at or before now (it
// is removed all the same).
func (s *Store) ConsumeOAuthState(ctx context.Context, state string, now time.Time) (ports.OAuthState, error) {
	defer s.lock()()
	st, ok := s.scm.states[state]
	if !ok {
		return ports.OAuthState{}, &ports.Error{Kind: ports.KindNotFound, Message: "oauth state not found"}
	}
	del(ctx, s, s.scm.states, state)
	if !now.Before(st.ExpiresAt) {
		return ports.OAuthState{}, &ports.Error{Kind: ports.KindGone, Code: ports.CodeExpired, Message: "oauth state expired"}
	}
	return st, nil
}

// SaveConnection stores the owner's connection to c.Provider, replacing an
// earlier one (keeping its id and creation time), and returns it; a zero
// Status is active and a zero UpdatedAt is CreatedAt. Errors: conflict when
// c.ID is another connection's; not_found for a missing owner; invalid
// (field status) for an unknown status.
func (s *Store) SaveConnection(ctx context.Context, c ports.SCMConnection) (ports.SCMConnection, error) {
	if c.Status == "" {
		c.Status = ports.SCMActive
	}
	if c.Status != ports.SCMActive && c.Status != ports.SCMBroken {
		return ports.SCMConnection{}, invalidField("status", "unknown connection status")
	}
	if c.UpdatedAt.IsZero() {
		c.UpdatedAt = c.CreatedAt
	}
	c.CreatedAt, c.UpdatedAt = utc(c.CreatedAt), utc(c.UpdatedAt)
	defer s.lock()()
	if !s.isUserOf(c.OrgID, c.UserID) {
		return ports.SCMConnection{}, ports.NotFound("user", c.UserID)
	}
	var old *ports.SCMConnection
	for _, x := range s.scm.connections {
		if x.OrgID == c.OrgID && x.UserID == c.UserID && x.Provider == c.Provider {
			old = &x
			break
		}
	}
	if old != nil {
		c.ID, c.CreatedAt = old.ID, old.CreatedAt
	} else if _, ok := s.scm.connections[c.ID]; ok {
		return ports.SCMConnection{}, ports.Errorf(ports.KindConflict, "scm connection %s exists already", c.ID)
	}
	put(ctx, s, s.scm.connections, c.ID, c)
	return c, nil
}

// GetConnection returns the owner's connection to the provider; not_found
// when there is none.
func (s *Store) GetConnection(_ context.Context, owner ports.Owner, provider string) (ports.SCMConnection, error) {
	defer s.lock()()
	for _, c := range s.scm.connections {
		if c.OrgID == owner.OrgID && c.UserID == owner.UserID && c.Provider == provider {
			return c, nil
		}
	}
	return ports.SCMConnection{}, ports.NotFound("scm connection to", provider)
}

// MarkConnectionBroken records that the connection's token stopped working;
// not_found for an unknown id.
func (s *Store) MarkConnectionBroken(ctx context.Context, id, reason string, at time.Time) error {
	defer s.lock()()
	c, ok := s.scm.connections[id]
	if !ok {
		return ports.NotFound("scm connection", id)
	}
	c.Status, c.Error, c.UpdatedAt = ports.SCMBroken, reason, utc(at)
	put(ctx, s, s.scm.connections, id, c)
	return nil
}

func copyRepo(r ports.Repository) ports.Repository {
	r.PushedAt, r.CreatedAt, r.UpdatedAt = utcPtr(r.PushedAt), utc(r.CreatedAt), utc(r.UpdatedAt)
	return r
}

// SaveRepositories upserts the repositories the connection sees, keyed by
// connection and provider id (keeping devpilot's ids), as its owner's, all
// or none, and returns them in the order given. Errors: not_found for a
// missing connection; conflict when a new repository's id is taken.
func (s *Store) SaveRepositories(ctx context.Context, connectionID string, repos []ports.Repository, at time.Time) ([]ports.Repository, error) {
	defer s.lock()()
	c, ok := s.scm.connections[connectionID]
	if !ok {
		return nil, ports.NotFound("scm connection", connectionID)
	}
	at = utc(at)
	byKey := map[repoKey]string{}
	for id, r := range s.scm.repos {
		if r.ConnectionID == connectionID {
			byKey[repoKey{connectionID, r.ProviderID}] = id
		}
	}
	out := make([]ports.Repository, 0, len(repos))
	err := s.atomically(ctx, func(ctx context.Context) error {
		for _, r := range repos {
			k := repoKey{connectionID, r.ProviderID}
			r.OrgID, r.UserID, r.ConnectionID, r.UpdatedAt = c.OrgID, c.UserID, connectionID, at
			if id, ok := byKey[k]; ok {
				r.ID, r.CreatedAt = id, s.scm.repos[id].CreatedAt
			} else {
				if _, taken := s.scm.repos[r.ID]; taken {
					return ports.Errorf(ports.KindConflict, "repository %s exists already", r.ID)
				}
				r.CreatedAt = at
				byKey[k] = r.ID
			}
			r = copyRepo(r)
			put(ctx, s, s.scm.repos, r.ID, r)
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PruneRepositories deletes the connection's repositories last saved before
// savedBefore and returns how many it deleted.
func (s *Store) PruneRepositories(ctx context.Context, connectionID string, savedBefore time.Time) (int, error) {
	defer s.lock()()
	n := 0
	for id, r := range s.scm.repos {
		if r.ConnectionID == connectionID && r.UpdatedAt.Before(savedBefore) {
			del(ctx, s, s.scm.repos, id)
			n++
		}
	}
	return n, nil
}

// ListRepositories returns the owner's repositories by full name (bytewise),
// then id, and the next page's cursor; invalid for a malformed cursor.
func (s *Store) ListRepositories(_ context.Context, owner ports.Owner, page ports.Page) ([]ports.Repository, string, error) {
	defer s.lock()()
	var all []ports.Repository
	for _, r := range s.scm.repos {
		if r.OrgID == owner.OrgID && r.UserID == owner.UserID {
			all = append(all, copyRepo(r))
		}
	}
	return paginate(all, page, keyset[ports.Repository]{
		key: func(r ports.Repository) (string, string) { return r.FullName, r.ID }})
}

// GetRepository returns the owner's repository; not_found when absent or
// another owner's.
func (s *Store) GetRepository(_ context.Context, owner ports.Owner, id string) (ports.Repository, error) {
	defer s.lock()()
	r, ok := s.scm.repos[id]
	if !ok || r.OrgID != owner.OrgID || r.UserID != owner.UserID {
		return ports.Repository{}, ports.NotFound("repository", id)
	}
	return copyRepo(r), nil
}

func validDeliveryStatus(st string) bool {
	switch st {
	case ports.DeliveryPending, ports.DeliveryProcessed, ports.DeliveryIgnored, ports.DeliveryFailed:
		return true
	}
	return false
}

func copyDelivery(d ports.WebhookDelivery) ports.WebhookDelivery {
	d.Payload, d.ReceivedAt, d.ProcessedAt = bytes.Clone(d.Payload), utc(d.ReceivedAt), utcPtr(d.ProcessedAt)
	return d
}

// RecordDelivery stores a delivery unless one with its id exists and
// reports whether it stored it; invalid (field status) for an unknown
// status.
func (s *Store) RecordDelivery(ctx context.Context, d ports.WebhookDelivery) (bool, error) {
	stored, err := s.RecordDeliveries(ctx, []ports.WebhookDelivery{d})
	if err != nil {
		return false, err
	}
	return stored[0], nil
}

// RecordDeliveries stores each delivery unless one with its id exists (in
// the store or earlier in ds), all or nothing, and reports for each whether
// it stored it; a zero Status is pending. Errors: invalid (field status) for
// an unknown status, storing none.
func (s *Store) RecordDeliveries(ctx context.Context, ds []ports.WebhookDelivery) ([]bool, error) {
	for _, d := range ds {
		if d.Status != "" && !validDeliveryStatus(d.Status) {
			return nil, invalidField("status", "unknown delivery status")
		}
	}
	defer s.lock()()
	stored := make([]bool, len(ds))
	for i, d := range ds {
		if _, ok := s.scm.deliveries[d.ID]; ok {
			continue
		}
		if d.Status == "" {
			d.Status = ports.DeliveryPending
		}
		put(ctx, s, s.scm.deliveries, d.ID, copyDelivery(d))
		stored[i] = true
	}
	return stored, nil
}

// microseconds returns t in UTC cut to the microsecond, the precision
// ClaimWebhookDigests compares at.
func microseconds(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// ClaimWebhookDigests records each digest unless an equal one was recorded
// at or after since, all or nothing, and reports for each whether it
// recorded it.
func (s *Store) ClaimWebhookDigests(ctx context.Context, ds []ports.WebhookDigest, since time.Time) ([]bool, error) {
	defer s.lock()()
	since = microseconds(since)
	claimed := make([]bool, len(ds))
	for i, d := range ds {
		if old, ok := s.scm.digests[d.Digest]; ok && !old.At.Before(since) {
			continue
		}
		d.At = microseconds(d.At)
		put(ctx, s, s.scm.digests, d.Digest, d)
		claimed[i] = true
	}
	return claimed, nil
}

// GetDelivery returns a delivery; not_found when absent.
func (s *Store) GetDelivery(_ context.Context, id string) (ports.WebhookDelivery, error) {
	defer s.lock()()
	d, ok := s.scm.deliveries[id]
	if !ok {
		return ports.WebhookDelivery{}, ports.NotFound("webhook delivery", id)
	}
	return copyDelivery(d), nil
}

// GetDeliveries returns the deliveries of ids that exist, in the order of
// ids, each once.
func (s *Store) GetDeliveries(_ context.Context, ids []string) ([]ports.WebhookDelivery, error) {
	defer s.lock()()
	out := make([]ports.WebhookDelivery, 0, len(ids))
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		d, ok := s.scm.deliveries[id]
		if !ok || seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, copyDelivery(d))
	}
	return out, nil
}

// FinishDeliveries records how processing each delivery ended, skipping
// those that do not exist; of an id given twice, the last outcome counts.
// Errors: invalid (field status), finishing none, for pending or an unknown
// status.
func (s *Store) FinishDeliveries(ctx context.Context, fs []ports.DeliveryFinish, at time.Time) error {
	for _, f := range fs {
		if f.Status == ports.DeliveryPending || !validDeliveryStatus(f.Status) {
			return invalidField("status", "not a final delivery status")
		}
	}
	defer s.lock()()
	for _, f := range fs {
		d, ok := s.scm.deliveries[f.ID]
		if !ok {
			continue
		}
		d.Status, d.Error, d.ProcessedAt = f.Status, f.Error, utcPtr(&at)
		put(ctx, s, s.scm.deliveries, f.ID, d)
	}
	return nil
}

// FinishDelivery records how processing a delivery ended. Errors: not_found
// for a missing delivery; invalid (field status) for pending or an unknown
// status.
func (s *Store) FinishDelivery(ctx context.Context, id, status, errMsg string, at time.Time) error {
	if status == ports.DeliveryPending || !validDeliveryStatus(status) {
		return invalidField("status", "not a final delivery status")
	}
	defer s.lock()()
	d, ok := s.scm.deliveries[id]
	if !ok {
		return ports.NotFound("webhook delivery", id)
	}
	d.Status, d.Error, d.ProcessedAt = status, errMsg, utcPtr(&at)
	put(ctx, s, s.scm.deliveries, id, d)
	return nil
}

// AppendActivity stores activity entries, skipping any whose id exists (in
// the store or earlier in entries).
func (s *Store) AppendActivity(ctx context.Context, entries ...ports.SCMActivity) error {
	defer s.lock()()
	for _, e := range entries {
		if _, ok := s.scm.activity[e.ID]; ok {
			continue
		}
		e.At = utc(e.At)
		put(ctx, s, s.scm.activity, e.ID, e)
	}
	return nil
}

// ListActivity returns the activity of a provider repository id, newest
// first (entries of one millisecond by id, highest first), and the next
// page's cursor; invalid for a malformed cursor.
func (s *Store) ListActivity(_ context.Context, repoID int64, page ports.Page) ([]ports.SCMActivity, string, error) {
	defer s.lock()()
	var all []ports.SCMActivity
	for _, e := range s.scm.activity {
		if e.RepoID == repoID {
			all = append(all, e)
		}
	}
	return paginate(all, page, keyset[ports.SCMActivity]{desc: true, byTime: true,
		key: func(e ports.SCMActivity) (string, string) { return timeKey(e.At.Truncate(time.Millisecond)), e.ID }})
}
