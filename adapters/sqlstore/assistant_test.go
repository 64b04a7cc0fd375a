package sqlstore_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/ports"
)

// TestDeleteSessionWhileAStaleTurnEnds holds a stale turn the way EndTurn's
// statement does midway (the turn changed, its session not yet) while the
// session is deleted; the end then changes the session. Both must go
// through: a delete that locked the session before the turn would deadlock
// with the end, and PostgreSQL would abort one of them.
func TestDeleteSessionWhileAStaleTurnEnds(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		if db.Dialect != sqlstore.DialectPostgres {
			t.Skip("SQLite's one writer runs the delete and the end one after the other")
		}
		ctx := t.Context()
		f := newChatFixture(t, db, "org-")
		a, owner, cs, now := f.a, f.owner, f.cs, f.now
		turn := ports.Turn{ID: "turn-" + f.suffix, SessionID: cs.ID, StartedAt: now.Add(-time.Hour)}
		if err := a.StartTurn(ctx, turn, now.Add(-2*time.Hour), 0); err != nil {
			t.Fatal(err)
		}

		end, err := db.Writer.BeginTxx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer end.Rollback()
		if _, err := end.ExecContext(ctx, "UPDATE turns SET ended_at = $1 WHERE id = $2", now, turn.ID); err != nil {
			t.Fatal(err)
		}
		var pid int
		if err := end.GetContext(ctx, &pid, "SELECT pg_backend_pid()"); err != nil {
			t.Fatal(err)
		}
		deleted := make(chan error, 1)
		go func() { deleted <- a.DeleteSession(ctx, owner, cs.ID, now.Add(-15*time.Minute)) }()
		// The delete waits for a lock the end holds (on the turn, or on
		// the session's turns as it cascades).
		waiting := func() bool {
			var n int
			err := db.Reader.GetContext(ctx, &n, "SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))", pid)
			return err == nil && n > 0
		}
		for deadline := time.Now().Add(10 * time.Second); !waiting(); time.Sleep(5 * time.Millisecond) {
			select {
			case err := <-deleted:
				t.Fatalf("DeleteSession returned while the turn was held: %v", err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatal("DeleteSession did not wait for the turn")
			}
		}
		if _, err := end.ExecContext(ctx, "UPDATE chat_sessions SET version = version + 1 WHERE id = $1", cs.ID); err != nil {
			t.Fatalf("ending the turn while the session is deleted: %v", err)
		}
		if err := end.Commit(); err != nil {
			t.Fatalf("ending the turn while the session is deleted: commit: %v", err)
		}
		if err := <-deleted; err != nil {
			t.Fatalf("DeleteSession while a stale turn ends: %v", err)
		}
		if _, err := a.GetSession(ctx, owner, cs.ID); !errors.Is(err, ports.ErrNotFound) {
			t.Fatalf("GetSession after the delete: %v, want not_found", err)
		}
	})
}

// chatFixture is an org named orgPrefix+suffix, a member of it and a chat
// session of theirs, stored.
type chatFixture struct {
	a      *sqlstore.Assistant
	owner  ports.Owner
	cs     ports.ChatSession
	now    time.Time
	suffix string
}

func newChatFixture(t *testing.T, db *sqlstore.DB, orgPrefix string) chatFixture {
	t.Helper()
	ctx := t.Context()
	a, ids := sqlstore.NewAssistant(db), sqlstore.NewIdentity(db)
	now := time.Now().UTC().Truncate(time.Millisecond)
	suffix := fmt.Sprint(now.UnixNano())
	org := ports.Org{ID: "org-" + suffix, Name: orgPrefix + suffix, CreatedAt: now}
	user := ports.User{ID: "user-" + suffix, OrgID: org.ID, Email: suffix + "@example.com", Role: ports.RoleMember, CreatedAt: now}
	cs := ports.ChatSession{ID: "session-" + suffix, OrgID: org.ID, UserID: user.ID, CreatedAt: now, UpdatedAt: now}
	for _, err := range []error{ids.CreateOrg(ctx, org), ids.CreateUser(ctx, user), a.CreateSession(ctx, cs)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return chatFixture{a: a, owner: ports.Owner{OrgID: org.ID, UserID: user.ID}, cs: cs, now: now, suffix: suffix}
}
