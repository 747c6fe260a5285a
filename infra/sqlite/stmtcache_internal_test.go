package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// Writes of a shape the writer has run before prepare nothing: the log's
// appends (either durability), projection batches and units of work
// run the statements the writer keeps prepared, not parse them again in
// every transaction.
func TestRepeatedWritesPrepareNothingNew(t *testing.T) {
	ctx := context.Background()
	event := func(i int) domain.NewEvent {
		return domain.NewEvent{Type: "T", SchemaVersion: 1, Payload: []byte(`{}`), Claims: []string{fmt.Sprint("key-", i)}}
	}
	applyBatchOf := func(ctx context.Context, db *DB, i int) error {
		events := []domain.Event{{Position: uint64(i + 1), Type: "T"}}
		return applyBatch(ctx, db, "test", events, func(b *batchTx) *batchTx { return b },
			func(_ context.Context, b *batchTx, e domain.Event) error {
				return b.run(`INSERT INTO streams (stream, version) VALUES (?, ?) ON CONFLICT (stream) DO UPDATE SET version = excluded.version`, "s", e.Position)
			}, nil)
	}
	tests := []struct {
		name       string
		durability Durability
		write      func(db *DB, store *EventStore, i int) error
	}{
		{"an append to the log, durable", Durable, func(_ *DB, store *EventStore, i int) error {
			_, err := store.Append(ctx, "s", domain.ExpectAny, []domain.NewEvent{event(i)})
			return err
		}},
		{"an append to the log, relaxed", Relaxed, func(_ *DB, store *EventStore, i int) error {
			_, err := store.Append(ctx, "s", domain.ExpectAny, []domain.NewEvent{event(i)})
			return err
		}},
		{"a projection's batch and checkpoint", Durable, func(db *DB, _ *EventStore, i int) error {
			return applyBatchOf(ctx, db, i)
		}},
		{"a batch in a unit of work", Durable, func(db *DB, _ *EventStore, i int) error {
			return db.InUnitOfWork(ctx, func(ctx context.Context) error { return applyBatchOf(ctx, db, i) })
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, err := Open(ctx, t.TempDir(), Options{Durability: tt.durability})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			store := NewEventStore(db, time.Hour)
			if err := tt.write(db, store, 0); err != nil {
				t.Fatal(err)
			}
			first := db.writer.prepares.Load()
			for i := 1; i <= 5; i++ {
				if err := tt.write(db, store, i); err != nil {
					t.Fatal(err)
				}
			}
			if first == 0 {
				t.Fatal("the first write prepared nothing: the count does not see the write side")
			}
			if more := db.writer.prepares.Load() - first; more != 0 {
				t.Fatalf("5 more writes of the same shape prepared %d statements after the first write's %d; want none", more, first)
			}
		})
	}
}

