package projections_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/postgres"
	"github.com/engram-memory/engram/internal/pgtest"
	"github.com/engram-memory/engram/projections"
)

// postgresLog starts a PostgreSQL server and returns a fresh database and
// its event log holding n events.
func postgresLog(b *testing.B, n int) (*postgres.DB, *postgres.EventStore) {
	b.Helper()
	ctx := context.Background()
	server, err := pgtest.Open(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = server.Close() })
	db, err := postgres.Open(ctx, server.Database(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(db.Close)
	store := postgres.NewEventStore(db, time.Second)
	for start := 0; start < n; start += 1000 {
		appendEvents(b, store, min(1000, n-start))
	}
	return db, store
}

// appendEvents appends n events that add 1 each.
func appendEvents(b *testing.B, store domain.EventStore, n int) uint64 {
	b.Helper()
	raw, _ := json.Marshal(map[string]int{"N": 1})
	events := make([]domain.NewEvent, n)
	for i := range events {
		events[i] = domain.NewEvent{Type: "Added", SchemaVersion: 1, Payload: raw}
	}
	res, err := store.Append(context.Background(), "s", domain.ExpectAny, events)
	if err != nil {
		b.Fatal(err)
	}
	return res.LastPosition
}

// BenchmarkReadLogOnPostgres measures the engine's bounded reads of a
// PostgreSQL log, and the connections each opens ("conns/op": a read
// that subscribed took one out of the pool for its LISTEN): a replay of
// 10,000 events, and a catch-up round of one event (CatchUp after an
// append).
func BenchmarkReadLogOnPostgres(b *testing.B) {
	db, store := postgresLog(b, 10000)
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	conns := func() int64 { return db.Pool.Stat().NewConnsCount() }

	b.Run("replay-10000", func(b *testing.B) {
		p := &sumProjection{name: "p"}
		engine := projections.NewEngine(store, logger, p)
		before := conns()
		for b.Loop() {
			if err := engine.Rebuild(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(conns()-before)/float64(b.N), "conns/op")
		if sum, _ := p.state(); sum != 10000 {
			b.Fatalf("replayed a sum of %d, want 10000", sum)
		}
	})
	b.Run("catch-up-1", func(b *testing.B) {
		p := &sumProjection{name: "p"}
		engine := projections.NewEngine(store, logger, p)
		if err := engine.CatchUp(ctx); err != nil {
			b.Fatal(err)
		}
		before := conns()
		for b.Loop() {
			b.StopTimer()
			appendEvents(b, store, 1)
			b.StartTimer()
			if err := engine.CatchUp(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(conns()-before)/float64(b.N), "conns/op")
	})
}
