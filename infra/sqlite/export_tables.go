package sqlite

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"

	"github.com/engram-memory/engram/domain"
)

// exportTable names a read-model table and the primary key that orders it.
type exportTable struct {
	name    string
	orderBy string
}

// tableModel is the plumbing every SQLite read model store shares: its
// checkpoint key, and its tables, which Reset empties and Export writes in
// the order given.
type tableModel struct {
	db     *DB
	name   string
	tables []exportTable
}

// Checkpoint implements domain.ReadModelStore.
func (m tableModel) Checkpoint(ctx context.Context) (uint64, error) {
	return m.db.Checkpoint(ctx, m.name)
}

// CheckpointKey implements domain.CheckpointKeyed.
func (m tableModel) CheckpointKey() (domain.CheckpointTable, string) { return m.db, m.name }

// Reset implements domain.ReadModelStore.
func (m tableModel) Reset(ctx context.Context) error {
	return m.db.ResetProjection(ctx, m.name, tableNames(m.tables)...)
}

func tableNames(tables []exportTable) []string {
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = t.name
	}
	return names
}

// Export writes the read model as JSON lines (see exportTables); the replay
// tests compare it byte for byte.
func (m tableModel) Export(ctx context.Context, w io.Writer) error {
	return exportTables(ctx, m.db.read, w, m.tables)
}

// exportTables writes each table as JSON lines {"table":…,"row":{…}}, rows
// in primary-key order and columns in name order (encoding/json sorts map
// keys), so equal states give equal bytes. Read models use it for their
// Export, which the replay test compares.
func exportTables(ctx context.Context, db *sql.DB, w io.Writer, tables []exportTable) error {
	// One read transaction: every table from the same snapshot.
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("sqlite: export: %w", err)
	}
	defer tx.Rollback()
	bw := bufio.NewWriter(w)
	for _, t := range tables {
		if err := exportTableRows(ctx, tx, bw, t); err != nil {
			return err
		}
	}
	return bw.Flush()
}

func exportTableRows(ctx context.Context, tx *sql.Tx, w *bufio.Writer, t exportTable) error {
	rows, err := tx.QueryContext(ctx, `SELECT * FROM `+t.name+` ORDER BY `+t.orderBy)
	if err != nil {
		return fmt.Errorf("sqlite: export %s: %w", t.name, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return fmt.Errorf("sqlite: export %s: %w", t.name, err)
	}
	values := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range values {
		ptrs[i] = &values[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return fmt.Errorf("sqlite: export %s: %w", t.name, err)
		}
		row := make(map[string]any, len(cols))
		for i, c := range cols {
			if b, ok := values[i].([]byte); ok {
				values[i] = string(b)
			}
			row[c] = values[i]
		}
		line, err := json.Marshal(struct {
			Table string         `json:"table"`
			Row   map[string]any `json:"row"`
		}{t.name, row})
		if err != nil {
			return fmt.Errorf("sqlite: export %s: %w", t.name, err)
		}
		w.Write(line)
		w.WriteByte('\n')
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlite: export %s: %w", t.name, err)
	}
	return nil
}

// UnitOfWork implements domain.UnitOfWorkStore: every store of one
// database joins the same unit.
func (m tableModel) UnitOfWork() domain.UnitOfWork { return m.db }
