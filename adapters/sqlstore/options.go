package sqlstore

import "go.opentelemetry.io/otel/trace"

// Option tunes Open.
type Option func(*openOptions)

type openOptions struct {
	tracer   trace.TracerProvider
	maxConns int
}

// WithMaxConns bounds the connections of the main PostgreSQL pool (at
// least 2; DefaultMaxConns when not given). DB.Relaxed holds at most a
// quarter as many more, at most 4, and a token-revocation watch one more.
// SQLite ignores it.
func WithMaxConns(n int) Option {
	return func(o *openOptions) { o.maxConns = max(n, 2) }
}

// WithTracer has every statement and transaction that runs under a span
// (a request's, a job's) traced as a child span of it, with the statement's
// text (never its arguments); statements outside any trace, such as the job
// queue's polling, make no spans. A nil tp traces nothing, and costs
// nothing: the pools then use the driver directly.
func WithTracer(tp trace.TracerProvider) Option {
	return func(o *openOptions) { o.tracer = tp }
}
