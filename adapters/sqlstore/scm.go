package sqlstore

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/devpilot/devpilot/ports"
)

var _ ports.SCMStore = (*SCM)(nil)

// SCM keeps the source-control integration's records: pending OAuth
// authorisations, connections, the repositories they see, webhook deliveries
// and repository activity. It implements ports.SCMStore, with the errors that
// port documents.
type SCM struct {
	db *DB
}

// NewSCM returns the source-control store over db.
func NewSCM(db *DB) *SCM {
	return &SCM{db: db}
}

type oauthStateRow struct {
	State         string    `db:"state"`
	OrgID         string    `db:"org_id"`
	UserID        string    `db:"user_id"`
	CodeVerifier  string    `db:"code_verifier"`
	RedirectAfter string    `db:"redirect_after"`
	BindingHash   string    `db:"binding_hash"`
	CreatedAt     timestamp `db:"created_at"`
	ExpiresAt     timestamp `db:"expires_at"`
}

const oauthStateColumns = "state, org_id, user_id, code_verifier, redirect_after, binding_hash, created_at, expires_at"

// CreateOAuthState implements ports.SCMStore. It is a conflict when the state
// exists, and not_found when its user does not exist in its org. Messages
// never quote the state, which is a bearer secret until consumed.
func (s *SCM) CreateOAuthState(ctx context.Context, st ports.OAuthState) error {
	_, err := s.db.write(ctx).exec(ctx, "INSERT INTO oauth_states ("+oauthStateColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
		st.State, st.OrgID, st.UserID, st.CodeVerifier, st.RedirectAfter, st.BindingHash, timestamp(st.CreatedAt), timestamp(st.ExpiresAt))
	return storeErr(err, "oauth state", "user "+st.UserID)
}

// ConsumeOAuthState implements ports.SCMStore with one DELETE … RETURNING,
// so of any number of concurrent calls for a state exactly one gets it. A
// state whose ExpiresAt is not after now is expired.
func (s *SCM) ConsumeOAuthState(ctx context.Context, state string, now time.Time) (ports.OAuthState, error) {
	var r oauthStateRow
	err := s.db.write(ctx).get(ctx, &r, "DELETE FROM oauth_states WHERE state = ? RETURNING "+oauthStateColumns, state)
	if err != nil {
		return ports.OAuthState{}, storeErr(err, "oauth state", "")
	}
	// Stored times are whole microseconds: compare now as it would be stored.
	if !now.Truncate(time.Microsecond).Before(time.Time(r.ExpiresAt)) {
		return ports.OAuthState{}, &ports.Error{Kind: ports.KindGone, Code: ports.CodeExpired, Message: "oauth state expired"}
	}
	return ports.OAuthState{
		State: r.State, OrgID: r.OrgID, UserID: r.UserID, CodeVerifier: r.CodeVerifier,
		RedirectAfter: r.RedirectAfter, BindingHash: r.BindingHash, CreatedAt: time.Time(r.CreatedAt), ExpiresAt: time.Time(r.ExpiresAt),
	}, nil
}

// checkSCMStatus is an invalid error, naming the field "status", unless
// status is one of the ports' connection statuses.
func checkSCMStatus(status string) error {
	switch status {
	case ports.SCMActive, ports.SCMBroken:
		return nil
	}
	return ports.Invalid(fmt.Sprintf("unknown connection status %q", status), ports.FieldError{Field: "status", Reason: "unknown"})
}

type scmConnectionRow struct {
	ID          string    `db:"id"`
	OrgID       string    `db:"org_id"`
	UserID      string    `db:"user_id"`
	Provider    string    `db:"provider"`
	Login       string    `db:"login"`
	Scopes      string    `db:"scopes"`
	SealedToken string    `db:"sealed_token"`
	Status      string    `db:"status"`
	Error       string    `db:"error"`
	CreatedAt   timestamp `db:"created_at"`
	UpdatedAt   timestamp `db:"updated_at"`
}

