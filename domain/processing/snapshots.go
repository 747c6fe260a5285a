package processing

import (
	"context"
	"fmt"
	"sync"

	"github.com/engram-memory/engram/domain"
)

// maxSnapshots bounds how many agents' processing states Snapshots keeps
// folded in memory; past it, an arbitrary one is dropped (and folded again
// from its stream when next needed).
const maxSnapshots = 1024

// Snapshots keeps each agent's processing state folded up to a stream
// version, so that a load reads only the events appended since (usually
// none) instead of the whole cognition stream. The stream stays the truth:
// every load reads its tail from the log, so appends by other nodes are
// seen, and the append's expected version still guards every decision.
//
// A published snapshot is never changed: readers share it without a lock,
// and a load that finds new events advances a copy (Stack.Clone) and
// publishes that.
type Snapshots struct {
	log   domain.StreamReader
	mu    sync.Mutex
	byKey map[AgentRef]*State
}

// NewSnapshots folds the cognition streams of log.
func NewSnapshots(log domain.StreamReader) *Snapshots {
	return &Snapshots{log: log, byKey: map[AgentRef]*State{}}
}

// Load returns the state of the agent ref names: its snapshot or, when
// events were appended since, a copy of it advanced by them. The caller
// must not change it. ref.AgentCreatedAt tells a re-created agent of the
// same id, whose stream's older events are not its own.
func (s *Snapshots) Load(ctx context.Context, ref AgentRef) (*State, error) {
	st := s.get(ref)
	var from uint64
	if st != nil {
		from = uint64(st.Version + 1)
	}
	events, err := s.log.ReadStream(ctx, Stream(ref.UserID, ref.AgentID), from)
	if err != nil {
		return nil, fmt.Errorf("processing: read cognition stream: %w", err)
	}
	if st != nil && len(events) == 0 {
		return st, nil
	}
	if st == nil {
		st = NewStateOf(ref.AgentCreatedAt)
	} else {
		st = st.Clone()
	}
	if err := st.ApplyAll(events); err != nil {
		return nil, err
	}
	s.put(ref, st)
	return st, nil
}

// get returns the agent's snapshot, or nil.
func (s *Snapshots) get(k AgentRef) *State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byKey[k]
}

// put publishes st as the agent's snapshot unless a newer one is already
// there (two loads may advance the same snapshot at once).
func (s *Snapshots) put(k AgentRef, st *State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.byKey[k]
	if ok && cur.Version >= st.Version {
		return
	}
	if !ok && len(s.byKey) >= maxSnapshots {
		for other := range s.byKey {
			delete(s.byKey, other)
			break
		}
	}
	s.byKey[k] = st
}
