package projections_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/infra/sqlite/sqlitetest"
	"github.com/engram-memory/engram/infra/vectorindex"
	"github.com/engram-memory/engram/projections"
)

// TestVectorLoadTime measures how long a start takes to load
// ENGRAM_LOAD_VECTORS stored 384-dim vectors of one agent into the index
// (a measurement; it runs only when the variable is set).
func TestVectorLoadTime(t *testing.T) {
	v := os.Getenv("ENGRAM_LOAD_VECTORS")
	if v == "" {
		t.Skip("set ENGRAM_LOAD_VECTORS (e.g. 100000) to run")
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlitetest.Dir(t), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	store := sqlite.NewVectorStore(db)
	ref := memory.AgentRef{UserID: "u1", AgentID: "a"}
	rng := rand.New(rand.NewPCG(1, 1))
	var events []domain.Event
	var pos uint64
	add := func(p domain.Payload) {
		raw, _ := json.Marshal(p)
		pos++
		events = append(events, domain.Event{Position: pos, Type: p.EventType(), Payload: raw})
	}
	add(&memory.AgentCreated{AgentRef: ref, EmbeddingModel: "m", Dimensions: 384})
	p := projections.NewVectors(store, vectorindex.NewPort(vectorindex.New(vectorindex.Options{ANNThreshold: -1})), true, nil)
	for i := range n {
		id := "m" + strconv.Itoa(i)
		add(&memory.MemoryCreated{AgentRef: ref, MemoryID: id, Type: memory.Note, TextHash: "h", CreatedAt: time.Unix(int64(i), 0)})
		vec := make(memory.Vector, 384)
		for j := range vec {
			vec[j] = float32(rng.NormFloat64())
		}
		add(&memory.MemoryEmbedded{AgentRef: ref, MemoryID: id, Model: "m", Dimensions: 384, TextHash: "h", Vector: vec})
		if len(events) >= 2000 {
			if err := p.Apply(ctx, events); err != nil {
				t.Fatal(err)
			}
			events = events[:0]
		}
	}
	if err := p.Apply(ctx, events); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	index := vectorindex.New(vectorindex.Options{})
	defer index.Close()
	fresh := projections.NewVectors(store, vectorindex.NewPort(index), true, nil)
	start := time.Now()
	if err := fresh.Load(ctx); err != nil {
		t.Fatal(err)
	}
	loaded := time.Since(start)
	st := index.Stats()
	t.Logf("loaded %d vectors (%d MiB raw, index holds %d MiB) in %v; HNSW graph built in the background after that",
		st.Vectors, st.VectorBytes>>20, st.HeldBytes>>20, loaded)
	if st.Vectors != n {
		t.Fatalf("loaded %d of %d", st.Vectors, n)
	}
}
