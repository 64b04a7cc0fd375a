package sqlstore

import (
	"database/sql"
	"errors"
	"time"

	"github.com/lib/pq"
	"github.com/lib/pq/pqerror"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/devpilot/devpilot/ports"
)

// storeErr maps a database error to a ports.Error whose message names what
// the statement was about (such as "org acme"): no rows → not_found, a
// unique or primary key violation → conflict, a foreign key violation →
// not_found naming ref (what the row refers to), a failure that running the
// statement again may not meet (a serialization failure or deadlock, a lost
// or refused connection, a busy database) → unavailable, with RetryAfter.
// Anything else is internal. The database error is kept as the cause. nil
// stays nil.
func storeErr(err error, what, ref string) error {
	if err == nil {
		return nil
	}
	if _, ok := ports.AsError(err); ok {
		return err
	}
	kind := constraintKind(err)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return ports.Wrap(ports.KindNotFound, err, what+" not found")
	case kind == ports.KindConflict:
		return ports.Wrap(ports.KindConflict, err, what+" already exists")
	case kind == ports.KindNotFound && ref != "":
		return ports.Wrap(ports.KindNotFound, err, ref+" not found")
	case kind == ports.KindUnavailable:
		return &ports.Error{Kind: ports.KindUnavailable, Message: "the database is busy; try again", RetryAfter: time.Second, Err: err}
	}
	return ports.Wrap(ports.KindInternal, err, "database error")
}

// constraintKind classifies constraint violations of either driver:
// conflict for unique and primary keys, not_found for foreign keys.
func constraintKind(err error) ports.Kind {
	if pqErr, ok := errors.AsType[*pq.Error](err); ok {
		switch pqErr.Code {
		case pqerror.UniqueViolation:
			return ports.KindConflict
		case pqerror.ForeignKeyViolation:
			return ports.KindNotFound
		}
		switch pqErr.Code.Class() {
		case pqerror.ClassTransactionRollback, pqerror.ClassConnectionException, pqerror.ClassInsufficientResources, pqerror.ClassOperatorIntervention:
			return ports.KindUnavailable
		}
	}
	if liteErr, ok := errors.AsType[*sqlite.Error](err); ok {
		switch liteErr.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return ports.KindConflict
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return ports.KindNotFound
		}
		if code := liteErr.Code() & 0xff; code == sqlite3.SQLITE_BUSY || code == sqlite3.SQLITE_LOCKED {
			return ports.KindUnavailable
		}
	}
	return ""
}
