package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/devpilot/devpilot/ports"
)

var (
	_ ports.SpecStore     = (*Spec)(nil)
	_ ports.StandardStore = (*Spec)(nil)
)

// Spec keeps specification sessions, their inputs and artifacts, and
// organisation standards; it implements ports.SpecStore and
// ports.StandardStore, with the errors those ports document.
type Spec struct {
	db *DB
}

// NewSpec returns the specification stores over db.
func NewSpec(db *DB) *Spec {
	return &Spec{db: db}
}

// stageOrder returns the stage's place in ports.Stages; an unknown stage is
// an invalid error naming the field "stage".
func stageOrder(stage ports.Stage) (int, error) {
	if i := slices.Index(ports.Stages, stage); i >= 0 {
		return i, nil
	}
	return 0, ports.Invalid(fmt.Sprintf("unknown stage %q", stage), ports.FieldError{Field: "stage", Reason: "unknown"})
}

// encodeList returns v as a JSON array, "[]" when it is empty.
func encodeList[T any](v []T) (string, error) {
	if len(v) == 0 {
		return "[]", nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", ports.Wrap(ports.KindInternal, err, "encode list")
	}
	return string(b), nil
}

// decodeList reads a JSON array from encodeList; an empty one is nil.
func decodeList[T any](text string) ([]T, error) {
	var v []T
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return nil, ports.Wrap(ports.KindInternal, fmt.Errorf("sqlstore: bad JSON list: %w", err), "database error")
	}
	if len(v) == 0 {
		return nil, nil
	}
	return v, nil
}

type specSessionRow struct {
	ID              string    `db:"id"`
	OrgID           string    `db:"org_id"`
	UserID          string    `db:"user_id"`
	Name            string    `db:"name"`
	RepoID          string    `db:"repo_id"`
	Status          string    `db:"status"`
	CurrentStage    string    `db:"current_stage"`
	GeneratingStage string    `db:"generating_stage"`
	GenerationID    string    `db:"generation_id"`
	Error           jsonText  `db:"error"`
	CreatedAt       timestamp `db:"created_at"`
	UpdatedAt       timestamp `db:"updated_at"`
}

func (r specSessionRow) session() (ports.SpecSession, error) {
	s := ports.SpecSession{
		ID: r.ID, OrgID: r.OrgID, UserID: r.UserID, Name: r.Name, RepoID: r.RepoID, Status: ports.SpecStatus(r.Status),
		CurrentStage: ports.Stage(r.CurrentStage), Generating: ports.Stage(r.GeneratingStage), GenerationID: r.GenerationID,
		CreatedAt: time.Time(r.CreatedAt), UpdatedAt: time.Time(r.UpdatedAt),
	}
	if len(r.Error) > 0 {
		s.Error = new(ports.SpecError)
		if err := json.Unmarshal(r.Error, s.Error); err != nil {
			return ports.SpecSession{}, ports.Wrap(ports.KindInternal, fmt.Errorf("sqlstore: bad spec error: %w", err), "database error")
		}
	}
	return s, nil
}

func encodeSpecError(e *ports.SpecError) (jsonText, error) {
	if e == nil {
		return nil, nil
	}
	b, err := json.Marshal(e)
	if err != nil {
		return nil, ports.Wrap(ports.KindInternal, err, "encode spec error")
	}
	return b, nil
}

const specSessionColumns = `id, org_id, user_id, name, status, current_stage, generating_stage, generation_id,
	error, created_at, updated_at, repo_id`