// A kept statement is not stale after a schema change: SQLite prepares it
// again against the new schema.
func TestKeptStatementsFollowSchemaChanges(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const insert = `INSERT INTO kept (a) VALUES (?)`
	write := func(ddl string, a int) {
		t.Helper()
		err := db.WriteTx(ctx, func(tx *sql.Tx) error {
			if ddl != "" {
				if _, err := tx.ExecContext(ctx, ddl); err != nil {
					return err
				}
			}
			return db.newBatch(ctx, tx).run(insert, a)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	write(`CREATE TABLE kept (a INTEGER)`, 1)
	write("", 2) // the insert is kept prepared now
	write(`DROP TABLE kept; CREATE TABLE kept (b INTEGER DEFAULT 7, a INTEGER)`, 3)
	var b, a int
	if err := db.Reader().QueryRowContext(ctx, `SELECT b, a FROM kept`).Scan(&b, &a); err != nil {
		t.Fatal(err)
	}
	if b != 7 || a != 3 {
		t.Fatalf("row after the table changed: b=%d a=%d, want 7 and 3", b, a)
	}
}

// The writer keeps at most its bound of statements; a text past it is
// prepared in each transaction, and every kept statement closes with the
// database.
func TestWriterStatementsAreBounded(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.writer.max = 2
	texts := []string{`SELECT 1`, `SELECT 2`, `SELECT 3`}
	for range 3 {
		err := db.WriteTx(ctx, func(tx *sql.Tx) error {
			b := db.newBatch(ctx, tx)
			for _, q := range texts {
				if _, err := b.exists(q); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if kept := len(db.writer.stmts); kept != 2 {
		t.Fatalf("the writer keeps %d statements, want its bound of 2", kept)
	}
	// First transaction: 3 on the transaction, 2 kept; then the third text
	// once in each of the two others.
	if n := db.writer.prepares.Load(); n != 3+2+2 {
		t.Fatalf("%d prepares, want 7", n)
	}
	if err := db.writer.close(); err != nil {
		t.Fatal(err)
	}
	if kept := len(db.writer.stmts); kept != 0 {
		t.Fatalf("%d statements still kept after close", kept)
	}
}

// The memory reads of every request (a memory by id, a page of the list,
// a page of a re-embedding) run statements the readers keep prepared: a
// second read of the same shape prepares nothing.
func TestMemoryReadsRunKeptStatements(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m := NewMemories(db)
	processed := true
	tests := []struct {
		name string
		read func(i int) error
	}{
		{"a memory by id", func(i int) error {
			_, _, err := m.Memory(ctx, "u", fmt.Sprint("m-", i))
			return err
		}},
		{"a page of an agent's list", func(i int) error {
			_, err := m.ListMemories(ctx, memory.ListQuery{UserID: "u", AgentID: fmt.Sprint("a-", i), Now: time.Now()})
			return err
		}},
		{"a page of the list by type and processing", func(i int) error {
			_, err := m.ListMemories(ctx, memory.ListQuery{UserID: fmt.Sprint("u-", i), Types: []memory.Type{memory.Belief, memory.Episode}, Processed: &processed, IncludeForgotten: true, IncludeWeak: true})
			return err
		}},
		{"a page of a re-embedding", func(i int) error {
			_, err := m.MemoryIDsAfter(ctx, "u", "a", nil, fmt.Sprint("m-", i), 10)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := db.hot.prepares.Load()
			if err := tt.read(0); err != nil {
				t.Fatal(err)
			}
			first := db.hot.prepares.Load() - before
			for i := 1; i <= 3; i++ {
				if err := tt.read(i); err != nil {
					t.Fatal(err)
				}
			}
			if first == 0 {
				t.Fatal("the first read prepared nothing: it does not run a kept statement")
			}
			if more := db.hot.prepares.Load() - before - first; more != 0 {
				t.Fatalf("3 more reads of the same shape prepared %d statements; want none", more)
			}
		})
	}
}

// The readers keep at most their bound of statements; a text past it is
// run unprepared, with the same answer, and every kept statement closes
// with the cache. (The cache needs no schema: an in-memory database.)
func TestReadStatementsAreBounded(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	hot := newStmtCache(db, 2)
	for range 3 {
		for want := 1; want <= 3; want++ {
			rows, err := hot.query(ctx, fmt.Sprintf(`SELECT %d`, want))
			if err != nil {
				t.Fatal(err)
			}
			var got int
			for rows.Next() {
				if err := rows.Scan(&got); err != nil {
					t.Fatal(err)
				}
			}
			if err := errors.Join(rows.Err(), rows.Close()); err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("SELECT %d gave %d", want, got)
			}
		}
	}
	if kept, n := hot.kept, hot.prepares.Load(); kept != 2 || n != 2 {
		t.Fatalf("the readers keep %d statements after %d prepares, want their bound of 2 after 2", kept, n)
	}
	if err := hot.close(); err != nil {
		t.Fatal(err)
	}
	if hot.kept != 0 {
		t.Fatalf("%d statements still kept after close", hot.kept)
	}
}
