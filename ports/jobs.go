package ports

import (
	"context"
	"time"
)

//go:generate go tool mockgen -typed -destination ../testkit/mocks/jobs.go -package mocks . JobQueue

// JobArgs is the payload of a background job. It is encoded as JSON; Kind
// names the worker that handles it and must be stable across releases.
type JobArgs interface {
	Kind() string
}

// EnqueueOptions tune one enqueued job. The zero value is the queue's default.
type EnqueueOptions struct {
	// MaxAttempts bounds retries; 0 is the queue's default.
	MaxAttempts int
	// RunAt schedules the job for later; zero runs it as soon as possible.
	RunAt time.Time
	// UniqueByArgs skips the insert while an unfinished job with the same
	// kind and arguments exists.
	UniqueByArgs bool
}

// JobQueue enqueues background jobs durably.
type JobQueue interface {
	// Enqueue inserts a job inside the transaction ctx carries (see
	// Transactor), so it exists only if that transaction commits; without
	// one, it is inserted on its own.
	Enqueue(ctx context.Context, args JobArgs, opts EnqueueOptions) error
	// EnqueueMany inserts a job for each of args, all or nothing, with the
	// same options, as Enqueue does one (in the transaction ctx carries, or
	// on its own). With UniqueByArgs, args repeating an earlier one of the
	// call are skipped too. No args is no work and no error.
	EnqueueMany(ctx context.Context, args []JobArgs, opts EnqueueOptions) error
}