// CreateSpecSession implements ports.SpecStore: the session and all of inputs
// are stored, or nothing. A zero Status is stored as draft and a zero
// UpdatedAt as CreatedAt; the inputs are stored in s, whatever their
// SessionID says, in the order given. It is a conflict when the session's or
// an input's id exists, and not_found when the owner does not exist.
func (s *Spec) CreateSpecSession(ctx context.Context, ss ports.SpecSession, inputs []ports.SpecInput) error {
	status := ss.Status
	if status == "" {
		status = ports.SpecDraft
	}
	updated := ss.UpdatedAt
	if updated.IsZero() {
		updated = ss.CreatedAt
	}
	specErr, err := encodeSpecError(ss.Error)
	if err != nil {
		return err
	}
	return s.db.WithinTx(ctx, func(ctx context.Context) error {
		c := s.db.write(ctx)
		_, err := c.exec(ctx, "INSERT INTO spec_sessions ("+specSessionColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
			ss.ID, ss.OrgID, ss.UserID, ss.Name, string(status), string(ss.CurrentStage), string(ss.Generating),
			ss.GenerationID, specErr, timestamp(ss.CreatedAt), timestamp(updated), ss.RepoID)
		if err != nil {
			return storeErr(err, "spec session "+ss.ID, "user "+ss.UserID)
		}
		// One statement per input, so the position column follows inputs' order.
		for _, in := range inputs {
			_, err := c.exec(ctx, "INSERT INTO spec_inputs ("+specInputColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
				in.ID, ss.ID, string(in.Kind), in.Title, in.ContentType, in.Size, in.Content, timestamp(in.CreatedAt))
			if err != nil {
				return storeErr(err, "spec input "+in.ID, "")
			}
		}
		return nil
	})
}

// GetSpecSession implements ports.SpecStore.
func (s *Spec) GetSpecSession(ctx context.Context, owner ports.Owner, id string) (ports.SpecSession, error) {
	var r specSessionRow
	err := s.db.read(ctx).get(ctx, &r, "SELECT "+specSessionColumns+" FROM spec_sessions WHERE id = ? AND org_id = ? AND user_id = ?",
		id, owner.OrgID, owner.UserID)
	if err != nil {
		return ports.SpecSession{}, storeErr(err, "spec session "+id, "")
	}
	return r.session()
}

// SetSpecRepository implements ports.SpecStore with one update; it sets
// UpdatedAt to at.
func (s *Spec) SetSpecRepository(ctx context.Context, owner ports.Owner, id, repoID string, at time.Time) (ports.SpecSession, error) {
	var r specSessionRow
	err := s.db.write(ctx).get(ctx, &r, `UPDATE spec_sessions SET repo_id = ?, updated_at = ?
		WHERE id = ? AND org_id = ? AND user_id = ?
		RETURNING `+specSessionColumns,
		repoID, timestamp(at), id, owner.OrgID, owner.UserID)
	if err != nil {
		return ports.SpecSession{}, storeErr(err, "spec session "+id, "")
	}
	return r.session()
}

// RenameSpecSession implements ports.SpecStore with one update.
func (s *Spec) RenameSpecSession(ctx context.Context, owner ports.Owner, id, name string, at time.Time) (ports.SpecSession, error) {
	var r specSessionRow
	err := s.db.write(ctx).get(ctx, &r, `UPDATE spec_sessions SET name = ?, updated_at = ?
		WHERE id = ? AND org_id = ? AND user_id = ?
		RETURNING `+specSessionColumns,
		name, timestamp(at), id, owner.OrgID, owner.UserID)
	if err != nil {
		return ports.SpecSession{}, storeErr(err, "spec session "+id, "")
	}
	return r.session()
}

