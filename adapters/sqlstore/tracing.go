package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"

	"github.com/XSAM/otelsql"
	"go.opentelemetry.io/otel/attribute"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
)

// openDB opens a pool on c, traced when o says so.
func (o openOptions) openDB(c driver.Connector, d Dialect) *sql.DB {
	if o.tracer == nil {
		return sql.OpenDB(c)
	}
	system := "postgresql"
	if d == DialectSQLite {
		system = "sqlite"
	}
	return otelsql.OpenDB(c,
		otelsql.WithTracerProvider(o.tracer),
		otelsql.WithMeterProvider(metricnoop.NewMeterProvider()),
		otelsql.WithAttributes(attribute.String("db.system.name", system)),
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
