package postgres_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/eventstoretest"
	"github.com/engram-memory/engram/infra/postgres"
	"github.com/engram-memory/engram/internal/pgtest"
)

var schemaSeq atomic.Int64

// pg is the server of this package's tests: ENGRAM_TEST_POSTGRES_URL or a
// throwaway cluster TestMain starts.
var pg *pgtest.Server

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &pg)) }

// openDB opens a fresh, migrated database in a schema of its own, dropped
// when the test ends.
func openDB(t testing.TB) *postgres.DB {
	t.Helper()
	base := pg.URL(t)
	ctx := context.Background()
	schema := fmt.Sprintf("engram_test_%d_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9, schemaSeq.Add(1))
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(context.Background(), `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Error(err)
		}
	})
	db, err := postgres.Open(ctx, withSearchPath(t, base, schema))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

// withSearchPath adds search_path=schema to a URL or key=value DSN.
func withSearchPath(t testing.TB, base, schema string) string {
	if !strings.HasPrefix(base, "postgres://") && !strings.HasPrefix(base, "postgresql://") {
		return base + " search_path=" + schema
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func TestEventStoreConformance(t *testing.T) {
	pg.URL(t) // skips, saying why, without a server
	open := func(t *testing.T) domain.EventStore {
		return postgres.NewEventStore(openDB(t), 50*time.Millisecond)
	}
	eventstoretest.Run(t, open)
	eventstoretest.RunAtomicAcrossStreams(t, open)
}

// TestPayloadBytesExact checks the log keeps payload bytes as given (BYTEA,
// not JSONB, which would reorder keys and drop whitespace).
func TestPayloadBytesExact(t *testing.T) {
	s := postgres.NewEventStore(openDB(t), 50*time.Millisecond)
	ctx := context.Background()
	raw := []byte(`{"z": 1,  "a":[2, 1], "z2":"é"}`)
	if _, err := s.Append(ctx, "p-1", domain.ExpectNoStream, []domain.NewEvent{{Type: "T", SchemaVersion: 1, Payload: raw}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.ReadStream(ctx, "p-1", 0)
	if err != nil || len(got) != 1 {
		t.Fatalf("read: %d events, %v", len(got), err)
	}
	if string(got[0].Payload) != string(raw) {
		t.Fatalf("payload = %s, want %s", got[0].Payload, raw)
	}
}

// TestReopenKeepsMigrations opens the same schema twice: the second Open must
// find every migration applied and the data intact.
func TestReopenKeepsMigrations(t *testing.T) {
	db := openDB(t)
	ctx := context.Background()
	s := postgres.NewEventStore(db, 0)
	if _, err := s.Append(ctx, "r-1", domain.ExpectNoStream, []domain.NewEvent{{Type: "T", SchemaVersion: 1, Payload: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	var schema string
	if err := db.Pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	again, err := postgres.Open(ctx, withSearchPath(t, pg.URL(t), schema))
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	head, err := postgres.NewEventStore(again, 0).Head(ctx)
	if err != nil || head == 0 {
		t.Fatalf("head after reopen = %d, %v", head, err)
	}
}

// TestSubscribeWokenByNotify uses a poll interval far longer than the test's
// deadline, so the subscriber only sees the append if LISTEN/NOTIFY woke it.
func TestSubscribeWokenByNotify(t *testing.T) {
	s := postgres.NewEventStore(openDB(t), time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := s.Append(ctx, "n-1", domain.ExpectAny, []domain.NewEvent{{Type: "T", SchemaVersion: 1, Payload: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	got := make(chan uint64, 10)
	go s.SubscribeAll(ctx, 0, func(_ context.Context, events []domain.Event) error {
		for _, e := range events {
			got <- e.Position
		}
		return nil
	})
	// SubscribeAll LISTENs before its catch-up read, so once the catch-up
	// has delivered, the append below must wake it.
	first := <-got
	res, err := s.Append(ctx, "n-1", domain.ExpectAny, []domain.NewEvent{{Type: "T", SchemaVersion: 1, Payload: []byte(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case pos := <-got:
		if pos != res.LastPosition || pos <= first {
			t.Fatalf("delivered position %d, want %d", pos, res.LastPosition)
		}
	case <-ctx.Done():
		t.Fatal("subscriber not woken by NOTIFY")
	}
}
