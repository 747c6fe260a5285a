package commands

import (
	"sync"
	"time"

	"github.com/engram-memory/engram/domain/processing"
)

// maxStackSnapshots bounds how many agents' processing states a pipeline
// keeps folded in memory; past it, an arbitrary one is dropped (and folded
// again from its stream when next needed).
const maxStackSnapshots = 1024

// stackSnapshots keeps each agent's processing state folded up to a stream
// version, so that a call reads only the events appended since (usually
// none) instead of the whole cognition stream. The stream stays the truth:
// every load reads its tail from the store, so appends by other nodes are
// seen, and the append's expected version still guards every decision.
//
// A published snapshot is never changed: readers share it without a lock,
// and a load that finds new events advances a copy (Stack.Clone) and
// publishes that.
type stackSnapshots struct {
	mu    sync.Mutex
	byKey map[stackKey]*processing.Stack
}

// stackKey names an agent; its creation time tells a re-created agent of
// the same id, whose stream's older events are not its own.
type stackKey struct {
	userID, agentID string
	createdAt       time.Time
}

func newStackSnapshots() *stackSnapshots {
	return &stackSnapshots{byKey: map[stackKey]*processing.Stack{}}
}

// get returns the agent's snapshot, or nil.
func (s *stackSnapshots) get(k stackKey) *processing.Stack {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byKey[k]
}

// put publishes st as the agent's snapshot unless a newer one is already
// there (two loads may advance the same snapshot at once).
func (s *stackSnapshots) put(k stackKey, st *processing.Stack) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.byKey[k]
	if ok && cur.Version >= st.Version {
		return
	}
	if !ok && len(s.byKey) >= maxStackSnapshots {
		for other := range s.byKey {
			delete(s.byKey, other)
			break
		}
	}
	s.byKey[k] = st
}