// DeleteSpecSession implements ports.SpecStore with one conditional
// delete: the tables of what a session owns (spec_inputs, spec_artifacts,
// spec_digests, spec_issue_exports, spec_exported_issues) refer to it ON
// DELETE CASCADE, so they go in the same statement; a session that is
// generating, or has an issue export queued or running, is not matched, so
// a worker never writes into a deleted one.
func (s *Spec) DeleteSpecSession(ctx context.Context, owner ports.Owner, id string) (ports.SpecSession, error) {
	var deleted ports.SpecSession
	err := s.db.WithinTx(ctx, func(ctx context.Context) error {
		c := s.db.write(ctx)
		var r specSessionRow
		err := c.get(ctx, &r, `DELETE FROM spec_sessions
			WHERE id = ? AND org_id = ? AND user_id = ? AND status <> 'generating'
			AND NOT EXISTS (SELECT 1 FROM spec_issue_exports e WHERE e.session_id = spec_sessions.id AND e.status IN ('queued', 'running'))
			RETURNING `+specSessionColumns,
			id, owner.OrgID, owner.UserID)
		if errors.Is(err, sql.ErrNoRows) {
			found, err := c.exists(ctx, "SELECT 1 FROM spec_sessions WHERE id = ? AND org_id = ? AND user_id = ?",
				id, owner.OrgID, owner.UserID)
			switch {
			case err != nil:
				return storeErr(err, "spec session "+id, "")
			case !found:
				return ports.NotFound("spec session", id)
			}
			generating, err := c.exists(ctx, "SELECT 1 FROM spec_sessions WHERE id = ? AND status = 'generating'", id)
			switch {
			case err != nil:
				return storeErr(err, "spec session "+id, "")
			case generating:
				return &ports.Error{Kind: ports.KindConflict, Code: ports.CodeSpecGenerating,
					Message: fmt.Sprintf("spec session %s is generating", id)}
			}
			return &ports.Error{Kind: ports.KindConflict, Code: ports.CodeSpecExportRunning,
				Message: fmt.Sprintf("spec session %s has an issue export queued or running", id)}
		}
		if err != nil {
			return storeErr(err, "spec session "+id, "")
		}
		deleted, err = r.session()
		return err
	})
	return deleted, err
}

// ListSpecSessions implements ports.SpecStore. A page holds at most
// page.Size() items; ties in the update time are ordered by id.
func (s *Spec) ListSpecSessions(ctx context.Context, owner ports.Owner, page ports.Page) ([]ports.SpecSession, string, error) {
	rows, next, err := listPage(ctx, s.db.read(ctx), "SELECT "+specSessionColumns+" FROM spec_sessions WHERE org_id = ? AND user_id = ?",
		[]any{owner.OrgID, owner.UserID}, page, keyset[specSessionRow]{key: "updated_at", id: "id", desc: true, byTime: true,
			last: func(r specSessionRow) (string, string) { return timeKey(time.Time(r.UpdatedAt)), r.ID }})
	if err != nil {
		return nil, "", storeErr(err, "spec sessions", "")
	}
	sessions := make([]ports.SpecSession, len(rows))
	for i, r := range rows {
		var err error
		if sessions[i], err = r.session(); err != nil {
			return nil, "", err
		}
	}
	return sessions, next, nil
}

type specInputRow struct {
	ID          string    `db:"id"`
	SessionID   string    `db:"session_id"`
	Kind        string    `db:"kind"`
	Title       string    `db:"title"`
	ContentType string    `db:"content_type"`
	Size        int64     `db:"size"`
	Content     string    `db:"content"`
	CreatedAt   timestamp `db:"created_at"`
}

const specInputColumns = "id, session_id, kind, title, content_type, size, content, created_at"

