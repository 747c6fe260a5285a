package multinode_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/infra/kurrentdb"
	"github.com/engram-memory/engram/infra/kurrentdb/kurrentdbtest"
	"github.com/engram-memory/engram/internal/testserver"
)

// TestTwoNodesPushingOneMemoryIDOneWins: two users push the same memory id
// at once, each through another node of one shared log (PostgreSQL; the
// KurrentDB test server), round after round. Memory ids are global, and neither node's read model can show the
// other's memory before it is committed: only the claim committed with the
// append decides. Exactly one push is answered 200, the other 409
// memory_exists, and the log holds the memory once, in the winner's agent.
func TestTwoNodesPushingOneMemoryIDOneWins(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		c := startCluster(t, 2)
		twoNodesPushOneMemoryID(t, c.nodes, func(memoryID string) (int, string) {
			var n int
			var stream string
			if err := pgxQueryRow(t, c.dbURL, fmt.Sprintf(`SELECT count(*), min(stream) FROM events WHERE type = 'MemoryCreated' AND convert_from(payload, 'UTF8')::jsonb ->> 'memory_id' = '%s'`, memoryID), &n, &stream); err != nil {
				t.Fatal(err)
			}
			return n, stream
		})
	})
	t.Run("kurrentdb", func(t *testing.T) {
		srv, err := kurrentdbtest.Start(kurrentdbtest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
		nodes := make([]*testserver.Server, 2)
		for i := range nodes {
			nodes[i] = testserver.Start(t, testserver.Options{Binary: binPath, DataDir: t.TempDir(),
				Args: []string{"--event-store", "kurrentdb", "--event-store-url", srv.URL()}})
		}
		ctx := context.Background()
		log, err := kurrentdb.Open(ctx, kurrentdb.Config{URL: srv.URL()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { log.Close() })
		twoNodesPushOneMemoryID(t, nodes, func(memoryID string) (n int, stream string) {
			var after uint64
			for {
				page, err := log.ReadAll(ctx, after, 500)
				if err != nil {
					t.Fatal(err)
				}
				if len(page) == 0 {
					return n, stream
				}
				for _, e := range page {
					var created memory.MemoryCreated
					if e.Type == "MemoryCreated" && e.Decode(&created) == nil && created.MemoryID == memoryID {
						n, stream = n+1, e.Stream
					}
				}
				after = page[len(page)-1].Position
			}
		})
	})
}

// twoNodesPushOneMemoryID registers a user on each node, has both push
// one memory id at once, round after round, and checks each round's
// answers and, with created (how often and in which stream the log holds
// a memory), the log.
func twoNodesPushOneMemoryID(t *testing.T, nodes []*testserver.Server, created func(memoryID string) (int, string)) {
	keys := []string{
		testserver.Register(t, nodes[0].BaseURL, nodes[0].DataDir, "ada@example.com"),
		testserver.Register(t, nodes[1].BaseURL, nodes[1].DataDir, "bob@example.com"),
	}
	userIDs := make([]string, 2)
	for i, key := range keys {
		me := must(t, call(t, nodes[i], "GET", "/auth/status", key, nil), http.StatusOK)
		userIDs[i] = userIDOf(t, me)
	}
	const rounds = 40
	for round := range rounds {
		memoryID := uuid.NewString()
		statuses, codes := make([]int, 2), make([]string, 2)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				body := map[string]any{"agent_id": "race", "events": []map[string]any{{
					"id": uuid.NewString(), "type": "MemoryCreated", "time": time.Now().UTC(),
					"payload": map[string]any{"memory_id": memoryID, "type": "note", "content": map[string]any{"content": fmt.Sprintf("round %d, user %d", round, i)}},
				}}}
				<-start
				r := call(t, nodes[i], "POST", "/sync/events", keys[i], body)
				statuses[i], codes[i] = r.status, r.code()
			}()
		}
		close(start)
		wg.Wait()
		winner := -1
		for i := range statuses {
			switch {
			case statuses[i] == http.StatusOK && winner == -1:
				winner = i
			case statuses[i] == http.StatusOK:
				t.Fatalf("round %d: both pushes of memory %s answered 200", round, memoryID)
			case statuses[i] != http.StatusConflict || codes[i] != "memory_exists":
				t.Fatalf("round %d: push answered %d %s, want 200 or 409 memory_exists", round, statuses[i], codes[i])
			}
		}
		if winner == -1 {
			t.Fatalf("round %d: neither push of memory %s won (%v %v)", round, memoryID, statuses, codes)
		}
		n, stream := created(memoryID)
		if want := memory.AgentStream(userIDs[winner], "race"); n != 1 || stream != want {
			t.Fatalf("round %d: the log holds memory %s %d times (in %s), want once, in the winner's %s", round, memoryID, n, stream, want)
		}
	}
}

// userIDOf is the user id of a GET /auth/status reply.
func userIDOf(t *testing.T, r reply) string {
	t.Helper()
	id, _ := r.data()["user_id"].(string)
	if id == "" {
		t.Fatalf("no user id in %v", r.body)
	}
	return id
}
