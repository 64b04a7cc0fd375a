package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"net/url"
	"strings"

	"github.com/XSAM/otelsql"
	"github.com/lib/pq"
	"go.opentelemetry.io/otel/attribute"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// openDB opens a pool on c, traced when o says so. dsn is the PostgreSQL
// URL ("" for SQLite), read for the server's address and the database's
// name.
//
// Statement spans follow the database client span convention
// (semantic-conventions docs/db/database-spans.md, semconv v1.41.0): named
// by db.query.summary ("SELECT chat_messages"), else db.operation.name,
// with db.system.name (postgresql or sqlite), db.operation.name,
// db.collection.name (a query of one table), db.query.summary,
// db.query.text (the parameterized SQL, never its arguments), and for
// PostgreSQL db.namespace, server.address and server.port; a failed
// statement has error.type and, for PostgreSQL, db.response.status_code
// (the SQLSTATE).
func (o openOptions) openDB(c driver.Connector, d Dialect, dsn string) *sql.DB {
	if o.tracer == nil {
		return sql.OpenDB(c)
	}
	attrs := []attribute.KeyValue{semconv.DBSystemNameSQLite}
	if d == DialectPostgres {
		attrs = []attribute.KeyValue{semconv.DBSystemNamePostgreSQL}
		if u, err := url.Parse(dsn); err == nil {
			if name := strings.TrimPrefix(u.Path, "/"); name != "" {
				attrs = append(attrs, semconv.DBNamespace(name))
			}
			if u.Host != "" {
				attrs = append(attrs, otelsql.AttributesFromDSN(dsn)...)
			}
		}
	}
	return otelsql.OpenDB(c,
		otelsql.WithTracerProvider(o.tracer),
		otelsql.WithMeterProvider(metricnoop.NewMeterProvider()),
		otelsql.WithAttributes(attrs...),
		otelsql.WithSpanNameFormatter(spanName),
		otelsql.WithAttributesGetter(queryAttributes),
		otelsql.WithSpanErrorAttributesGetter(errorAttributes),
		otelsql.WithSpanOptions(otelsql.SpanOptions{
			DisableErrSkip:       true,
			OmitConnResetSession: true,
			OmitConnPrepare:      true,
			OmitRows:             true,
			OmitConnectorConnect: true,
			SpanFilter:           underSpan,
		}),
	)
}

// underSpan creates a statement's span only within a trace.
func underSpan(ctx context.Context, _ otelsql.Method, _ string, _ []driver.NamedValue) bool {
	return trace.SpanContextFromContext(ctx).IsValid()
}

// txOperations are the operation names of the transaction methods, which
// have no query text.
var txOperations = map[otelsql.Method]string{
	otelsql.MethodConnBeginTx: "BEGIN",
	otelsql.MethodTxCommit:    "COMMIT",
	otelsql.MethodTxRollback:  "ROLLBACK",
}

// spanName is a statement span's name: its query summary, else its
// operation, else the method otelsql names it by.
func spanName(_ context.Context, method otelsql.Method, query string) string {
	if op, ok := txOperations[method]; ok {
		return op
	}
	if s := summarize(query); s.summary != "" {
		return s.summary
	}
	return string(method)
}

// queryAttributes are a statement's db.operation.name, db.collection.name
// and db.query.summary, as far as summarize reads them.
func queryAttributes(_ context.Context, method otelsql.Method, query string, _ []driver.NamedValue) []attribute.KeyValue {
	if op, ok := txOperations[method]; ok {
		return []attribute.KeyValue{semconv.DBOperationName(op)}
	}
	s := summarize(query)
	var attrs []attribute.KeyValue
	if s.operation != "" {
		attrs = append(attrs, semconv.DBOperationName(s.operation))
	}
	if s.collection != "" {
		attrs = append(attrs, semconv.DBCollectionName(s.collection))
	}
	if s.summary != "" {
		attrs = append(attrs, semconv.DBQuerySummary(s.summary))
	}
	return attrs
}

