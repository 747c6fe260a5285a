package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// memoriesCheckpoint keys the memories read model's checkpoint.
const memoriesCheckpoint = "memories"

// memoriesTables are the read model's tables with their primary keys, in
// the order a reset empties them and an export writes them.
func memoriesTables() []exportTable {
	return []exportTable{
		{name: "memory_embeddings", orderBy: "memory_id, model, dimensions"},
		{name: "memories", orderBy: "id"},
		{name: "agents", orderBy: "user_id, agent_id"},
		{name: "agent_settings", orderBy: "user_id, agent_id"},
		{name: "agent_streams", orderBy: "stream"},
	}
}

// Memories is the memories read model (memory.ReadModel): agents, their
// memories, and which memory texts have vectors in which model. It
// answers every memory query, always scoped by user.
type Memories struct {
	tableModel
}

var _ memory.ReadModel = (*Memories)(nil)

// NewMemories returns the read model over db.
func NewMemories(db *DB) *Memories {
	return &Memories{tableModel{db: db, name: memoriesCheckpoint, tables: memoriesTables()}}
}

// Apply implements memory.ReadModel.
func (m *Memories) Apply(ctx context.Context, events []domain.Event, apply func(context.Context, memory.ReadModelTx, domain.Event) error) error {
	return applyBatch(ctx, m.db, memoriesCheckpoint, events, func(b *batchTx) memory.ReadModelTx { return newMemoriesTx(b) }, apply)
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
