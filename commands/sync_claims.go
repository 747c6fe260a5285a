package commands

import (
	"context"
	"sync"
)

// memoryClaims are the memory ids that pushes of this server are
// appending. Memory ids are global but live in their agents' streams, so
// the expected stream version of a push does not stop another user's
// push from creating the same id at once. A push claims its new ids: the
// claim checks, under one lock, that no other push is appending an id and
// that the read model shows no memory with it, and it holds until the
// read model shows the push's memories. Of two pushes of one id, exactly
// one claims it; the other answers 409 memory_exists.
type memoryClaims struct {
	mu  sync.Mutex
	ids map[string]bool
}

func newMemoryClaims() *memoryClaims { return &memoryClaims{ids: map[string]bool{}} }

// claim claims ids for a push and returns the release, which
// the push calls once the read model shows them (or when its append
// failed).
func (c *memoryClaims) claim(ctx context.Context, owners MemoryOwners, ids []string) (release func(), err error) {
	if len(ids) == 0 {
		return func() {}, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if c.ids[id] {
			return nil, errMemoryIDTaken(id)
		}
		_, _, taken, err := owners.MemoryOwner(ctx, id)
		if err != nil {
			return nil, err
		}
		if taken {
			return nil, errMemoryIDTaken(id)
		}
	}
	for _, id := range ids {
		c.ids[id] = true
	}
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, id := range ids {
			delete(c.ids, id)
		}
	}, nil
}
