// Package memstore is the adapter that keeps every store port of devpilot
// in memory. It is for programs that embed devpilot's core services without
// a database (a command-line tool, a demo, an example, a test of your own
// tools): build the services with a Store in place of adapters/sqlstore and
// they behave the same, because memstore runs under every contract suite of
// testkit/storetest, as the SQL adapter does on SQLite and PostgreSQL. It
// imports only ports and the standard library.
//
// A Store keeps nothing across restarts: its records live in the process's
// memory and are gone when the process ends, and two processes never share
// one. Use adapters/sqlstore for anything that must survive a restart or be
// served by more than one replica.
//
// One Store, from New, implements every store port and ports.Transactor:
// pass the same value wherever a core asks for a store or a Transactor.
//
// Each method is atomic. Transactions run one at a time (as on SQLite, whose
// writer is one connection). A store call made with the context WithinTx
// gives fn joins the transaction, and its changes are undone, newest first,
// when fn returns an error or panics. Calls made outside the transaction
// while it runs are not blocked: they may read its uncommitted changes, and
// a record they write that the transaction also changed is set back to what
// it was before the transaction if it rolls back. Inside fn, call WithinTx
// only with the context fn received: a new transaction started from another
// context waits for fn's to end.
//
// Times read back in UTC; the assistant's records keep them to the
// microsecond, as PostgreSQL does. WatchRevocations is unsupported, as on
// SQLite. A Store is never closed; drop it to free its memory.
package memstore

import (
	"context"
	"sync"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// Store is an in-memory implementation of the store ports and of
// ports.Transactor. Create it with New; the zero value is not usable.
type Store struct {
	txmu sync.Mutex // held by the transaction running, if any
	mu   sync.Mutex // guards every field below

	identity    identityData
	invitations map[string]ports.Invitation // by id
	policies    map[policyKey]ports.ToolPolicy
	mcpServers  map[string]ports.MCPServer // by id
	mcpPolicies map[mcpPolicyKey]ports.MCPToolPolicy
	grants      map[grantKey]ports.PermissionGrant
	usage       map[usageKey]ports.UsageTotal
	usageKeys   map[string]string     // the day (YYYY-MM-DD) of each usage key
	budgets     map[string]int64      // monthly token budgets by organisation
	rates       map[string]rateWindow // made on first use
	idempotency map[idemKey]ports.IdempotencyRecord
	spec        specData
	content     contentData
	publish     publishData
	cloud       cloudData
	scm         scmData
	assistant   assistantData
	seq         int64 // the last insertion sequence number
}

// New returns an empty Store.
func New() *Store {
	s := &Store{}
	s.identity.init()
	s.invitations = map[string]ports.Invitation{}
	s.spec.init()
	s.content.init()
	s.publish.init()
	s.cloud.init()
	s.scm.init()
	s.assistant.init()
	s.policies = map[policyKey]ports.ToolPolicy{}
	s.mcpServers = map[string]ports.MCPServer{}
	s.mcpPolicies = map[mcpPolicyKey]ports.MCPToolPolicy{}
	s.grants = map[grantKey]ports.PermissionGrant{}
	s.usage = map[usageKey]ports.UsageTotal{}
	s.usageKeys = map[string]string{}
	s.budgets = map[string]int64{}
	s.idempotency = map[idemKey]ports.IdempotencyRecord{}
	return s
}

var _ ports.Transactor = (*Store)(nil)

type txKey struct{ s *Store }

// txn is a running transaction: the changes to undo when it rolls back, last
// first.
type txn struct {
	undo []func()
}

// WithinTx runs fn in a transaction carried by the context fn receives; it
// commits when fn returns nil, rolls every change back when fn returns an
// error (returned unchanged) or panics (re-panicked). When ctx carries a
// transaction of this Store already, fn joins it. It waits for the
// transaction running, if any, to end. It returns no error of its own.
func (s *Store) WithinTx(ctx context.Context, fn func(ctx context.Context) error) (err error) {
	if _, ok := ctx.Value(txKey{s}).(*txn); ok {
		return fn(ctx)
	}
	s.txmu.Lock()
	defer s.txmu.Unlock()
	tx := &txn{}
	committed := false
	defer func() {
		if !committed {
			s.mu.Lock()
			for i := len(tx.undo) - 1; i >= 0; i-- {
				tx.undo[i]()
			}
			s.mu.Unlock()
		}
	}()
	if err := fn(context.WithValue(ctx, txKey{s}, tx)); err != nil {
		return err
	}
	committed = true
	return nil
}

// record notes, while s.mu is held, how to undo a change when ctx carries a
// transaction.
func (s *Store) record(ctx context.Context, undo func()) {
	if tx, ok := ctx.Value(txKey{s}).(*txn); ok {
		tx.undo = append(tx.undo, undo)
	}
}

// put sets m[k] = v (s.mu held), undoably.
func put[K comparable, V any](ctx context.Context, s *Store, m map[K]V, k K, v V) {
	old, had := m[k]
	m[k] = v
	s.record(ctx, func() {
		if had {
			m[k] = old
		} else {
			delete(m, k)
		}
	})
}

// del deletes m[k] (s.mu held), undoably.
func del[K comparable, V any](ctx context.Context, s *Store, m map[K]V, k K) {
	old, had := m[k]
	if !had {
		return
	}
	delete(m, k)
	s.record(ctx, func() { m[k] = old })
}

// lock locks s.mu and returns its Unlock, for defer s.lock()().
func (s *Store) lock() func() {
	s.mu.Lock()
	return s.mu.Unlock
}

// utc returns t in UTC.
func utc(t time.Time) time.Time { return t.UTC() }

// utcPtr returns a copy of *t in UTC, nil for nil.
func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := t.UTC()
	return &v
}
