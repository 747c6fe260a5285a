package sqlite_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/projections"
)

// BenchmarkHydrate measures the hydration of a search page (10 ids of one
// agent) on an agent of ENGRAM_BENCH_MEMORIES notes (default 20000), from
// 8 goroutines as under the load benchmark: whole views (MemoriesByID),
// what search uses (ExcerptsByID), and the agent view every write reads.
func BenchmarkHydrate(b *testing.B) {
	n := 20000
	if v := os.Getenv("ENGRAM_BENCH_MEMORIES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	db := openDB(b)
	l := &memLog{store: sqlite.NewEventStore(db, 50*time.Millisecond), rm: sqlite.NewMemories(db)}
	ctx := context.Background()
	appendAll := func(payloads []domain.Payload) {
		events := make([]domain.NewEvent, len(payloads))
		for i, p := range payloads {
			e, err := domain.MarshalEvent(p, domain.Metadata{Actor: domain.Actor{Kind: domain.ActorSystem, ID: "bench"}})
			if err != nil {
				b.Fatal(err)
			}
			events[i] = e
		}
		if _, err := l.store.Append(ctx, memory.AgentStream(memAlice.UserID, memAlice.AgentID), domain.ExpectAny, events); err != nil {
			b.Fatal(err)
		}
		for {
			batch, err := l.store.ReadAll(ctx, l.fed, 10000)
			if err != nil {
				b.Fatal(err)
			}
			if len(batch) == 0 {
				return
			}
			if err := projections.NewMemories(l.rm).Apply(ctx, batch); err != nil {
				b.Fatal(err)
			}
			l.fed = batch[len(batch)-1].Position
		}
	}
	appendAll([]domain.Payload{memAgentCreated(memAlice, "m1", 4)})
	words := strings.Fields("deploy rollback hotfix retro meeting standup incident service latency cache budget roadmap")
	rng := rand.New(rand.NewPCG(1, 2))
	for start := 0; start < n; start += 1000 {
		var batch []domain.Payload
		for i := start; i < min(n, start+1000); i++ {
			var text []string
			for range 8 + rng.IntN(23) {
				text = append(text, words[rng.IntN(len(words))])
			}
			batch = append(batch, memNoteCreated(memAlice, fmt.Sprintf("mem_%08d", i), strings.Join(text, " "), memT0.Add(time.Duration(i)*time.Second)))
		}
		appendAll(batch)
	}
	run := func(b *testing.B, hydrate func(ids []string) (int, error)) {
		cpu0 := processCPU()
		b.ResetTimer()
		b.ReportAllocs()
		b.SetParallelism(4) // 8 goroutines on 2 cores
		b.RunParallel(func(pb *testing.PB) {
			rng := rand.New(rand.NewPCG(rand.Uint64(), 3))
			ids := make([]string, 10)
			for pb.Next() {
				for i := range ids {
					ids[i] = fmt.Sprintf("mem_%08d", rng.IntN(n))
				}
				if got, err := hydrate(ids); err != nil || got == 0 {
					b.Fatal(got, err)
				}
			}
		})
		b.StopTimer()
		b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
	}
	b.Run("views", func(b *testing.B) {
		run(b, func(ids []string) (int, error) {
			v, err := l.rm.MemoriesByID(ctx, memAlice.UserID, memAlice.AgentID, ids)
			return len(v), err
		})
	})
	b.Run("excerpts", func(b *testing.B) {
		run(b, func(ids []string) (int, error) {
			v, err := l.rm.ExcerptsByID(ctx, memAlice.UserID, memAlice.AgentID, ids, false)
			return len(v), err
		})
	})
	// Every memory write reads its agent (twice per batch): this must not
	// grow with the agent's memories.
	b.Run("agent", func(b *testing.B) {
		run(b, func([]string) (int, error) {
			a, _, err := l.rm.Agent(ctx, memAlice.UserID, memAlice.AgentID)
			return a.MemoryCount, err
		})
	})
}

// processCPU is the user + system CPU time of this process: on a shared
// machine, CPU per operation is steadier than wall time per operation.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