func (r scmConnectionRow) connection() ports.SCMConnection {
	return ports.SCMConnection{
		ID: r.ID, OrgID: r.OrgID, UserID: r.UserID, Provider: r.Provider, Login: r.Login, Scopes: r.Scopes,
		SealedToken: r.SealedToken, Status: r.Status, Error: r.Error,
		CreatedAt: time.Time(r.CreatedAt), UpdatedAt: time.Time(r.UpdatedAt),
	}
}

const scmConnectionColumns = "id, org_id, user_id, provider, login, scopes, sealed_token, status, error, created_at, updated_at"

// SaveConnection implements ports.SCMStore with one upsert on the owner and
// provider. A zero Status is stored as active and a zero UpdatedAt as
// CreatedAt. Replacing a connection keeps its id and creation time and sets
// its login, scopes, sealed token, status, error and UpdatedAt from c. It is a
// conflict when c.ID is another connection's, not_found when the owner does
// not exist, and invalid for an unknown status.
func (s *SCM) SaveConnection(ctx context.Context, c ports.SCMConnection) (ports.SCMConnection, error) {
	status := c.Status
	if status == "" {
		status = ports.SCMActive
	}
	if err := checkSCMStatus(status); err != nil {
		return ports.SCMConnection{}, err
	}
	updated := c.UpdatedAt
	if updated.IsZero() {
		updated = c.CreatedAt
	}
	var r scmConnectionRow
	err := s.db.write(ctx).get(ctx, &r, "INSERT INTO scm_connections ("+scmConnectionColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (org_id, user_id, provider) DO UPDATE SET login = excluded.login, scopes = excluded.scopes,
			sealed_token = excluded.sealed_token, status = excluded.status, error = excluded.error,
			updated_at = excluded.updated_at
		RETURNING `+scmConnectionColumns,
		c.ID, c.OrgID, c.UserID, c.Provider, c.Login, c.Scopes, c.SealedToken, status, c.Error,
		timestamp(c.CreatedAt), timestamp(updated))
	if err != nil {
		return ports.SCMConnection{}, storeErr(err, "scm connection "+c.ID, "user "+c.UserID)
	}
	return r.connection(), nil
}

// GetConnection implements ports.SCMStore.
func (s *SCM) GetConnection(ctx context.Context, owner ports.Owner, provider string) (ports.SCMConnection, error) {
	var r scmConnectionRow
	err := s.db.read(ctx).get(ctx, &r,
		"SELECT "+scmConnectionColumns+" FROM scm_connections WHERE org_id = ? AND user_id = ? AND provider = ?",
		owner.OrgID, owner.UserID, provider)
	if err != nil {
		return ports.SCMConnection{}, storeErr(err, "scm connection "+provider, "")
	}
	return r.connection(), nil
}

// MarkConnectionBroken implements ports.SCMStore: it sets the status to
// broken, the error to reason and UpdatedAt to at. It is not_found when the
// connection does not exist.
func (s *SCM) MarkConnectionBroken(ctx context.Context, id, reason string, at time.Time) error {
	n, err := s.db.write(ctx).exec(ctx, "UPDATE scm_connections SET status = 'broken', error = ?, updated_at = ? WHERE id = ?",
		reason, timestamp(at), id)
	if err == nil && n == 0 {
		return ports.NotFound("scm connection", id)
	}
	return storeErr(err, "scm connection "+id, "")
}

type repositoryRow struct {
	ID            string     `db:"id"`
	OrgID         string     `db:"org_id"`
	UserID        string     `db:"user_id"`
	ConnectionID  string     `db:"connection_id"`
	ProviderID    int64      `db:"provider_id"`
	FullName      string     `db:"full_name"`
	Owner         string     `db:"owner"`
	Name          string     `db:"name"`
	Description   string     `db:"description"`
	DefaultBranch string     `db:"default_branch"`
	HTMLURL       string     `db:"html_url"`
	Private       bool       `db:"private"`
	PushedAt      *timestamp `db:"pushed_at"`
	CreatedAt     timestamp  `db:"created_at"`
	UpdatedAt     timestamp  `db:"updated_at"`
}

func (r repositoryRow) repository() ports.Repository {
	return ports.Repository{
		ID: r.ID, OrgID: r.OrgID, UserID: r.UserID, ConnectionID: r.ConnectionID,
		SCMRepo: ports.SCMRepo{
			ProviderID: r.ProviderID, FullName: r.FullName, Owner: r.Owner, Name: r.Name,
			Description: r.Description, DefaultBranch: r.DefaultBranch, HTMLURL: r.HTMLURL,
			Private: r.Private, PushedAt: r.PushedAt.timePtr(),
		},
		CreatedAt: time.Time(r.CreatedAt), UpdatedAt: time.Time(r.UpdatedAt),
	}
}

const repositoryColumns = `id, org_id, user_id, connection_id, provider_id, full_name, owner, name, description,
	default_branch, html_url, private, pushed_at, created_at, updated_at`

// SaveRepositories implements ports.SCMStore in one transaction, one upsert
// per repository, returning the stored repositories in the order of repos.
// The repositories are stored as the connection's owner's, whatever their
// OrgID, UserID and ConnectionID say. A new repository gets its ID and at as
// its creation time; a known one (same connection and provider id) keeps its
// ID and creation time and has every other field replaced. UpdatedAt is set
// to at. It is not_found when the connection does not exist, and a conflict
// when a new repository's ID is another repository's.
func (s *SCM) SaveRepositories(ctx context.Context, connectionID string, repos []ports.Repository, at time.Time) ([]ports.Repository, error) {
	// Upsert in provider id order, so concurrent saves for one connection
	// lock its rows in the same order and cannot deadlock.
	order := make([]int, len(repos))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(repos[a].ProviderID, repos[b].ProviderID) })
	saved := make([]ports.Repository, len(repos))
	err := s.db.WithinTx(ctx, func(ctx context.Context) error {
		c := s.db.write(ctx)
		var owner struct {
			OrgID  string `db:"org_id"`
			UserID string `db:"user_id"`
		}
		if err := c.get(ctx, &owner, "SELECT org_id, user_id FROM scm_connections WHERE id = ?", connectionID); err != nil {
			return storeErr(err, "scm connection "+connectionID, "")
		}
		for _, i := range order {
			r := repos[i]
			var row repositoryRow
			err := c.get(ctx, &row, "INSERT INTO repositories ("+repositoryColumns+`)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (connection_id, provider_id) DO UPDATE SET full_name = excluded.full_name,
					owner = excluded.owner, name = excluded.name, description = excluded.description,
					default_branch = excluded.default_branch, html_url = excluded.html_url,
					private = excluded.private, pushed_at = excluded.pushed_at, updated_at = excluded.updated_at
				RETURNING `+repositoryColumns,
				r.ID, owner.OrgID, owner.UserID, connectionID, r.ProviderID, r.FullName, r.Owner, r.Name,
				r.Description, r.DefaultBranch, r.HTMLURL, r.Private, timestampPtr(r.PushedAt),
				timestamp(at), timestamp(at))
			if err != nil {
				return storeErr(err, "repository "+r.ID, "scm connection "+connectionID)
			}
			saved[i] = row.repository()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return saved, nil
}

// PruneRepositories implements ports.SCMStore.
func (s *SCM) PruneRepositories(ctx context.Context, connectionID string, savedBefore time.Time) (int, error) {
	n, err := s.db.write(ctx).exec(ctx, "DELETE FROM repositories WHERE connection_id = ? AND updated_at < ?",
		connectionID, timestamp(savedBefore))
	return int(n), storeErr(err, "repositories", "")
}

// ListRepositories implements ports.SCMStore. Full names compare bytewise,
// and ties are ordered by id; a page holds at most page.Size() items.
func (s *SCM) ListRepositories(ctx context.Context, owner ports.Owner, page ports.Page) ([]ports.Repository, string, error) {
	rows, next, err := listPage(ctx, s.db.read(ctx), "SELECT "+repositoryColumns+" FROM repositories WHERE org_id = ? AND user_id = ?",
		[]any{owner.OrgID, owner.UserID}, page, keyset[repositoryRow]{key: "full_name", id: "id",
			last: func(r repositoryRow) (string, string) { return r.FullName, r.ID }})
	if err != nil {
		return nil, "", storeErr(err, "repositories", "")
	}
	repos := make([]ports.Repository, len(rows))
	for i, r := range rows {
		repos[i] = r.repository()
	}
	return repos, next, nil
}

// GetRepository implements ports.SCMStore.
func (s *SCM) GetRepository(ctx context.Context, owner ports.Owner, id string) (ports.Repository, error) {
	var r repositoryRow
	err := s.db.read(ctx).get(ctx, &r, "SELECT "+repositoryColumns+" FROM repositories WHERE id = ? AND org_id = ? AND user_id = ?",
		id, owner.OrgID, owner.UserID)
	if err != nil {
		return ports.Repository{}, storeErr(err, "repository "+id, "")
	}
	return r.repository(), nil
}

// checkDeliveryStatus is an invalid error, naming the field "status", unless
// status is one of the ports' delivery statuses (pending only when
// allowPending).
func checkDeliveryStatus(status string, allowPending bool) error {
	switch status {
	case ports.DeliveryProcessed, ports.DeliveryIgnored, ports.DeliveryFailed:
		return nil
	case ports.DeliveryPending:
		if allowPending {
			return nil
		}
	}
	return ports.Invalid(fmt.Sprintf("unknown delivery status %q", status), ports.FieldError{Field: "status", Reason: "unknown"})
}

type deliveryRow struct {
	ID          string     `db:"id"`
	Event       string     `db:"event"`
	Payload     []byte     `db:"payload"`
	Status      string     `db:"status"`
	Error       string     `db:"error"`
	ReceivedAt  timestamp  `db:"received_at"`
	ProcessedAt *timestamp `db:"processed_at"`
}

const deliveryColumns = "id, event, payload, status, error, received_at, processed_at"

// RecordDelivery implements ports.SCMStore with RecordDeliveries: one
// INSERT … ON CONFLICT DO NOTHING and no read, so of any number of
// concurrent calls for one id exactly one reports true, and a repeat leaves
// the first delivery as it was. A zero Status is stored as pending; the
// payload is kept byte for byte. It is invalid for an unknown status.
func (s *SCM) RecordDelivery(ctx context.Context, d ports.WebhookDelivery) (bool, error) {
	stored, err := s.RecordDeliveries(ctx, []ports.WebhookDelivery{d})
	if err != nil {
		return false, err
	}
	return stored[0], nil
}

// maxDeliveryStatementBytes bounds the payload bytes of one multi-row
// INSERT of RecordDeliveries, well below PostgreSQL's 1 GB message limit;
// a larger payload goes in a statement of its own.
const maxDeliveryStatementBytes = 64 << 20

// RecordDeliveries implements ports.SCMStore with multi-row INSERT … ON
// CONFLICT (id) DO NOTHING RETURNING id statements (one, unless the
// deliveries outgrow maxInsertArgs or maxDeliveryStatementBytes, then in a
// transaction), and no read: of concurrent calls recording one id, exactly
// one reports it stored. A repeat of an id within ds is reported not stored
// without reaching the database. Rows are inserted in id order, so that
// concurrent calls sharing ids wait on each other's rows in one order and
// cannot deadlock. Statuses and payloads are as RecordDelivery's; it is
// invalid, storing nothing, when any status is unknown.
func (s *SCM) RecordDeliveries(ctx context.Context, ds []ports.WebhookDelivery) ([]bool, error) {
	stored := make([]bool, len(ds))
	first := make(map[string]int, len(ds)) // id → index in ds of its first delivery
	rows := make([]deliveryRow, 0, len(ds))
	for i, d := range ds {
		status := d.Status
		if status == "" {
			status = ports.DeliveryPending
		}
		if err := checkDeliveryStatus(status, true); err != nil {
			return nil, err
		}
		if _, repeat := first[d.ID]; repeat {
			continue
		}
		first[d.ID] = i
		payload := d.Payload
		if payload == nil {
			payload = []byte{} // the column is NOT NULL
		}
		rows = append(rows, deliveryRow{ID: d.ID, Event: d.Event, Payload: payload, Status: status, Error: d.Error,
			ReceivedAt: timestamp(d.ReceivedAt), ProcessedAt: timestampPtr(d.ProcessedAt)})
	}
	if len(rows) == 0 {
		return stored, nil
	}
	slices.SortFunc(rows, func(a, b deliveryRow) int { return cmp.Compare(a.ID, b.ID) })
	chunks := deliveryChunks(rows)
	insert := func(ctx context.Context) error {
		w := s.db.write(ctx)
		for _, chunk := range chunks {
			query := "INSERT INTO webhook_deliveries (" + deliveryColumns + ") VALUES " +
				strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?), ", len(chunk)), ", ") +
				" ON CONFLICT (id) DO NOTHING RETURNING id"
			args := make([]any, 0, len(chunk)*7)
			for _, r := range chunk {
				args = append(args, r.ID, r.Event, r.Payload, r.Status, r.Error, r.ReceivedAt, r.ProcessedAt)
			}
			var ids []string
			if err := w.list(ctx, &ids, query, args...); err != nil {
				return err
			}
			for _, id := range ids {
				stored[first[id]] = true
			}
		}
		return nil
	}
	var err error
	if len(chunks) == 1 {
		err = insert(ctx)
	} else {
		err = s.db.WithinTx(ctx, insert)
	}
	if err != nil {
		return nil, storeErr(err, fmt.Sprintf("%d webhook deliveries", len(rows)), "")
	}
	return stored, nil
}

// deliveryChunks splits rows into the rows of each INSERT: at most
// maxInsertArgs arguments and, unless one payload alone is larger,
// maxDeliveryStatementBytes of payload.
func deliveryChunks(rows []deliveryRow) [][]deliveryRow {
	const width = 7 // the columns of deliveryColumns
	var chunks [][]deliveryRow
	start, bytes := 0, 0
	for i, r := range rows {
		if i > start && ((i-start+1)*width > maxInsertArgs || bytes+len(r.Payload) > maxDeliveryStatementBytes) {
			chunks = append(chunks, rows[start:i])
			start, bytes = i, 0
		}
		bytes += len(r.Payload)
	}
	return append(chunks, rows[start:])
}

// ClaimWebhookDigests implements ports.SCMStore with multi-row INSERT … ON
// CONFLICT (digest) DO UPDATE … WHERE received_at < since RETURNING digest
// statements (in a transaction when there are several) and no read: a
// concurrent claim of one digest waits for the row the first inserts, then
// finds it recent and claims nothing. Rows are written in digest order, so
// concurrent calls sharing digests cannot deadlock. A repeat of a digest
// within ds is reported not claimed without reaching the database.
func (s *SCM) ClaimWebhookDigests(ctx context.Context, ds []ports.WebhookDigest, since time.Time) ([]bool, error) {
	claimed := make([]bool, len(ds))
	first := make(map[string]int, len(ds)) // digest → index in ds of its first claim
	rows := make([]ports.WebhookDigest, 0, len(ds))
	for i, d := range ds {
		if _, repeat := first[d.Digest]; repeat {
			continue
		}
		first[d.Digest] = i
		rows = append(rows, d)
	}
	if len(rows) == 0 {
		return claimed, nil
	}
	slices.SortFunc(rows, func(a, b ports.WebhookDigest) int { return cmp.Compare(a.Digest, b.Digest) })
	const width = 3
	chunk := maxInsertArgs / width
	claim := func(ctx context.Context) error {
		w := s.db.write(ctx)
		for start := 0; start < len(rows); start += chunk {
			part := rows[start:min(start+chunk, len(rows))]
			args := make([]any, 0, len(part)*width+1)
			for _, d := range part {
				args = append(args, d.Digest, d.DeliveryID, timestamp(d.At))
			}
			args = append(args, timestamp(since))
			var got []string
			if err := w.list(ctx, &got, "INSERT INTO webhook_digests (digest, delivery_id, received_at) VALUES "+
				strings.TrimSuffix(strings.Repeat("(?, ?, ?), ", len(part)), ", ")+
				` ON CONFLICT (digest) DO UPDATE SET delivery_id = excluded.delivery_id, received_at = excluded.received_at
				WHERE webhook_digests.received_at < ? RETURNING digest`, args...); err != nil {
				return err
			}
			for _, d := range got {
				claimed[first[d]] = true
			}
		}
		return nil
	}
	var err error
	if len(rows) <= chunk {
		err = claim(ctx)
	} else {
		err = s.db.WithinTx(ctx, claim)
	}
	if err != nil {
		return nil, storeErr(err, fmt.Sprintf("%d webhook digests", len(rows)), "")
	}
	return claimed, nil
}

// GetDelivery implements ports.SCMStore; an empty payload reads back nil.
func (s *SCM) GetDelivery(ctx context.Context, id string) (ports.WebhookDelivery, error) {
	var r deliveryRow
	err := s.db.read(ctx).get(ctx, &r, "SELECT "+deliveryColumns+" FROM webhook_deliveries WHERE id = ?", id)
	if err != nil {
		return ports.WebhookDelivery{}, storeErr(err, "webhook delivery "+id, "")
	}
	return r.delivery(), nil
}

// GetDeliveries implements ports.SCMStore with one SELECT … WHERE id IN
// (…) per maxInsertArgs ids; an empty payload reads back nil.
func (s *SCM) GetDeliveries(ctx context.Context, ids []string) ([]ports.WebhookDelivery, error) {
	unique := make([]string, 0, len(ids))
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			unique = append(unique, id)
		}
	}
	byID := make(map[string]ports.WebhookDelivery, len(unique))
	r := s.db.read(ctx)
	for chunk := range slices.Chunk(unique, maxInsertArgs) {
		var rows []deliveryRow
		query := "SELECT " + deliveryColumns + " FROM webhook_deliveries WHERE id IN (?" + strings.Repeat(", ?", len(chunk)-1) + ")"
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		if err := r.list(ctx, &rows, query, args...); err != nil {
			return nil, storeErr(err, fmt.Sprintf("%d webhook deliveries", len(unique)), "")
		}
		for _, row := range rows {
			byID[row.ID] = row.delivery()
		}
	}
	out := make([]ports.WebhookDelivery, 0, len(byID))
	for _, id := range unique {
		if d, ok := byID[id]; ok {
			out = append(out, d)
		}
	}
	return out, nil
}

// delivery is the row as the ports have it; an empty payload is nil.
func (r deliveryRow) delivery() ports.WebhookDelivery {
	d := ports.WebhookDelivery{
		ID: r.ID, Event: r.Event, Payload: r.Payload, Status: r.Status, Error: r.Error,
		ReceivedAt: time.Time(r.ReceivedAt), ProcessedAt: r.ProcessedAt.timePtr(),
	}
	if len(d.Payload) == 0 {
		d.Payload = nil
	}
	return d
}

// FinishDeliveries implements ports.SCMStore with one UPDATE … WHERE id IN
// (…) per outcome (status and error) and per maxInsertArgs ids, in a
// transaction when there are several; deliveries are updated in id order,
// so that concurrent calls cannot deadlock. Of an id given twice, the last
// outcome counts.
func (s *SCM) FinishDeliveries(ctx context.Context, fs []ports.DeliveryFinish, at time.Time) error {
	type outcome struct{ status, err string }
	last := make(map[string]outcome, len(fs))
	for _, f := range fs {
		if err := checkDeliveryStatus(f.Status, false); err != nil {
			return err
		}
		last[f.ID] = outcome{f.Status, f.Error}
	}
	if len(last) == 0 {
		return nil
	}
	ids := slices.Sorted(maps.Keys(last))
	groups := map[outcome][]string{}
	var order []outcome
	for _, id := range ids {
		o := last[id]
		if _, ok := groups[o]; !ok {
			order = append(order, o)
		}
		groups[o] = append(groups[o], id)
	}
	type statement struct {
		o   outcome
		ids []string
	}
	var statements []statement
	for _, o := range order {
		for chunk := range slices.Chunk(groups[o], maxInsertArgs) {
			statements = append(statements, statement{o, chunk})
		}
	}
	update := func(ctx context.Context) error {
		w := s.db.write(ctx)
		for _, st := range statements {
			args := make([]any, 0, len(st.ids)+3)
			args = append(args, st.o.status, st.o.err, timestamp(at))
			for _, id := range st.ids {
				args = append(args, id)
			}
			if _, err := w.exec(ctx, "UPDATE webhook_deliveries SET status = ?, error = ?, processed_at = ? WHERE id IN (?"+
				strings.Repeat(", ?", len(st.ids)-1)+")", args...); err != nil {
				return err
			}
		}
		return nil
	}
	var err error
	if len(statements) == 1 {
		err = update(ctx)
	} else {
		err = s.db.WithinTx(ctx, update)
	}
	return storeErr(err, fmt.Sprintf("%d webhook deliveries", len(ids)), "")
}

// FinishDelivery implements ports.SCMStore: it sets the status, the error
// message and ProcessedAt to at, whatever the delivery's status was. It is
// not_found when the delivery does not exist, and invalid for a status other
// than processed, ignored and failed.
func (s *SCM) FinishDelivery(ctx context.Context, id, status, errMsg string, at time.Time) error {
	if err := checkDeliveryStatus(status, false); err != nil {
		return err
	}
	n, err := s.db.write(ctx).exec(ctx, "UPDATE webhook_deliveries SET status = ?, error = ?, processed_at = ? WHERE id = ?",
		status, errMsg, timestamp(at), id)
	if err == nil && n == 0 {
		return ports.NotFound("webhook delivery", id)
	}
	return storeErr(err, "webhook delivery "+id, "")
}

type activityRow struct {
	ID         string    `db:"id"`
	RepoID     int64     `db:"repo_id"`
	Kind       string    `db:"kind"`
	Action     string    `db:"action"`
	Actor      string    `db:"actor"`
	Ref        string    `db:"ref"`
	Summary    string    `db:"summary"`
	URL        string    `db:"url"`
	SHA        string    `db:"sha"`
	At         timestamp `db:"at"`
	Source     string    `db:"source"`
	DeliveryID string    `db:"delivery_id"`
}

const activityColumns = "id, repo_id, kind, action, actor, ref, summary, url, sha, at, source, delivery_id"

// AppendActivity implements ports.SCMStore with multi-row INSERT … ON
// CONFLICT DO NOTHING statements in one transaction: an entry whose id is
// stored already, or repeats an earlier entry of the call, is skipped and
// the stored one kept.
func (s *SCM) AppendActivity(ctx context.Context, entries ...ports.SCMActivity) error {
	if len(entries) == 0 {
		return nil
	}
	rows := make([][]any, len(entries))
	for i, e := range entries {
		rows[i] = []any{e.ID, e.RepoID, e.Kind, e.Action, e.Actor, e.Ref, e.Summary, e.URL, e.SHA, timestamp(e.At), e.Source, e.DeliveryID}
	}
	err := s.db.insertAtomicallyWith(ctx, "scm_activity", activityColumns, "ON CONFLICT (id) DO NOTHING", rows)
	return storeErr(err, "scm activity", "")
}

// ListActivity implements ports.SCMStore. A page holds at most page.Size()
// items; entries of the same time are ordered by id, highest first.
func (s *SCM) ListActivity(ctx context.Context, repoID int64, page ports.Page) ([]ports.SCMActivity, string, error) {
	rows, next, err := listPage(ctx, s.db.read(ctx), "SELECT "+activityColumns+" FROM scm_activity WHERE repo_id = ?",
		[]any{repoID}, page, keyset[activityRow]{key: "at", id: "id", desc: true, byTime: true,
			last: func(r activityRow) (string, string) { return timeKey(time.Time(r.At)), r.ID }})
	if err != nil {
		return nil, "", storeErr(err, "scm activity", "")
	}
	entries := make([]ports.SCMActivity, len(rows))
	for i, r := range rows {
		entries[i] = ports.SCMActivity{
			ID: r.ID, RepoID: r.RepoID, Kind: r.Kind, Action: r.Action, Actor: r.Actor, Ref: r.Ref,
			Summary: r.Summary, URL: r.URL, SHA: r.SHA, At: time.Time(r.At), Source: r.Source, DeliveryID: r.DeliveryID,
		}
	}
	return entries, next, nil
}