// errorAttributes are a failed statement's error.type and, for a
// PostgreSQL error, db.response.status_code (its SQLSTATE).
func errorAttributes(err error) []attribute.KeyValue {
	var pe *pq.Error
	switch {
	case errors.As(err, &pe):
		return []attribute.KeyValue{semconv.ErrorTypeKey.String(string(pe.Code)), semconv.DBResponseStatusCode(string(pe.Code))}
	case errors.Is(err, context.Canceled):
		return []attribute.KeyValue{semconv.ErrorTypeKey.String("canceled")}
	case errors.Is(err, context.DeadlineExceeded):
		return []attribute.KeyValue{semconv.ErrorTypeKey.String("timeout")}
	case errors.Is(err, sql.ErrTxDone):
		return []attribute.KeyValue{semconv.ErrorTypeKey.String("tx_done")}
	}
	return []attribute.KeyValue{semconv.ErrorTypeOther}
}

// querySummary is what summarize reads of a query.
type querySummary struct {
	operation  string // the first operation: SELECT, INSERT, ...
	collection string // the one table the query names, "" for none or several
	summary    string // the operations and their tables in order: "INSERT jobs SELECT queue"
}

// maxSummary bounds db.query.summary, as the convention suggests (255).
const maxSummary = 255

// summarize reads a query's operations and the tables they name, as the
// convention's db.query.summary describes it: the operation keywords
// (SELECT, INSERT, UPDATE, DELETE, ...) and, after FROM, JOIN, INTO,
// UPDATE and TABLE, the table named, in the order they appear; a query it
// cannot read gives an empty summary. Literals and comments are skipped.
func summarize(query string) querySummary {
	var (
		s       querySummary
		parts   []string
		tables  = map[string]bool{}
		expect  bool // the next word names a table
		lastOp  string
		keyword = func(w string) string { return strings.ToUpper(w) }
	)
	for _, tok := range sqlWords(query) {
		w := keyword(tok)
		switch w {
		case "SELECT", "INSERT", "DELETE", "MERGE", "CREATE", "DROP", "ALTER", "TRUNCATE", "PRAGMA", "VACUUM", "ANALYZE":
			if w != lastOp || w != "SELECT" {
				parts = append(parts, w)
			}
			if s.operation == "" {
				s.operation = w
			}
			lastOp = w
			expect = w == "TRUNCATE"
			continue
		case "UPDATE":
			if lastOp == "ON CONFLICT" { // ON CONFLICT DO UPDATE: no table follows
				continue
			}
			parts = append(parts, w)
			if s.operation == "" {
				s.operation = w
			}
			lastOp, expect = w, true
			continue
		case "CONFLICT":
			lastOp = "ON CONFLICT"
			continue
		case "FROM", "JOIN", "INTO", "TABLE":
			expect = true
			continue
		case "ONLY", "IF", "NOT", "EXISTS":
			continue
		}
		if expect {
			expect = false
			if isIdentifier(tok) {
				name := strings.Trim(tok, `"`)
				parts = append(parts, name)
				tables[name] = true
			}
		}
	}
	if s.operation == "" {
		return querySummary{}
	}
	if len(tables) == 1 {
		for t := range tables {
			s.collection = t
		}
	}
	s.summary = strings.Join(parts, " ")
	if len(s.summary) > maxSummary {
		s.summary = s.summary[:maxSummary]
	}
	return s
}

// isIdentifier reports whether tok names a table: letters, digits, _, $
// and dots (a schema), or a quoted name.
func isIdentifier(tok string) bool {
	if tok == "" || tok == "(" {
		return false
	}
	if strings.HasPrefix(tok, `"`) {
		return len(tok) > 1
	}
	for _, c := range tok {
		if !(c == '_' || c == '.' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// sqlWords splits a query into words (identifiers, keywords, quoted
// names) and single punctuation characters, skipping string literals and
// comments.
func sqlWords(q string) []string {
	var out []string
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			for i < len(q) && q[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				return out
			}
			i += end + 4
		case c == '\'':
			i++
			for i < len(q) {
				if q[i] == '\'' {
					if i+1 < len(q) && q[i+1] == '\'' {
						i += 2
						continue
					}
					break
				}
				i++
			}
			i++
		case c == '"':
			end := strings.IndexByte(q[i+1:], '"')
			if end < 0 {
				return out
			}
			out = append(out, q[i:i+end+2])
			i += end + 2
		case c == '_' || c == '$' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9':
			j := i
			for j < len(q) && (q[j] == '_' || q[j] == '$' || q[j] == '.' || q[j] >= 'a' && q[j] <= 'z' || q[j] >= 'A' && q[j] <= 'Z' || q[j] >= '0' && q[j] <= '9') {
				j++
			}
			out = append(out, q[i:j])
			i = j
		default:
			out = append(out, q[i:i+1])
			i++
		}
	}
	return out
}
