package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/account"
	"github.com/engram-memory/engram/infra/postgres"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// TestTwoNodesApplyingTheSameBatchApplyItOnce runs the accounts store of
// two nodes (two pools on one database) over the same batch at the same
// time, several rounds: each batch must be applied once, and neither node
// may fail on the other's rows (a duplicate user would be a unique
// violation), because the checkpoint row is locked before it is read.
func TestTwoNodesApplyingTheSameBatchApplyItOnce(t *testing.T) {
	ctx := context.Background()
	first := openDB(t)
	var schema string
	if err := first.Pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	second, err := postgres.Open(ctx, withSearchPath(t, pg.URL(t), schema))
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	nodes := []*postgres.Accounts{postgres.NewAccounts(first), postgres.NewAccounts(second)}

	const rounds, perBatch = 20, 10
	for round := range rounds {
		events := make([]domain.Event, perBatch)
		for i := range events {
			events[i] = domain.Event{Position: uint64(round*perBatch + i + 1), Type: "UserRegistered"}
		}
		var applied sync.Map // position → nodes that applied it
		var wg sync.WaitGroup
		errs := make([]error, len(nodes))
		for n, node := range nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[n] = node.Apply(ctx, events, func(ctx context.Context, tx account.ReadModelTx, e domain.Event) error {
					applied.Store(fmt.Sprintf("%d/%d", e.Position, n), true)
					u := fmt.Sprintf("u%d", e.Position)
					return tx.AddUser(ctx, "user-"+u, account.UserRegistered{UserID: u, Email: u + "@example.com", RegisteredAt: t0})
				})
			}()
		}
		wg.Wait()
		for n, err := range errs {
			if err != nil {
				t.Fatalf("round %d: node %d: %v", round, n, err)
			}
		}
		for _, e := range events {
			_, byFirst := applied.Load(fmt.Sprintf("%d/0", e.Position))
			_, bySecond := applied.Load(fmt.Sprintf("%d/1", e.Position))
			if byFirst == bySecond {
				t.Fatalf("round %d: event %d applied by first=%v second=%v, want exactly one node", round, e.Position, byFirst, bySecond)
			}
		}
	}
	for _, node := range nodes {
		if cp, err := node.Checkpoint(ctx); err != nil || cp != rounds*perBatch {
			t.Fatalf("checkpoint = %d, %v; want %d", cp, err, rounds*perBatch)
		}
	}
}
