package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/infra/kurrentdb/kurrentdbtest"
	"github.com/engram-memory/engram/internal/app"
)

// BenchmarkRebuild replays a log of memories with 384-dimension vectors
// into every projection, as `engram projections rebuild` does (offline),
// and reports events/s, once per event store: the embedded SQLite log, a
// PostgreSQL log (this package's test server), the same with the read
// models in PostgreSQL too, and a KurrentDB log (the protocol-level test
// server in process, so that figure is the adapter's and the projections'
// cost, not a real KurrentDB's).
func BenchmarkRebuild(b *testing.B) {
	const memories = 5000
	postgresLog := func(b *testing.B) app.Config {
		return app.Config{EventStore: app.EventStore{Backend: app.PostgresLog, URL: pg.Database(b)}}
	}
	logs := []struct {
		name string
		open func(b *testing.B) app.Config
	}{
		{app.SQLiteLog, func(*testing.B) app.Config { return app.Config{} }},
		{app.PostgresLog, postgresLog},
		{app.PostgresLog + "+read-models", func(b *testing.B) app.Config {
			cfg := postgresLog(b)
			cfg.ReadModels.Backend = app.PostgresReadModels
			return cfg
		}},
		{app.KurrentLog, func(b *testing.B) app.Config {
			srv, err := kurrentdbtest.Start(kurrentdbtest.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(srv.Close)
			return app.Config{EventStore: app.EventStore{Backend: app.KurrentLog, URL: srv.URL()}}
		}},
	}
	for _, log := range logs {
		b.Run(log.name, func(b *testing.B) {
			ctx := context.Background()
			logger := slog.New(slog.NewTextHandler(io.Discard, nil))
			cfg := log.open(b)
			cfg.DataDir, cfg.Logger = b.TempDir(), logger
			stApp, err := app.New(ctx, app.Settings{Config: cfg}, 0)
			if err != nil {
				b.Fatal(err)
			}
			st := stApp.Core
			defer st.Close()
			events := fillAgent(b, st.Store, memories)
			rebuilds := 0
			for b.Loop() {
				if err := st.RebuildOffline(ctx); err != nil {
					b.Fatal(err)
				}
				rebuilds++
			}
			b.ReportMetric(float64(events*rebuilds)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// fillAgent appends an agent with n notes and their vectors, in batches of
// 500 as the batch endpoint would, and returns the number of events.
func fillAgent(b testing.TB, store domain.EventStore, n int) int {
	b.Helper()
	ref := memory.AgentRef{UserID: "u1", AgentID: "bench"}
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"deploy", "cache", "login", "latency", "backup", "friday", "review", "python", "rollback", "alert", "database", "team"}
	meta := domain.Metadata{Actor: domain.Actor{Kind: domain.ActorSystem, ID: "bench"}}
	total := 0
	created, _ := domain.MarshalEvent(memory.AgentCreated{AgentRef: ref, EmbeddingModel: "engram-hash-384", Dimensions: 384, CreatedAt: time.Now()}, meta)
	if _, err := store.Append(context.Background(), memory.AgentStream("u1", "bench"), domain.ExpectAny, []domain.NewEvent{created}); err != nil {
		b.Fatal(err)
	}
	total++
	for start := 0; start < n; start += 500 {
		var batch []domain.NewEvent
		for i := start; i < min(n, start+500); i++ {
			text := fmt.Sprintf("note %d about %s and %s", i, words[rng.IntN(len(words))], words[rng.IntN(len(words))])
			content, _ := json.Marshal(memory.NoteContent{Content: text})
			id := fmt.Sprintf("0193a1f0-0000-7000-8000-%012d", i)
			hash := memory.TextHash(text)
			vec := make(memory.Vector, 384)
			for j := range vec {
				vec[j] = float32(rng.NormFloat64())
			}
			c, _ := domain.MarshalEvent(memory.MemoryCreated{AgentRef: ref, MemoryID: id, Type: memory.Note, Content: content, Tags: []string{}, DerivedFrom: []string{}, CreatedAt: time.Now(), TextHash: hash}, meta)
			e, _ := domain.MarshalEvent(memory.MemoryEmbedded{AgentRef: ref, MemoryID: id, Model: "engram-hash-384", Dimensions: 384, TextHash: hash, Vector: vec}, meta)
			batch = append(batch, c, e)
		}
		if _, err := store.Append(context.Background(), memory.AgentStream("u1", "bench"), domain.ExpectAny, batch); err != nil {
			b.Fatal(err)
		}
		total += len(batch)
	}
	return total
}
