package identity

import (
	"sync"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// maxCachedTokens bounds the principals a Service keeps; past it, expired
// entries are dropped, then all of them if that is not enough.
const maxCachedTokens = 10_000

// principalCache keeps the principals of recently verified tokens for a
// short while, keyed by the token's hash.
type principalCache struct {
	mu      sync.Mutex
	entries map[[32]byte]cachedPrincipal
}

type cachedPrincipal struct {
	p       ports.Principal
	until   time.Time // the cache's deadline, never past the token's expiry
	touched time.Time // when last_used_at was last recorded (or seen)
}

// get returns the entry for hash while it holds at now.
func (c *principalCache) get(hash [32]byte, now time.Time) (cachedPrincipal, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[hash]
	if !ok {
		return cachedPrincipal{}, false
	}
	if !now.Before(e.until) {
		delete(c.entries, hash)
		return cachedPrincipal{}, false
	}
	return e, true
}

// put stores e for hash.
func (c *principalCache) put(hash [32]byte, e cachedPrincipal, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[[32]byte]cachedPrincipal{}
	}
	if _, ok := c.entries[hash]; !ok && len(c.entries) >= maxCachedTokens {
		for h, old := range c.entries {
			if !now.Before(old.until) {
				delete(c.entries, h)
			}
		}
		if len(c.entries) >= maxCachedTokens {
			clear(c.entries)
		}
	}
	c.entries[hash] = e
}

// forget drops the entry of the token with the id.
func (c *principalCache) forget(tokenID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for h, e := range c.entries {
		if e.p.TokenID == tokenID {
			delete(c.entries, h)
		}
	}
}

// clear drops every entry.
func (c *principalCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.entries)
}
