package sqlstore

import (
	"context"
	"database/sql/driver"
	"reflect"

	"github.com/devpilot/devpilot/ports"
)

// database/sql hands the driver each statement's text on every ExecContext
// and QueryContext, and both databases then parse (and PostgreSQL plans) it
// anew: under load that is a good share of the CPU spent in the database.
// The connector below keeps each connection's prepared statements, by query
// text (on PostgreSQL, named server-side statements), and runs a query that
// has been seen on that connection from its prepared form. database/sql
// uses a driver connection from one goroutine at a time, so the cache needs
// no lock.

// Bounds of a connection's statement cache: statements with longer texts
// (the multi-row inserts, whose text varies with their row count) are not
// kept, and past maxCachedStmts the cache stops growing.
const (
	maxCachedStmts   = 256
	maxCachedStmtLen = 4096
)

// cachingConnector opens connections through inner and gives each a
// statement cache.
type cachingConnector struct{ inner driver.Connector }

func (c cachingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return newCachingConn(conn), nil
}

func (c cachingConnector) Driver() driver.Driver { return c.inner.Driver() }

// The interfaces of modernc's and lib/pq's connections that database/sql
// uses; a connection without them is not wrapped.
type cacheableConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// cachingConn is a connection with its compiled statements.
type cachingConn struct {
	cacheableConn
	stmts map[string]*cachedStmt
}

// cachedStmt is a compiled statement; busy while rows read from it are open,
// when the same text runs uncached.
type cachedStmt struct {
	stmt interface {
		driver.Stmt
		driver.StmtExecContext
		driver.StmtQueryContext
	}
	busy bool
}

// newCachingConn wraps conn when it has what the cache needs; any other
// connection is returned as it is.
func newCachingConn(conn driver.Conn) driver.Conn {
	c, ok := conn.(cacheableConn)
	if !ok {
		return conn
	}
	return &cachingConn{cacheableConn: c, stmts: make(map[string]*cachedStmt)}
}

// CheckNamedValue implements driver.NamedValueChecker as the connection
// does (lib/pq's converts arrays, for one), or converts as database/sql
// would; then it cleans a text argument (ports.CleanText). Text is stored
// alike on both databases, and never fails a statement for its characters:
// PostgreSQL refuses NUL and invalid UTF-8 in text, which SQLite keeps.
// Callers' text was refused before it got here; what is left is model
// output and provider and webhook data, whose control characters are
// dropped.
func (c *cachingConn) CheckNamedValue(nv *driver.NamedValue) error {
	err := driver.ErrSkip
	if nvc, ok := c.cacheableConn.(driver.NamedValueChecker); ok {
		err = nvc.CheckNamedValue(nv)
	}
	if err == driver.ErrSkip {
		nv.Value, err = driver.DefaultParameterConverter.ConvertValue(nv.Value)
	}
	if s, ok := nv.Value.(string); ok && err == nil {
		nv.Value = ports.CleanText(s)
	}
	return err
}

// cached returns query's prepared statement, preparing it on first use;
// nil when query is not to be cached (it has no arguments: scripts of
// several statements, which only run unprepared, are among those; its text
// is too long; the cache is full) or its statement is in use. A failed
// prepare is the query's error: on PostgreSQL it has aborted the
// transaction, so the query cannot be run again unprepared.
func (c *cachingConn) cached(ctx context.Context, query string, args []driver.NamedValue) (*cachedStmt, error) {
	if len(args) == 0 || len(query) > maxCachedStmtLen {
		return nil, nil
	}
	if st, ok := c.stmts[query]; ok {
		if st.busy {
			return nil, nil
		}
		return st, nil
	}
	if len(c.stmts) >= maxCachedStmts {
		return nil, nil
	}
	s, err := c.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	stmt, ok := s.(interface {
		driver.Stmt
		driver.StmtExecContext
		driver.StmtQueryContext
	})
	if !ok {
		_ = s.Close()
		return nil, nil
	}
	st := &cachedStmt{stmt: stmt}
	c.stmts[query] = st
	return st, nil
}

// ExecContext implements driver.ExecerContext.
func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	st, err := c.cached(ctx, query, args)
	switch {
	case err != nil:
		return nil, err
	case st == nil:
		return c.cacheableConn.ExecContext(ctx, query, args)
	}
	return st.stmt.ExecContext(ctx, args)
}

// QueryContext implements driver.QueryerContext.
func (c *cachingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	st, err := c.cached(ctx, query, args)
	switch {
	case err != nil:
		return nil, err
	case st == nil:
		return c.cacheableConn.QueryContext(ctx, query, args)
	}
	rows, err := st.stmt.QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	st.busy = true
	return &cachedRows{Rows: rows, st: st}, nil
}

// Close implements driver.Conn: the compiled statements, then the
// connection.
func (c *cachingConn) Close() error {
	for q, st := range c.stmts {
		_ = st.stmt.Close()
		delete(c.stmts, q)
	}
	return c.cacheableConn.Close()
}

// cachedRows are rows read from a cached statement, which is free again
// once they are closed. They answer the column-type questions as the
// driver's rows do, or with "unknown".
type cachedRows struct {
	driver.Rows
	st *cachedStmt
}

func (r *cachedRows) Close() error {
	err := r.Rows.Close()
	r.st.busy = false
	return err
}

func (r *cachedRows) ColumnTypeScanType(i int) reflect.Type {
	if t, ok := r.Rows.(driver.RowsColumnTypeScanType); ok {
		return t.ColumnTypeScanType(i)
	}
	return reflect.TypeFor[any]()
}

func (r *cachedRows) ColumnTypeDatabaseTypeName(i int) string {
	if t, ok := r.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return t.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

func (r *cachedRows) ColumnTypeLength(i int) (int64, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeLength); ok {
		return t.ColumnTypeLength(i)
	}
	return 0, false
}

func (r *cachedRows) ColumnTypeNullable(i int) (bool, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeNullable); ok {
		return t.ColumnTypeNullable(i)
	}
	return false, false
}

func (r *cachedRows) ColumnTypePrecisionScale(i int) (int64, int64, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypePrecisionScale); ok {
		return t.ColumnTypePrecisionScale(i)
	}
	return 0, 0, false
}