// AddSpecInput implements ports.SpecStore: in is stored in session
// in.SessionID when that is the owner's. In one transaction it locks the
// session's row (FOR NO KEY UPDATE on PostgreSQL, which still lets inputs
// refer to it; SQLite's one writer runs one transaction at a time
// already), sums the session's inputs, and inserts, so concurrent adds are
// counted one after another. It is a conflict when in's id exists.
func (s *Spec) AddSpecInput(ctx context.Context, owner ports.Owner, in ports.SpecInput, limits ports.SpecInputLimits) (ports.SpecInputTotals, error) {
	var totals ports.SpecInputTotals
	err := s.db.WithinTx(ctx, func(ctx context.Context) error {
		c := s.db.write(ctx)
		lock := ""
		if s.db.Dialect == DialectPostgres {
			lock = " FOR NO KEY UPDATE"
		}
		found, err := c.exists(ctx, "SELECT 1 FROM spec_sessions WHERE id = ? AND org_id = ? AND user_id = ?"+lock,
			in.SessionID, owner.OrgID, owner.UserID)
		switch {
		case err != nil:
			return storeErr(err, "spec session "+in.SessionID, "")
		case !found:
			return ports.NotFound("spec session", in.SessionID)
		}
		var r struct {
			Inputs int   `db:"inputs"`
			Bytes  int64 `db:"bytes"`
		}
		if err := c.get(ctx, &r, "SELECT count(*) AS inputs, CAST(COALESCE(SUM(size), 0) AS BIGINT) AS bytes FROM spec_inputs WHERE session_id = ?",
			in.SessionID); err != nil {
			return storeErr(err, "spec inputs", "")
		}
		totals = ports.SpecInputTotals{Inputs: r.Inputs, Bytes: r.Bytes}
		if (limits.MaxInputs > 0 && r.Inputs >= limits.MaxInputs) || (limits.MaxBytes > 0 && r.Bytes+in.Size > limits.MaxBytes) {
			return &ports.Error{Kind: ports.KindConflict, Code: ports.CodeSpecInputsFull,
				Message: fmt.Sprintf("spec session %s holds %d inputs of %d bytes in all; the input would pass its limits", in.SessionID, r.Inputs, r.Bytes)}
		}
		_, err = c.exec(ctx, "INSERT INTO spec_inputs ("+specInputColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
			in.ID, in.SessionID, string(in.Kind), in.Title, in.ContentType, in.Size, in.Content, timestamp(in.CreatedAt))
		return storeErr(err, "spec input "+in.ID, "")
	})
	return totals, err
}

// ListSpecInputs implements ports.SpecStore: inputs are listed in the order
// they were stored. An unknown session has none.
func (s *Spec) ListSpecInputs(ctx context.Context, sessionID string) ([]ports.SpecInput, error) {
	var rows []specInputRow
	err := s.db.read(ctx).list(ctx, &rows,
		"SELECT "+specInputColumns+" FROM spec_inputs WHERE session_id = ? ORDER BY position", sessionID)
	if err != nil {
		return nil, storeErr(err, "spec inputs", "")
	}
	inputs := make([]ports.SpecInput, len(rows))
	for i, r := range rows {
		inputs[i] = ports.SpecInput{
			ID: r.ID, SessionID: r.SessionID, Kind: ports.InputKind(r.Kind), Title: r.Title,
			ContentType: r.ContentType, Size: r.Size, Content: r.Content, CreatedAt: time.Time(r.CreatedAt),
		}
	}
	return inputs, nil
}

// StartGeneration implements ports.SpecStore with one conditional update, so
// of any number of concurrent calls on a session exactly one succeeds. It
// sets UpdatedAt to at and is invalid for an unknown stage or an empty
// generationID.
func (s *Spec) StartGeneration(ctx context.Context, owner ports.Owner, id string, stage ports.Stage, generationID string, at time.Time) (ports.SpecSession, error) {
	if _, err := stageOrder(stage); err != nil {
		return ports.SpecSession{}, err
	}
	if generationID == "" {
		return ports.SpecSession{}, ports.Invalid("generation id is required", ports.FieldError{Field: "generation_id", Reason: "required"})
	}
	c := s.db.write(ctx)
	var r specSessionRow
	err := c.get(ctx, &r, `UPDATE spec_sessions
		SET status = 'generating', generating_stage = ?, generation_id = ?, error = NULL, updated_at = ?
		WHERE id = ? AND org_id = ? AND user_id = ? AND status <> 'generating'
		RETURNING `+specSessionColumns,
		string(stage), generationID, timestamp(at), id, owner.OrgID, owner.UserID)
	if errors.Is(err, sql.ErrNoRows) {
		found, err := c.exists(ctx, "SELECT 1 FROM spec_sessions WHERE id = ? AND org_id = ? AND user_id = ?",
			id, owner.OrgID, owner.UserID)
		switch {
		case err != nil:
			return ports.SpecSession{}, storeErr(err, "spec session "+id, "")
		case !found:
			return ports.SpecSession{}, ports.NotFound("spec session", id)
		}
		return ports.SpecSession{}, ports.Errorf(ports.KindConflict, "a generation is already running")
	}
	if err != nil {
		return ports.SpecSession{}, storeErr(err, "spec session "+id, "")
	}
	return r.session()
}

