package sqlite

import (
	"sync"

	"github.com/engram-memory/engram/domain/account"
)

// credCache remembers the keys and sessions that authenticated requests
// looked up by secret hash, so that a request costs no SQLite query for its
// credential. It holds exactly what the read model said at the last
// commit: the accounts projection clears it after every batch it applies
// (and on reset), before the engine reports the batch as applied, so a
// revocation, a cycle or an ended session is seen by the next request
// after the command that caused it returns, as without the cache.
//
// A lookup that read SQLite before a clear must not put its (possibly
// stale) answer back after the clear: each clear starts a new generation,
// and an answer is stored only if the generation it was read in is still
// the current one.
type credCache struct {
	mu       sync.RWMutex
	gen      uint64
	keys     map[string]account.KeyView
	sessions map[string]account.SessionView
}

// maxCachedCreds bounds each map; past it the map starts over. Only
// credentials that exist are cached, so guessing secrets cannot fill it.
const maxCachedCreds = 10000

func newCredCache() *credCache {
	return &credCache{keys: map[string]account.KeyView{}, sessions: map[string]account.SessionView{}}
}

// key returns the cached key of hash, and the generation to store a fresh
// lookup under when there is none.
func (c *credCache) key(hash string) (account.KeyView, bool, uint64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	k, ok := c.keys[hash]
	return k, ok, c.gen
}

func (c *credCache) putKey(gen uint64, hash string, k account.KeyView) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if len(c.keys) >= maxCachedCreds {
		clear(c.keys)
	}
	c.keys[hash] = k
}

// session is key for sessions.
func (c *credCache) session(hash string) (account.SessionView, bool, uint64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s, ok := c.sessions[hash]
	return s, ok, c.gen
}

func (c *credCache) putSession(gen uint64, hash string, s account.SessionView) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if len(c.sessions) >= maxCachedCreds {
		clear(c.sessions)
	}
	c.sessions[hash] = s
}

// invalidate forgets everything and starts a new generation.
func (c *credCache) invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.keys)
	clear(c.sessions)
}
