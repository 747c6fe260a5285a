package sqlite_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/projections"
)

// memLog appends agent-stream events to a real event log and feeds them to
// the memories read model, as the projection engine would: the benchmarks
// fill the store with it (the query specification is
// readmodeltest.RunMemoryQueries).
type memLog struct {
	t     *testing.T
	store *sqlite.EventStore
	rm    *sqlite.Memories
	fed   uint64
}

func newMemLog(t *testing.T) *memLog {
	db := openDB(t)
	return &memLog{t: t, store: sqlite.NewEventStore(db, 50*time.Millisecond), rm: sqlite.NewMemories(db)}
}

// append records payloads on the agent's stream and applies every new
// event to the read model.
func (l *memLog) append(ref memory.AgentRef, payloads ...domain.Payload) {
	l.t.Helper()
	ctx := context.Background()
	events := make([]domain.NewEvent, len(payloads))
	for i, p := range payloads {
		e, err := domain.MarshalEvent(p, domain.Metadata{Actor: domain.Actor{Kind: domain.ActorSystem, ID: "test"}})
		if err != nil {
			l.t.Fatal(err)
		}
		events[i] = e
	}
	if _, err := l.store.Append(ctx, memory.AgentStream(ref.UserID, ref.AgentID), domain.ExpectAny, events); err != nil {
		l.t.Fatal(err)
	}
	l.feedAll()
}

func (l *memLog) feedAll() {
	l.t.Helper()
	batch, err := l.store.ReadAll(context.Background(), l.fed, 10000)
	if err != nil {
		l.t.Fatal(err)
	}
	if len(batch) == 0 {
		return
	}
	if err := projections.NewMemories(l.rm).Apply(context.Background(), batch); err != nil {
		l.t.Fatal(err)
	}
	l.fed = batch[len(batch)-1].Position
}

var (
	memAlice = memory.AgentRef{UserID: "user-a", AgentID: "claire"}
	memT0    = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	memHash  = func(s string) string { return memory.TextHash(s) }
)

func memAgentCreated(ref memory.AgentRef, model string, dims int) memory.AgentCreated {
	return memory.AgentCreated{AgentRef: ref, EmbeddingModel: model, Dimensions: dims, CreatedAt: memT0}
}

func memNoteCreated(ref memory.AgentRef, id, text string, at time.Time) memory.MemoryCreated {
	content, _ := json.Marshal(map[string]string{"content": text})
	return memory.MemoryCreated{AgentRef: ref, MemoryID: id, Type: memory.Note, Content: content, Tags: []string{"t"}, CreatedAt: at, TextHash: memHash(text)}
}

func memEmbeddedEvent(ref memory.AgentRef, id, model string, dims int, text string) memory.MemoryEmbedded {
	return memory.MemoryEmbedded{AgentRef: ref, MemoryID: id, Model: model, Dimensions: dims, TextHash: memHash(text), Vector: make(memory.Vector, dims)}
}