type specArtifactRow struct {
	ID           string    `db:"id"`
	SessionID    string    `db:"session_id"`
	Stage        string    `db:"stage"`
	Version      int       `db:"version"`
	Format       string    `db:"format"`
	Content      string    `db:"content"`
	Data         jsonText  `db:"data"`
	Checks       string    `db:"checks"`
	Model        string    `db:"model"`
	GenerationID string    `db:"generation_id"`
	Stale        bool      `db:"stale"`
	CreatedAt    timestamp `db:"created_at"`
	// PromptVersion is '' and Generation NULL for artifacts stored before
	// they were recorded.
	PromptVersion string   `db:"prompt_version"`
	Generation    jsonText `db:"generation"`
	// EditedBy is '' for artifacts a model generated.
	EditedBy string `db:"edited_by"`
}

// specGenerationJSON is ports.SpecGeneration as the generation column
// holds it.
type specGenerationJSON struct {
	Calls            int            `json:"calls"`
	Batches          int            `json:"batches"`
	FirstTryValid    int            `json:"first_try_valid"`
	InvalidAnswers   int            `json:"invalid_answers"`
	RepairTurns      int            `json:"repair_turns"`
	PromptTokens     int            `json:"prompt_tokens"`
	CompletionTokens int            `json:"completion_tokens"`
	DurationMS       int64          `json:"duration_ms"`
	FindingsByKind   map[string]int `json:"findings_by_kind,omitempty"`
	Temperature      *float64       `json:"temperature,omitempty"`
	Seed             *int64         `json:"seed,omitempty"`
}

// encodeGeneration is g as JSON text; none (NULL) for the zero statistics.
func encodeGeneration(g ports.SpecGeneration) (jsonText, error) {
	if g.Calls == 0 && g.Batches == 0 && g.FirstTryValid == 0 && g.InvalidAnswers == 0 && g.RepairTurns == 0 &&
		g.PromptTokens == 0 && g.CompletionTokens == 0 && g.DurationMS == 0 && len(g.FindingsByKind) == 0 &&
		g.Temperature == nil && g.Seed == nil {
		return nil, nil
	}
	b, err := json.Marshal(specGenerationJSON(g))
	if err != nil {
		return nil, ports.Wrap(ports.KindInternal, err, "encode generation statistics")
	}
	return b, nil
}

// decodeGeneration reads encodeGeneration's text; NULL is the zero
// statistics, and an empty FindingsByKind reads back as nil.
func decodeGeneration(text jsonText) (ports.SpecGeneration, error) {
	if len(text) == 0 {
		return ports.SpecGeneration{}, nil
	}
	var g specGenerationJSON
	if err := json.Unmarshal(text, &g); err != nil {
		return ports.SpecGeneration{}, ports.Wrap(ports.KindInternal, fmt.Errorf("sqlstore: bad generation statistics: %w", err), "database error")
	}
	if len(g.FindingsByKind) == 0 {
		g.FindingsByKind = nil
	}
	return ports.SpecGeneration(g), nil
}

