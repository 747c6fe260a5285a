// Package forgotten keeps, per agent, which memories an in-process index
// holds but hides. The embedded keyword and vector indexes (infra/textindex,
// infra/vectorindex) keep a forgotten memory's entries, so recovering it
// needs no re-indexing, and leave them out of searches and counts.
package forgotten

import (
	"maps"
	"slices"
	"sync"

	"github.com/engram-memory/engram/domain"
)

// Sets is the forgotten memory ids of each agent. The zero value is empty
// and ready; it is safe for concurrent use.
type Sets struct {
	mu      sync.RWMutex
	byScope map[domain.IndexScope]map[string]struct{}
}

// Mark records whether the agent's memory is forgotten.
func (s *Sets) Mark(scope domain.IndexScope, memoryID string, forgotten bool) {
	if !forgotten && s.Count(scope) == 0 {
		return // the usual case: no write lock for writes that forget nothing
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	set := s.byScope[scope]
	if !forgotten {
		delete(set, memoryID)
		if len(set) == 0 {
			delete(s.byScope, scope)
		}
		return
	}
	if set == nil {
		if s.byScope == nil {
			s.byScope = map[domain.IndexScope]map[string]struct{}{}
		}
		set = map[string]struct{}{}
		s.byScope[scope] = set
	}
	set[memoryID] = struct{}{}
}

// Count is how many of the agent's memories are forgotten.
func (s *Sets) Count(scope domain.IndexScope) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.byScope[scope])
}

// Hidden returns a copy of the agent's forgotten set (nil when empty, the
// usual case), so a search holds no lock while it runs.
func (s *Sets) Hidden(scope domain.IndexScope) map[string]struct{} {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if set := s.byScope[scope]; len(set) > 0 {
		return maps.Clone(set)
	}
	return nil
}

// DropAgent forgets the agent's set.
func (s *Sets) DropAgent(scope domain.IndexScope) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byScope, scope)
}

// Clear forgets every set.
func (s *Sets) Clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.byScope)
}

// All returns a copy of every agent's forgotten ids, sorted, for a snapshot
// of the index that holds them.
func (s *Sets) All() map[domain.IndexScope][]string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[domain.IndexScope][]string, len(s.byScope))
	for scope, set := range s.byScope {
		out[scope] = slices.Sorted(maps.Keys(set))
	}
	return out
}
