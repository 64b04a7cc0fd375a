package ports

import "context"

//go:generate go tool mockgen -typed -destination ../testkit/mocks/tx.go -package mocks . Transactor

// Transactor opens units of work. Every store call and job enqueued with the
// context passed to fn belongs to one transaction, committed when fn returns
// nil and rolled back when it returns an error or panics.
type Transactor interface {
	// WithinTx runs fn in a transaction, or in the one ctx carries already.
	WithinTx(ctx context.Context, fn func(ctx context.Context) error) error
}