// CompleteGeneration implements ports.SpecStore in one transaction: a's
// Version and Stale are ignored (it is stored as the next version, not
// stale), a zero CreatedAt is stored as at, and the session's UpdatedAt is
// set to at. Older versions of a's stage are superseded, not stale. It is
// also a conflict when the session is generating a.GenerationID for another
// stage, and invalid for an unknown stage.
func (s *Spec) CompleteGeneration(ctx context.Context, a ports.SpecArtifact, at time.Time) error {
	order, err := stageOrder(a.Stage)
	if err != nil {
		return err
	}
	checks, err := encodeList(a.Checks)
	if err != nil {
		return err
	}
	generation, err := encodeGeneration(a.Generation)
	if err != nil {
		return err
	}
	created := a.CreatedAt
	if created.IsZero() {
		created = at
	}
	what := "spec session " + a.SessionID
	return s.db.WithinTx(ctx, func(ctx context.Context) error {
		c := s.db.write(ctx)
		n, err := c.exec(ctx, `UPDATE spec_sessions
			SET status = 'ready', current_stage = ?, generating_stage = '', generation_id = '', error = NULL, updated_at = ?
			WHERE id = ? AND status = 'generating' AND generation_id = ? AND generating_stage = ?`,
			string(a.Stage), timestamp(at), a.SessionID, a.GenerationID, string(a.Stage))
		if err != nil {
			return storeErr(err, what, "")
		}
		if n == 0 {
			return notGenerating(ctx, c, a.SessionID, a.GenerationID)
		}
		var version int
		err = c.get(ctx, &version, "SELECT COALESCE(MAX(version), 0) + 1 FROM spec_artifacts WHERE session_id = ? AND stage = ?",
			a.SessionID, string(a.Stage))
		if err != nil {
			return storeErr(err, what, "")
		}
		_, err = c.exec(ctx, `INSERT INTO spec_artifacts
			(id, session_id, stage, stage_order, version, format, content, data, checks, model, generation_id, stale, created_at,
			 prompt_version, generation)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, FALSE, ?, ?, ?)`,
			a.ID, a.SessionID, string(a.Stage), order, version, a.Format, a.Content, jsonText(a.Data), checks,
			a.Model, a.GenerationID, timestamp(created), a.PromptVersion, generation)
		if err != nil {
			return storeErr(err, "spec artifact "+a.ID+" of generation "+a.GenerationID, what)
		}
		_, err = c.exec(ctx, "UPDATE spec_artifacts SET stale = TRUE WHERE session_id = ? AND stage_order > ? AND stale = FALSE",
			a.SessionID, order)
		return storeErr(err, what, "")
	})
}

// SaveEditedArtifact implements ports.SpecStore in one transaction: the
// session's row is updated first, so the edit waits for (and is checked
// against) a concurrent generation or edit of the same session.
func (s *Spec) SaveEditedArtifact(ctx context.Context, owner ports.Owner, a ports.SpecArtifact, base int, at time.Time) (ports.SpecArtifact, error) {
	order, err := stageOrder(a.Stage)
	if err != nil {
		return ports.SpecArtifact{}, err
	}
	checks, err := encodeList(a.Checks)
	if err != nil {
		return ports.SpecArtifact{}, err
	}
	generation, err := encodeGeneration(a.Generation)
	if err != nil {
		return ports.SpecArtifact{}, err
	}
	if a.CreatedAt.IsZero() {
		a.CreatedAt = at
	}
	what := "spec session " + a.SessionID
	err = s.db.WithinTx(ctx, func(ctx context.Context) error {
		c := s.db.write(ctx)
		n, err := c.exec(ctx, `UPDATE spec_sessions SET current_stage = ?, updated_at = ?
			WHERE id = ? AND org_id = ? AND user_id = ? AND status <> 'generating'`,
			string(a.Stage), timestamp(at), a.SessionID, owner.OrgID, owner.UserID)
		if err != nil {
			return storeErr(err, what, "")
		}
		if n == 0 {
			found, err := c.exists(ctx, "SELECT 1 FROM spec_sessions WHERE id = ? AND org_id = ? AND user_id = ?",
				a.SessionID, owner.OrgID, owner.UserID)
			switch {
			case err != nil:
				return storeErr(err, what, "")
			case !found:
				return ports.NotFound("spec session", a.SessionID)
			}
			return ports.Errorf(ports.KindConflict, "spec session %s is generating", a.SessionID)
		}
		var latest int
		err = c.get(ctx, &latest, "SELECT COALESCE(MAX(version), 0) FROM spec_artifacts WHERE session_id = ? AND stage = ?",
			a.SessionID, string(a.Stage))
		if err != nil {
			return storeErr(err, what, "")
		}
		if latest != base {
			return ports.Errorf(ports.KindPreconditionFailed, "the latest %s version of spec session %s is %d, not %d",
				a.Stage, a.SessionID, latest, base)
		}
		a.Version, a.Stale = base+1, false
		_, err = c.exec(ctx, `INSERT INTO spec_artifacts
			(id, session_id, stage, stage_order, version, format, content, data, checks, model, generation_id, stale, created_at,
			 prompt_version, generation, edited_by)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, FALSE, ?, ?, ?, ?)`,
			a.ID, a.SessionID, string(a.Stage), order, a.Version, a.Format, a.Content, jsonText(a.Data), checks,
			a.Model, a.GenerationID, timestamp(a.CreatedAt), a.PromptVersion, generation, a.EditedBy)
		if err != nil {
			return storeErr(err, "spec artifact "+a.ID, what)
		}
		_, err = c.exec(ctx, "UPDATE spec_artifacts SET stale = TRUE WHERE session_id = ? AND stage_order > ? AND stale = FALSE",
			a.SessionID, order)
		return storeErr(err, what, "")
	})
	if err != nil {
		return ports.SpecArtifact{}, err
	}
	return a, nil
}

