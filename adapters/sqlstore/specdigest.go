package sqlstore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/devpilot/devpilot/ports"
)

var _ ports.SpecDigestStore = (*Spec)(nil)

type specDigestRow struct {
	SessionID string    `db:"session_id"`
	InputIDs  string    `db:"input_ids"`
	Data      jsonText  `db:"data"`
	Content   string    `db:"content"`
	Model     string    `db:"model"`
	CreatedAt timestamp `db:"created_at"`
}

// PutSpecDigest implements ports.SpecDigestStore with one upsert: d
// replaces the session's digest, whatever it was. An empty Data is stored
// as {}.
func (s *Spec) PutSpecDigest(ctx context.Context, d ports.SpecDigest) error {
	ids, err := encodeList(d.InputIDs)
	if err != nil {
		return err
	}
	data := jsonText(d.Data)
	if len(data) == 0 {
		data = jsonText("{}")
	}
	_, err = s.db.write(ctx).exec(ctx, `INSERT INTO spec_digests (session_id, input_ids, data, content, model, created_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (session_id) DO UPDATE SET input_ids = excluded.input_ids, data = excluded.data,
			content = excluded.content, model = excluded.model, created_at = excluded.created_at`,
		d.SessionID, ids, data, d.Content, d.Model, timestamp(d.CreatedAt))
	return storeErr(err, "spec digest of session "+d.SessionID, "spec session "+d.SessionID)
}

// GetSpecDigest implements ports.SpecDigestStore; an empty InputIDs reads
// back as nil.
func (s *Spec) GetSpecDigest(ctx context.Context, sessionID string) (ports.SpecDigest, error) {
	var r specDigestRow
	err := s.db.read(ctx).get(ctx, &r, `SELECT session_id, input_ids, data, content, model, created_at
		FROM spec_digests WHERE session_id = ?`, sessionID)
	if err != nil {
		return ports.SpecDigest{}, storeErr(err, "spec digest of session "+sessionID, "")
	}
	ids, err := decodeList[string](r.InputIDs)
	if err != nil {
		return ports.SpecDigest{}, err
	}
	return ports.SpecDigest{SessionID: r.SessionID, InputIDs: ids, Data: json.RawMessage(r.Data), Content: r.Content,
		Model: r.Model, CreatedAt: time.Time(r.CreatedAt)}, nil
}
