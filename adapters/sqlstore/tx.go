package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/devpilot/devpilot/ports"
)

var _ ports.Transactor = (*DB)(nil)

type txKey struct{}

// TxFromContext returns the transaction WithinTx stored in ctx, so other
// adapters (the job queue) can write in it.
func TxFromContext(ctx context.Context) (*sqlx.Tx, bool) {
	tx, ok := ctx.Value(txKey{}).(*sqlx.Tx)
	return tx, ok
}

// WithinTx runs fn in a transaction on the writer pool, carried by the
// context fn receives. It commits when fn returns nil and rolls back when fn
// returns an error (which it returns unchanged) or panics (which it re-panics).
// When ctx carries a transaction already, fn joins it. Failing to begin or
// commit is an internal error.
//
// On SQLite the writer is one connection: inside fn, write only with the
// context fn receives, or the write waits for the transaction to end.
func (db *DB) WithinTx(ctx context.Context, fn func(ctx context.Context) error) error {
	return withinTx(ctx, db.Writer, fn)
}

// withinTx is WithinTx on the given pool.
func withinTx(ctx context.Context, pool *sqlx.DB, fn func(ctx context.Context) error) (err error) {
	if _, ok := TxFromContext(ctx); ok {
		return fn(ctx)
	}
	tx, err := pool.BeginTxx(ctx, nil)
	if err != nil {
		return ports.Wrap(ports.KindInternal, err, "begin transaction")
	}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback()
			panic(p)
		}
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if err := fn(context.WithValue(ctx, txKey{}, tx)); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return ports.Wrap(ports.KindInternal, err, "commit transaction")
	}
	return nil
}

// conn is the connection a store method runs on: the transaction in ctx, or a pool.
type conn struct {
	q sqlx.ExtContext
}

// read returns the transaction in ctx, or else the reader pool.
func (db *DB) read(ctx context.Context) conn { return on(ctx, db.Reader) }

// write returns the transaction in ctx, or else the writer pool.
func (db *DB) write(ctx context.Context) conn { return on(ctx, db.Writer) }

// on returns the transaction in ctx, or else pool.
func on(ctx context.Context, pool *sqlx.DB) conn {
	if tx, ok := TxFromContext(ctx); ok {
		return conn{tx}
	}
	return conn{pool}
}

// relaxed returns the pool for writes that may be lost in a crash of the
// database (DB.Relaxed), or the writer when there is none.
func (db *DB) relaxed() *sqlx.DB {
	if db.Relaxed != nil {
		return db.Relaxed
	}
	return db.Writer
}

// writeRelaxed returns the transaction in ctx, or else the relaxed pool.
func (db *DB) writeRelaxed(ctx context.Context) conn { return on(ctx, db.relaxed()) }

func (c conn) get(ctx context.Context, dest any, query string, args ...any) error {
	return sqlx.GetContext(ctx, c.q, dest, c.q.Rebind(query), args...)
}

func (c conn) list(ctx context.Context, dest any, query string, args ...any) error {
	return sqlx.SelectContext(ctx, c.q, dest, c.q.Rebind(query), args...)
}

// exec runs a statement and returns the number of rows it affected.
func (c conn) exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := c.q.ExecContext(ctx, c.q.Rebind(query), args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// exists reports whether query returns a row.
func (c conn) exists(ctx context.Context, query string, args ...any) (bool, error) {
	var one int
	err := c.get(ctx, &one, query, args...)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// maxInsertArgs bounds the arguments of one multi-row INSERT, below the
// limits of both databases (65535 on PostgreSQL, 32766 on SQLite).
const maxInsertArgs = 30000

// insertRows inserts rows, each one argument per column, with multi-row
// "INSERT INTO table (columns) VALUES (…), (…)" statements of at most
// maxInsertArgs arguments. Run it in a transaction when rows may need more
// than one statement.
func (c conn) insertRows(ctx context.Context, table, columns string, rows [][]any) error {
	return c.insertRowsWith(ctx, table, columns, "", rows)
}

// insertAtomicallyWith inserts rows all or none, as insertRows does: in the
// transaction ctx carries; else, when they fit in one statement, with that
// statement alone (one round trip instead of three: a single statement is
// atomic); else in a transaction of its own. clause ends each statement, as
// in insertRowsWith.
func (db *DB) insertAtomicallyWith(ctx context.Context, table, columns, clause string, rows [][]any) error {
	return insertAtomicallyOn(ctx, db.Writer, table, columns, clause, rows)
}

// insertAtomicallyOn is insertAtomicallyWith on the given pool when ctx
// carries no transaction.
func insertAtomicallyOn(ctx context.Context, pool *sqlx.DB, table, columns, clause string, rows [][]any) error {
	if _, inTx := TxFromContext(ctx); inTx || len(rows) == 0 || len(rows)*len(rows[0]) <= maxInsertArgs {
		return on(ctx, pool).insertRowsWith(ctx, table, columns, clause, rows)
	}
	return withinTx(ctx, pool, func(ctx context.Context) error {
		return on(ctx, pool).insertRowsWith(ctx, table, columns, clause, rows)
	})
}

// insertRowsWith is insertRows with clause, such as "ON CONFLICT (id) DO
// NOTHING", ending each statement.
func (c conn) insertRowsWith(ctx context.Context, table, columns, clause string, rows [][]any) error {
	if len(rows) == 0 {
		return nil
	}
	width := len(rows[0])
	tuple := "(?" + strings.Repeat(", ?", width-1) + ")"
	for chunk := range slices.Chunk(rows, max(1, maxInsertArgs/width)) {
		var query strings.Builder
		query.WriteString("INSERT INTO " + table + " (" + columns + ") VALUES ")
		args := make([]any, 0, len(chunk)*width)
		for i, row := range chunk {
			if i > 0 {
				query.WriteString(", ")
			}
			query.WriteString(tuple)
			args = append(args, row...)
		}
		if clause != "" {
			query.WriteString(" " + clause)
		}
		if _, err := c.exec(ctx, query.String(), args...); err != nil {
			return err
		}
	}
	return nil
}
