package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/projections"
)

// BenchmarkProvenanceTree measures provenance trees served from the edge
// index on an agent whose lineage is 1 raw entry → 40 episodes → 10
// beliefs each (400) → 1 value each (400), among 10,000 unrelated notes:
// the whole tree down from the raw entry (841 nodes, 3 levels) and the
// path up from a value (3 levels).
func BenchmarkProvenanceTree(b *testing.B) {
	db := openDB(b)
	prov := sqlite.NewProvenance(db)
	ctx := context.Background()
	var events []domain.Event
	add := func(id string, typ memory.Type, from ...string) {
		raw, err := json.Marshal(memory.MemoryCreated{AgentRef: memAlice, MemoryID: id, Type: typ, DerivedFrom: from})
		if err != nil {
			b.Fatal(err)
		}
		events = append(events, domain.Event{Position: uint64(len(events) + 1), Type: memory.MemoryCreated{}.EventType(), Payload: raw})
	}
	add("raw", memory.RawEntry)
	var lastValue string
	for e := range 40 {
		ep := fmt.Sprintf("ep-%02d", e)
		add(ep, memory.Episode, "raw:raw")
		for k := range 10 {
			bel := fmt.Sprintf("%s-bel-%02d", ep, k)
			add(bel, memory.Belief, "episode:"+ep)
			lastValue = bel + "-val"
			add(lastValue, memory.Value, "belief:"+bel)
		}
	}
	for n := range 10000 {
		add(fmt.Sprintf("note-%05d", n), memory.Note, "raw:unrelated")
	}
	if err := projections.NewProvenance(prov).Apply(ctx, events); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		root  memory.Ref
		next  memory.Neighbours
		nodes int
	}{
		{"down", memory.Ref{Type: memory.RawEntry, ID: "raw"}, func(ctx context.Context, ids []string) (map[string][]memory.Ref, error) {
			return prov.Derived(ctx, memAlice.UserID, memAlice.AgentID, ids)
		}, 841},
		{"up", memory.Ref{Type: memory.Value, ID: lastValue}, func(ctx context.Context, ids []string) (map[string][]memory.Ref, error) {
			return prov.Sources(ctx, memAlice.UserID, memAlice.AgentID, ids)
		}, 4},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				tree, err := memory.BuildProvenanceTree(ctx, tc.root, memory.DefaultProvenanceDepth, tc.next)
				if err != nil {
					b.Fatal(err)
				}
				if n := countNodes(tree); n != tc.nodes {
					b.Fatalf("%d nodes, want %d", n, tc.nodes)
				}
			}
		})
	}
}

func countNodes(n *memory.ProvenanceNode) int {
	c := 1
	for _, k := range n.Nodes {
		c += countNodes(k)
	}
	return c
}

// BenchmarkCognitionApplyBatch measures what the provenance and audit
// projections add to a batch write of 1000 notes (each derived from one
// raw entry) with their vectors: 2000 events per apply.
func BenchmarkCognitionApplyBatch(b *testing.B) {
	content, _ := json.Marshal(map[string]string{"content": "a note of ordinary length about the day's work"})
	var events []domain.Event
	for i := range 1000 {
		id := fmt.Sprintf("n-%04d", i)
		created, _ := json.Marshal(memory.MemoryCreated{AgentRef: memAlice, MemoryID: id, Type: memory.Note, Content: content, DerivedFrom: []string{"raw:r"}})
		embedded, _ := json.Marshal(memory.MemoryEmbedded{AgentRef: memAlice, MemoryID: id, Model: "m", Dimensions: 384, Vector: make(memory.Vector, 384)})
		events = append(events,
			domain.Event{ID: id + "-c", Type: memory.MemoryCreated{}.EventType(), Payload: created},
			domain.Event{ID: id + "-e", Type: memory.MemoryEmbedded{}.EventType(), Payload: embedded})
	}
	for _, name := range []string{projections.ProvenanceProjectionName, projections.AuditProjectionName} {
		b.Run(name, func(b *testing.B) {
			db := openDB(b)
			var p interface {
				Apply(context.Context, []domain.Event) error
			}
			if name == projections.ProvenanceProjectionName {
				p = projections.NewProvenance(sqlite.NewProvenance(db))
			} else {
				p = projections.NewAudit(sqlite.NewAudit(db))
			}
			next := uint64(0)
			for b.Loop() {
				batch := make([]domain.Event, len(events))
				for i, e := range events {
					next++
					e.Position, e.ID = next, fmt.Sprint(next)
					batch[i] = e
				}
				if err := p.Apply(context.Background(), batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
