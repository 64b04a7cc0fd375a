package sqlstore_test

import (
	"context"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
)

// With a tracer, a statement run under a span is a child span of it with
// its SQL and never its arguments; a statement outside any trace (the job
// queue's polling) makes no span. On both databases.
func TestWithTracer(t *testing.T) {
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			db, err := sqlstore.Open(t.Context(), sqlstoretest.URL(t, d), sqlstore.WithTracer(tp))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Writer.ExecContext(context.Background(), "CREATE TABLE traced (v TEXT)"); err != nil {
				t.Fatal(err)
			}
			if n := len(rec.Ended()); n != 0 {
				t.Fatalf("%d spans for a statement outside any trace", n)
			}
			ctx, parent := tp.Tracer("test").Start(context.Background(), "request")
			const secret = "s3cret-value"
			if _, err := db.Writer.ExecContext(ctx, db.Writer.Rebind("INSERT INTO traced (v) VALUES (?)"), secret); err != nil {
				t.Fatal(err)
			}
			parent.End()
			var insert bool
			for _, sp := range rec.Ended() {
				attrs := map[string]string{}
				for _, kv := range sp.Attributes() {
					attrs[string(kv.Key)] = kv.Value.String()
				}
				// The database client span convention.
				system := map[sqlstore.Dialect]string{sqlstore.DialectPostgres: "postgresql", sqlstore.DialectSQLite: "sqlite"}[d]
				if sp.Name() != "request" && (attrs["db.system.name"] != system || sp.SpanKind().String() != "client") {
					t.Errorf("span %q: kind %s, attributes %v", sp.Name(), sp.SpanKind(), attrs)
				}
				if strings.HasPrefix(attrs["db.query.text"], "INSERT INTO traced") {
					if sp.Name() != "INSERT traced" || attrs["db.operation.name"] != "INSERT" || attrs["db.collection.name"] != "traced" || attrs["db.query.summary"] != "INSERT traced" {
						t.Errorf("INSERT span %q: %v", sp.Name(), attrs)
					}
					if d == sqlstore.DialectPostgres && (attrs["server.address"] == "" || attrs["server.port"] == "" || attrs["db.namespace"] == "") {
						t.Errorf("PostgreSQL span without server.address, server.port or db.namespace: %v", attrs)
					}
				}
				for _, kv := range sp.Attributes() {
					if strings.Contains(kv.Value.String(), secret) {
						t.Errorf("span %q carries an argument in %s", sp.Name(), kv.Key)
					}
					if kv.Key == "db.query.text" && strings.HasPrefix(kv.Value.AsString(), "INSERT INTO traced") &&
						sp.Parent().SpanID() == parent.SpanContext().SpanID() {
						insert = true
					}
				}
			}
			if !insert {
				t.Fatalf("no span of the INSERT under the caller's; spans: %d", len(rec.Ended()))
			}
		})
	}
}

// WithMaxConns bounds the main PostgreSQL pool, and the relaxed one to a
// quarter of it.
func TestWithMaxConns(t *testing.T) {
	for _, d := range sqlstoretest.Dialects() {
		if d != sqlstore.DialectPostgres {
			continue
		}
		db, err := sqlstore.Open(t.Context(), sqlstoretest.URL(t, d), sqlstore.WithMaxConns(6))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if n := db.Writer.Stats().MaxOpenConnections; n != 6 {
			t.Errorf("main pool of %d, want 6", n)
		}
		if n := db.Relaxed.Stats().MaxOpenConnections; n != 1 {
			t.Errorf("relaxed pool of %d, want 1", n)
		}
		def, err := sqlstore.Open(t.Context(), sqlstoretest.URL(t, d))
		if err != nil {
			t.Fatal(err)
		}
		defer def.Close()
		if n := def.Writer.Stats().MaxOpenConnections; n != sqlstore.DefaultMaxConns {
			t.Errorf("default main pool of %d, want %d", n, sqlstore.DefaultMaxConns)
		}
	}
}