// notGenerating is the error for a session that a conditional update found
// not generating generationID: not_found when the session is absent, else a
// conflict.
func notGenerating(ctx context.Context, c conn, sessionID, generationID string) error {
	found, err := c.exists(ctx, "SELECT 1 FROM spec_sessions WHERE id = ?", sessionID)
	switch {
	case err != nil:
		return storeErr(err, "spec session "+sessionID, "")
	case !found:
		return ports.NotFound("spec session", sessionID)
	}
	return ports.Errorf(ports.KindConflict, "spec session %s is not generating generation %s", sessionID, generationID)
}

// FailGeneration implements ports.SpecStore: the session keeps its
// CurrentStage, and its UpdatedAt is set to at. It is a conflict for an
// unknown session too.
func (s *Spec) FailGeneration(ctx context.Context, sessionID, generationID string, e ports.SpecError, at time.Time) error {
	specErr, err := encodeSpecError(&e)
	if err != nil {
		return err
	}
	n, err := s.db.write(ctx).exec(ctx, `UPDATE spec_sessions
		SET status = 'failed', generating_stage = '', generation_id = '', error = ?, updated_at = ?
		WHERE id = ? AND status = 'generating' AND generation_id = ?`,
		specErr, timestamp(at), sessionID, generationID)
	if err == nil && n == 0 {
		return ports.Errorf(ports.KindConflict, "spec session %s is not generating generation %s", sessionID, generationID)
	}
	return storeErr(err, "spec session "+sessionID, "")
}

// ListArtifacts implements ports.SpecStore; an empty Checks, and an empty
// Generation.FindingsByKind, read back as nil, and an unknown session has
// no artifacts.
func (s *Spec) ListArtifacts(ctx context.Context, sessionID string) ([]ports.SpecArtifact, error) {
	var rows []specArtifactRow
	err := s.db.read(ctx).list(ctx, &rows, `SELECT id, session_id, stage, version, format, content, data, checks, model,
		generation_id, stale, created_at, prompt_version, generation, edited_by
		FROM spec_artifacts WHERE session_id = ? ORDER BY stage_order, version`, sessionID)
	if err != nil {
		return nil, storeErr(err, "spec artifacts", "")
	}
	artifacts := make([]ports.SpecArtifact, len(rows))
	for i, r := range rows {
		checks, err := decodeList[string](r.Checks)
		if err != nil {
			return nil, err
		}
		generation, err := decodeGeneration(r.Generation)
		if err != nil {
			return nil, err
		}
		artifacts[i] = ports.SpecArtifact{
			ID: r.ID, SessionID: r.SessionID, Stage: ports.Stage(r.Stage), Version: r.Version, Format: r.Format,
			Content: r.Content, Data: json.RawMessage(r.Data), Checks: checks, Model: r.Model,
			GenerationID: r.GenerationID, Stale: r.Stale, CreatedAt: time.Time(r.CreatedAt),
			PromptVersion: r.PromptVersion, Generation: generation, EditedBy: r.EditedBy,
		}
	}
	return artifacts, nil
}

