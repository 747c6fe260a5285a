package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// MemoriesProjection is the name of the memories read model.
const MemoriesProjection = "memories"

// memoriesTables are the read model's tables with their primary keys, in
// the order a reset empties them and an export writes them.
func memoriesTables() []exportTable {
	return []exportTable{
		{name: "memory_embeddings", orderBy: "memory_id, model, dimensions"},
		{name: "memories", orderBy: "id"},
		{name: "agents", orderBy: "user_id, agent_id"},
		{name: "agent_streams", orderBy: "stream"},
	}
}

// Memories is the "memories" read model: agents, their memories, and which
// memory texts have vectors in which model. It is a projection of the agent
// streams and answers every memory query, always scoped by user.
//
// It also records the version of every agent stream it applied, which the
// memory commands append at (so they decide on exactly the state they
// read), and per agent the count and content size of its memories, which
// the quotas limit.
//
// Races between writers that append with ExpectAny (the embedding queue and
// re-embedding jobs) or wrote logs before expected versions are settled
// here, in log order, the same way on every replay:
//   - a second AgentCreated for an agent that exists is ignored (the first
//     one's model binding wins);
//   - memory events for an agent that does not exist (it was deleted by an
//     event earlier in the log) are ignored;
//   - events for a memory that does not exist (purged) are ignored;
//   - a MemoryEmbedded whose text_hash is not the memory's current one is
//     ignored (it embedded a text that a later patch replaced).
type Memories struct {
	tableModel
}

// NewMemories returns the read model over db.
func NewMemories(db *DB) *Memories {
	return &Memories{tableModel{db: db, name: MemoriesProjection, tables: memoriesTables()}}
}

// Apply implements projections.Projection.
func (m *Memories) Apply(ctx context.Context, events []domain.Event) error {
	// A stream's version is recorded once per batch, at its last event.
	lastOfStream := map[string]uint64{}
	for _, e := range events {
		if isAgentEvent(e.Type) {
			lastOfStream[e.Stream] = e.Position
		}
	}
	var a *memApplier
	return m.db.ApplyEvents(ctx, MemoriesProjection, events, func(tx *sql.Tx, e domain.Event) error {
		if a == nil || a.tx != tx {
			a = &memApplier{ctx: ctx, tx: tx, stmts: map[string]*sql.Stmt{}, agents: map[memory.AgentRef]bool{}}
		}
		if err := a.apply(e); err != nil {
			return err
		}
		if lastOfStream[e.Stream] == e.Position && isAgentEvent(e.Type) {
			return a.recordStreamVersion(e)
		}
		return nil
	}, nil)
}

// memTimeLayout is fixed width, so text order is time order.
const memTimeLayout = "2006-01-02T15:04:05.000000000Z"

func memTime(t time.Time) string { return t.UTC().Format(memTimeLayout) }

func parseMemTime(s string) (time.Time, error) {
	t, err := time.Parse(memTimeLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("sqlite: stored time %q: %w", s, err)
	}
	return t, nil
}

// memJSONList encodes a string list, nil as [].
func memJSONList(v []string) (string, error) {
	if v == nil {
		v = []string{}
	}
	b, err := json.Marshal(v)
	return string(b), err
}
