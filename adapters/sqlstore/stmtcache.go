package sqlstore

import (
	"context"
	"database/sql/driver"
)

// SQLite compiles every statement it runs from its text, which database/sql
// asks of the driver anew for each ExecContext and QueryContext: under load
// that parsing is a good share of the CPU devpilot spends in SQLite. The
// connector below keeps each connection's compiled statements, by query
// text, and runs a query that has been seen on that connection from its
// compiled form. database/sql uses a driver connection from one goroutine at
// a time, so the cache needs no lock.

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

// The interfaces modernc's connection implements that database/sql uses.
type sqliteConn interface {
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
	sqliteConn
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
	c, ok := conn.(sqliteConn)
	if !ok {
		return conn
	}
	return &cachingConn{sqliteConn: c, stmts: make(map[string]*cachedStmt)}
}

// cached returns query's compiled statement, compiling it on first use; nil
// when query is not to be cached or its statement is in use.
func (c *cachingConn) cached(ctx context.Context, query string) *cachedStmt {
	if len(query) > maxCachedStmtLen {
		return nil
	}
	if st, ok := c.stmts[query]; ok {
		if st.busy {
			return nil
		}
		return st
	}
	if len(c.stmts) >= maxCachedStmts {
		return nil
	}
	s, err := c.PrepareContext(ctx, query)
	if err != nil {
		return nil // run uncached, which reports the error
	}
	stmt, ok := s.(interface {
		driver.Stmt
		driver.StmtExecContext
		driver.StmtQueryContext
	})
	if !ok {
		_ = s.Close()
		return nil
	}
	st := &cachedStmt{stmt: stmt}
	c.stmts[query] = st
	return st
}

// ExecContext implements driver.ExecerContext.
func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	st := c.cached(ctx, query)
	if st == nil {
		return c.sqliteConn.ExecContext(ctx, query, args)
	}
	return st.stmt.ExecContext(ctx, args)
}

// QueryContext implements driver.QueryerContext.
func (c *cachingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	st := c.cached(ctx, query)
	if st == nil {
		return c.sqliteConn.QueryContext(ctx, query, args)
	}
	rows, err := st.stmt.QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	r, ok := rows.(sqliteRows)
	if !ok { // never modernc's: run it uncached rather than reuse a statement rows may read
		_ = rows.Close()
		return c.sqliteConn.QueryContext(ctx, query, args)
	}
	st.busy = true
	return &cachedRows{sqliteRows: r, st: st}, nil
}

// Close implements driver.Conn: the compiled statements, then the
// connection.
func (c *cachingConn) Close() error {
	for q, st := range c.stmts {
		_ = st.stmt.Close()
		delete(c.stmts, q)
	}
	return c.sqliteConn.Close()
}

// The interfaces modernc's rows implement.
type sqliteRows interface {
	driver.Rows
	driver.RowsColumnTypeDatabaseTypeName
	driver.RowsColumnTypeLength
	driver.RowsColumnTypeNullable
	driver.RowsColumnTypePrecisionScale
	driver.RowsColumnTypeScanType
}

// cachedRows are rows read from a cached statement, which is free again
// once they are closed.
type cachedRows struct {
	sqliteRows
	st *cachedStmt
}

func (r *cachedRows) Close() error {
	err := r.sqliteRows.Close()
	r.st.busy = false
	return err
}