type standardRow struct {
	ID        string    `db:"id"`
	OrgID     string    `db:"org_id"`
	Title     string    `db:"title"`
	Body      string    `db:"body"`
	AppliesTo string    `db:"applies_to"`
	CreatedAt timestamp `db:"created_at"`
	UpdatedAt timestamp `db:"updated_at"`
}

func (r standardRow) standard() (ports.Standard, error) {
	stages, err := decodeList[ports.Stage](r.AppliesTo)
	if err != nil {
		return ports.Standard{}, err
	}
	return ports.Standard{
		ID: r.ID, OrgID: r.OrgID, Title: r.Title, Body: r.Body, AppliesTo: stages,
		CreatedAt: time.Time(r.CreatedAt), UpdatedAt: time.Time(r.UpdatedAt),
	}, nil
}

const standardColumns = "id, org_id, title, body, applies_to, created_at, updated_at"

// CreateStandard implements ports.StandardStore; a zero UpdatedAt is stored
// as CreatedAt, and an empty AppliesTo reads back as nil. It is a conflict
// when the id exists, and not_found when the org does not exist.
func (s *Spec) CreateStandard(ctx context.Context, st ports.Standard) error {
	stages, err := encodeList(st.AppliesTo)
	if err != nil {
		return err
	}
	updated := st.UpdatedAt
	if updated.IsZero() {
		updated = st.CreatedAt
	}
	_, err = s.db.write(ctx).exec(ctx, "INSERT INTO standards ("+standardColumns+") VALUES (?, ?, ?, ?, ?, ?, ?)",
		st.ID, st.OrgID, st.Title, st.Body, stages, timestamp(st.CreatedAt), timestamp(updated))
	return storeErr(err, "standard "+st.ID, "org "+st.OrgID)
}

// GetStandard implements ports.StandardStore.
func (s *Spec) GetStandard(ctx context.Context, orgID, id string) (ports.Standard, error) {
	var r standardRow
	err := s.db.read(ctx).get(ctx, &r, "SELECT "+standardColumns+" FROM standards WHERE id = ? AND org_id = ?", id, orgID)
	if err != nil {
		return ports.Standard{}, storeErr(err, "standard "+id, "")
	}
	return r.standard()
}

// ListStandards implements ports.StandardStore; ties in the creation time
// are ordered by id.
func (s *Spec) ListStandards(ctx context.Context, orgID string) ([]ports.Standard, error) {
	var rows []standardRow
	err := s.db.read(ctx).list(ctx, &rows,
		"SELECT "+standardColumns+" FROM standards WHERE org_id = ? ORDER BY created_at, id", orgID)
	if err != nil {
		return nil, storeErr(err, "standards", "")
	}
	standards := make([]ports.Standard, len(rows))
	for i, r := range rows {
		if standards[i], err = r.standard(); err != nil {
			return nil, err
		}
	}
	return standards, nil
}

// UpdateStandard implements ports.StandardStore: it sets s's title, body,
// stages and UpdatedAt, and keeps the creation time.
func (s *Spec) UpdateStandard(ctx context.Context, st ports.Standard) error {
	stages, err := encodeList(st.AppliesTo)
	if err != nil {
		return err
	}
	n, err := s.db.write(ctx).exec(ctx,
		"UPDATE standards SET title = ?, body = ?, applies_to = ?, updated_at = ? WHERE id = ? AND org_id = ?",
		st.Title, st.Body, stages, timestamp(st.UpdatedAt), st.ID, st.OrgID)
	if err == nil && n == 0 {
		return ports.NotFound("standard", st.ID)
	}
	return storeErr(err, "standard "+st.ID, "")
}

// DeleteStandard implements ports.StandardStore.
func (s *Spec) DeleteStandard(ctx context.Context, orgID, id string) error {
	n, err := s.db.write(ctx).exec(ctx, "DELETE FROM standards WHERE id = ? AND org_id = ?", id, orgID)
	if err == nil && n == 0 {
		return ports.NotFound("standard", id)
	}
	return storeErr(err, "standard "+id, "")
}
